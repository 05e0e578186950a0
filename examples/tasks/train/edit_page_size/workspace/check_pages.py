from pages import paginate

pages = paginate(list(range(60)))
sizes = [len(page) for page in pages]
if sizes != [25, 25, 10]:
    raise SystemExit(f"FAIL: paginate of 60 items gave page sizes {sizes}, expected [25, 25, 10]")
print("OK: default page size is 25")
