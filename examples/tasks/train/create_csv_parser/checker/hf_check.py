import sys

sys.path.append(".")  # the code under test, searched after the standard library (run as python3 -I)

from csvline import parse_line

assert parse_line("name, age ,city") == ["name", "age", "city"]
assert parse_line("solo") == ["solo"]
assert parse_line("1,,3") == ["1", "", "3"]
assert parse_line(" a ,b\n") == ["a", "b"]
print("checker passed")
