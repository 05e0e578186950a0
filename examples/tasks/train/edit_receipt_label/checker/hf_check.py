import subprocess
import sys

out = subprocess.run([sys.executable, "receipt.py"], capture_output=True, text=True, check=True).stdout
want = "coffee    3.50\nbagel     2.25\njuice     4.00\nTotal     9.75\n"
assert out == want, out
print("checker passed")
