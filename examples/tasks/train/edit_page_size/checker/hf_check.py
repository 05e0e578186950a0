import sys

sys.path.append(".")  # the code under test, searched after the standard library (run as python3 -I)

from pages import paginate

assert [len(p) for p in paginate(list(range(60)))] == [25, 25, 10]
assert paginate(list(range(5)), page_size=2) == [[0, 1], [2, 3], [4]]
assert paginate(list(range(7)), 3) == [[0, 1, 2], [3, 4, 5], [6]]
assert paginate([]) == []
print("checker passed")
