from wordcount import count_words

got = count_words("the quick  brown fox")
if got != 4:
    raise SystemExit(f"FAIL: count_words returned {got}, expected 4")
print("OK: count_words works")
