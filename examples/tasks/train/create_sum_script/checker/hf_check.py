import subprocess
import sys

out = subprocess.run([sys.executable, "sum_to_ten.py"], capture_output=True, text=True, check=True).stdout
assert out == "55\n", out
print("checker passed")
