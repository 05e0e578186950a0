import sys

sys.path.append(".")  # the code under test, searched after the standard library (run as python3 -I)

from wordcount import count_words

assert count_words("the quick  brown fox") == 4
assert count_words("") == 0
assert count_words("one\ntwo\tthree") == 3
print("checker passed")
