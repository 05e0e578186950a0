import subprocess
import sys

out = subprocess.run([sys.executable, "hello.py"], capture_output=True, text=True, check=True).stdout
assert out == "hello world\n", out
print("checker passed")
