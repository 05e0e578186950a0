import subprocess
import sys

proc = subprocess.run([sys.executable, "shout.py", "hi", "there"], capture_output=True, text=True)
if proc.returncode != 0 or proc.stdout != "HI THERE\n":
    raise SystemExit(f"FAIL: python3 shout.py hi there printed {proc.stdout!r} (exit {proc.returncode})")
print("OK: shout.py shouts")
