from slug import slugify

got = slugify("  Hello World ")
if got != "hello-world":
    raise SystemExit(f"FAIL: slugify('  Hello World ') returned {got!r}, expected 'hello-world'")
print("OK: slugify works")
