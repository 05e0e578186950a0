"""Checks for /app/wordfreq.py: the sample file and texts the agent never saw (ties, case, punctuation)."""

import subprocess
import sys
import tempfile

CASES = {
    "/app/sample.txt": "the 5\ncat 3\nand 2\n",
    None: "a 3\nb 2\nc 2\n",
}
HIDDEN = "b a B c, c! a -- A\n"


def run(path):
    proc = subprocess.run([sys.executable, "/app/wordfreq.py", path], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


failures = 0
for path, want in CASES.items():
    if path is None:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
            fh.write(HIDDEN)
        path = fh.name
    got = run(path)
    if got != want:
        failures += 1
        print(f"FAIL {path}: want {want!r}, got {got!r}")
    else:
        print(f"ok {path}")
sys.exit(1 if failures else 0)
