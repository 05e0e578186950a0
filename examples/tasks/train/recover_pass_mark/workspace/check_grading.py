from grading import passed

for score, want in [(49, False), (50, True), (80, True)]:
    got = passed(score)
    if got != want:
        raise SystemExit(f"FAIL: passed({score}) returned {got}, expected {want} (a score equal to PASS_MARK passes)")
print("OK: pass mark is inclusive")
