# Run by the runner's own Python (``python -I -c``, see harnessfit/eval/sandbox.py ``supervised``) around an
# unsandboxed command: a child subreaper (prctl PR_SET_CHILD_SUBREAPER) inherits every process the command orphans
# (a ``setsid nohup`` child included, which leaves the process group) and kills them all when the command exits or
# when it gets SIGTERM. A program, not a module: never import it.
import ctypes
import os
import signal
import sys
import time

ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
cmd = sys.argv[1:]
main = os.fork()
if main == 0:
    try:
        os.execvp(cmd[0], cmd)
    except OSError as exc:
        os.write(2, f"cannot start {cmd[0]}: {exc}\n".encode())
    os._exit(127)


def descendants():
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append((int(name), fields[0]))
    found, todo = [], [os.getpid()]
    while todo:
        for pid, state in children.get(todo.pop(), []):
            found.append((pid, state))
            todo.append(pid)
    return found


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def sweep():
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        procs = descendants()
        if not procs:
            return
        for pid, state in procs:
            if state != b"Z":
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.01)
        reap()


def stop(signo, frame):
    sweep()
    os._exit(128 + signo)


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
_, status = os.waitpid(main, 0)
code = os.waitstatus_to_exitcode(status)
sweep()
sys.exit(code if code >= 0 else 128 - code)
