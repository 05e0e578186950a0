import subprocess
import sys

proc = subprocess.run([sys.executable, "sum_to_ten.py"], capture_output=True, text=True)
if proc.returncode != 0 or proc.stdout.strip() != "55":
    raise SystemExit(f"FAIL: python3 sum_to_ten.py printed {proc.stdout!r} (exit {proc.returncode}), expected 55")
print("OK: sum_to_ten.py prints 55")
