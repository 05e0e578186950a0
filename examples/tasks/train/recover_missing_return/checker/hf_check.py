from slug import slugify

assert slugify("  Hello World ") == "hello-world"
assert slugify("Release Notes  2024") == "release-notes-2024"
assert slugify("single") == "single"
assert slugify("") == ""
print("checker passed")
