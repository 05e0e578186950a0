import sys

sys.path.append(".")  # the code under test, searched after the standard library (run as python3 -I)

from fizzbuzz import fizzbuzz

assert fizzbuzz(15)[-1] == "FizzBuzz"
assert fizzbuzz(3) == ["1", "2", "Fizz"]
assert fizzbuzz(0) == []
print("checker passed")
