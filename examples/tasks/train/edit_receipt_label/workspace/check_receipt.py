import subprocess
import sys

proc = subprocess.run([sys.executable, "receipt.py"], capture_output=True, text=True)
lines = proc.stdout.splitlines()
if proc.returncode != 0 or not lines:
    raise SystemExit(f"FAIL: python3 receipt.py exited {proc.returncode}: {proc.stderr.strip()}")
last = lines[-1]
if not last.startswith("Total ") or not last.endswith("9.75"):
    raise SystemExit(f"FAIL: the last line is {last!r}; expected the label 'Total' and the amount 9.75")
print("OK: receipt total is labelled")
