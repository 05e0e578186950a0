import subprocess
import sys


def shout(*args):
    return subprocess.run([sys.executable, "shout.py", *args], capture_output=True, text=True, check=True).stdout


assert shout("hi", "there") == "HI THERE\n"
assert shout("one") == "ONE\n"
assert shout("a", "b", "c") == "A B C\n"
print("checker passed")
