import subprocess
import sys

proc = subprocess.run([sys.executable, "hello.py"], capture_output=True, text=True)
if proc.returncode != 0 or proc.stdout != "hello world\n":
    raise SystemExit(f"FAIL: python3 hello.py printed {proc.stdout!r} (exit {proc.returncode})")
print("OK: hello.py prints hello world")
