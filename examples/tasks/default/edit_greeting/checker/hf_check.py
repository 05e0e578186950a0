from greet import greet

assert greet("Ada") == "Hi, Ada!", greet("Ada")
assert greet("Bob") == "Hi, Bob!", greet("Bob")
print("checker passed")
