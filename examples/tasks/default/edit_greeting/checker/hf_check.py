import sys

sys.path.append(".")  # the code under test, searched after the standard library (run as python3 -I)

from greet import greet

assert greet("Ada") == "Hi, Ada!", greet("Ada")
assert greet("Bob") == "Hi, Bob!", greet("Bob")
print("checker passed")
