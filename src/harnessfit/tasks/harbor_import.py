"""``harnessfit tasks import harbor DIR --out DIR2``: Harbor task folders as the project's own task folders
(``eval/task.py``), so the synthesis and RL stages can use them, where they fit.

A Harbor task fits when it runs on the host with nothing of its own to install: its Dockerfile is one the host
stands in for (``eval/harbor.py``) with no ``pip install`` and no folder outside the working folder, the agent
works in the folder the files are copied to, it has ``solution/solve.sh``, and its ``test.sh`` installs nothing
and fetches nothing at verify time (the project's checker runs offline on the host's Python). The conversion:

* ``workspace/``: the working folder as the Dockerfile's ``COPY`` lines seed it;
* ``checker/``: ``tests/`` as ``hf_tests/`` and ``hf_check.py``, which runs ``bash hf_tests/test.sh`` under
  Harbor's reward rules (a fresh ``hf_logs/``; ``reward.json`` before ``reward.txt``; its ``"reward"`` or only
  entry; finite numbers; passed only at 1.0), with ``[verifier].env`` and pytest's conftest search stopped at
  ``hf_tests`` (so a ``conftest.py`` the agent left in the workspace is not loaded);
* absolute paths rewritten to the workspace: ``/tests`` → ``hf_tests``, ``/logs/verifier`` → ``hf_logs``, the
  working folder → ``.`` (in the instruction, ``solve.sh`` and every text file of ``tests/``);
* ``reference``: the rewritten ``solve.sh`` as one bash call, then a final answer; ``expected_change``: each file
  the reference creates. Harbor tasks name no validation command (empty: never counted as used).

Every converted task is checked before it is written, in the eval sandbox: the reference run on a copy of the
workspace must make the checker pass, and the untouched workspace must make it fail. Any task that does not fit
is listed with a one-line reason and not written.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import tempfile
from pathlib import Path

import yaml

from harnessfit.errors import UserError
from harnessfit.eval.caps import Caps
from harnessfit.eval.episode_runner import checker_env, run_contained
from harnessfit.eval.harbor import HarborTask, load_harbor_suite
from harnessfit.eval.sandbox import SANDBOX_HOME, SandboxSpec, sandbox_path, sandbox_status
from harnessfit.eval.wheels import pip_requirements

__all__ = ["import_harbor", "fit_problem"]

_NETWORK = re.compile(r"\b(curl|wget|uvx?|git\s+clone|apt-get|npm\s+install)\b")
_CHECK = '''"""Harbor's verifier on this workspace (written by `harnessfit tasks import harbor`)."""
import json, math, os, shutil, subprocess, sys
ENV = {env!r}
shutil.rmtree("hf_logs", ignore_errors=True)
os.mkdir("hf_logs")
env = {{**os.environ, **ENV, "PYTEST_ADDOPTS": "--confcutdir=hf_tests -p no:cacheprovider"}}
try:
    code = subprocess.run(["bash", "hf_tests/test.sh"], env=env, timeout={timeout!r}).returncode
except subprocess.TimeoutExpired:
    sys.exit("test.sh timed out")
reward = None
if os.path.isfile("hf_logs/reward.json") and not os.path.islink("hf_logs/reward.json"):
    data = json.load(open("hf_logs/reward.json"))
    reward = data.get("reward", next(iter(data.values())) if len(data) == 1 else None)
elif os.path.isfile("hf_logs/reward.txt") and not os.path.islink("hf_logs/reward.txt"):
    reward = float(open("hf_logs/reward.txt").read())
ok = isinstance(reward, (int, float)) and not isinstance(reward, bool) and math.isfinite(reward) and reward >= 1
print(f"test.sh exit code {{code}}; reward {{reward}}")
sys.exit(0 if ok else 1)
'''


def fit_problem(task: HarborTask) -> str | None:
    """Why ``task`` cannot become a task of the project's format, or None."""
    if task.environment_issue:
        return task.environment_issue
    if task.setup.pip:
        return f"its image pip-installs {', '.join(task.setup.pip)} (the task format has no environment of its own)"
    if task.setup.extra_dirs(task.mount):
        return f"it writes outside its working folder ({', '.join(task.setup.extra_dirs(task.mount))})"
    if task.workdir != task.mount:
        return f"the agent works in {task.workdir}, below the copied folder {task.mount}"
    if not (task.solution_dir / "solve.sh").is_file():
        return "no solution/solve.sh (the task format needs a reference solution)"
    test_sh = (task.tests_dir / "test.sh").read_text(encoding="utf-8", errors="replace")
    reqs, problem = pip_requirements(test_sh)
    if reqs or problem:
        return f"its test.sh installs {', '.join(reqs) or 'packages'} at verify time (the checker runs offline)"
    if m := _NETWORK.search(test_sh):
        return f"its test.sh runs {m.group(1)} (fetching at verify time; the checker runs offline)"
    return None


def _rewrite(text: str, mount: str) -> str:
    start = r"(?<![\w./-])"
    text = re.sub(start + r"/logs/verifier(?![\w-])", "hf_logs", text)
    text = re.sub(start + r"/tests(?![\w-])", "hf_tests", text)
    text = re.sub(start + re.escape(mount.rstrip("/")) + r"/", "", text)
    return re.sub(start + re.escape(mount.rstrip("/")) + r"(?![\w./-])", ".", text)


def _copy_tests(task: HarborTask, dest: Path) -> None:
    for path in sorted(task.tests_dir.rglob("*")):
        target = dest / path.relative_to(task.tests_dir)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif path.is_file() and not path.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True)
            raw = path.read_bytes()
            try:
                target.write_text(_rewrite(raw.decode("utf-8"), task.mount), encoding="utf-8")
            except UnicodeDecodeError:
                target.write_bytes(raw)


def _sandboxed(command: str, ws: Path, scratch: Path, seconds: float) -> tuple[bool, str]:
    caps = dataclasses.replace(Caps(), cpu_seconds=2 * seconds)
    spec = SandboxSpec(read_write=[ws], caps=caps)
    code, killed, _, _ = run_contained(
        ["bash", "-c", command],
        spec=spec,
        cwd=ws,
        env=checker_env(SANDBOX_HOME, sandbox_path()),
        etc_dir=scratch / "etc",
        max_seconds=seconds,
        max_bytes=1 << 20,
        stdout_file=scratch / "out.txt",
        stderr_file=scratch / "err.txt",
    )
    out = (scratch / "out.txt").read_text(errors="replace") + (scratch / "err.txt").read_text(errors="replace")
    return code == 0 and killed is None, out


def _build(task: HarborTask, dest: Path, scratch: Path) -> str | None:
    """Write ``dest`` (the converted task) and check it in the sandbox; a problem, or None."""
    seed, solved = dest / "workspace", scratch / "solved"
    seed.mkdir(parents=True)
    task.seed_workspace(seed)
    _copy_tests(task, dest / "checker" / "hf_tests")
    timeout = task.config.verifier.timeout_sec
    env = {**task.env, **task.config.verifier.env}
    (dest / "checker" / "hf_check.py").write_text(_CHECK.format(env=env, timeout=timeout), encoding="utf-8")
    solve = _rewrite((task.solution_dir / "solve.sh").read_text(encoding="utf-8", errors="replace"), task.mount)
    shutil.copytree(seed, solved)
    ok, out = _sandboxed(solve, solved, scratch, task.limits.max_seconds)
    created = sorted(
        p.relative_to(solved).as_posix()
        for p in solved.rglob("*")
        if p.is_file() and not (seed / p.relative_to(solved)).exists()
    )
    if not ok:
        return f"its solution fails on the host: {out.strip()[-160:] or 'no output'}"
    if not created:
        return "its solution creates no new file (the task format expects files; a changed file it cannot say)"
    results = {}
    for name, ws in (("solved", solved), ("untouched", scratch / "untouched")):
        if name == "untouched":
            shutil.copytree(seed, ws)
        shutil.copytree(dest / "checker", ws, dirs_exist_ok=True)
        results[name] = _sandboxed("python3 -I hf_check.py", ws, scratch, timeout + 30)
    if not results["solved"][0]:
        return f"the converted checker fails after the solution: {results['solved'][1].strip()[-160:]}"
    if results["untouched"][0]:
        return "the converted checker passes on the untouched workspace"
    spec = {
        "kind": "create",
        "prompt": _rewrite(task.prompt, task.mount),
        "validation_command": "",
        "expected_change": [{"path": p, "exists": True} for p in created[:20]],
        "checker": {"command": "python3 -I hf_check.py", "timeout_s": timeout + 30},
        "limits": {"max_turns": task.limits.max_turns, "max_seconds": task.limits.max_seconds},
        "reference": [{"tool": "bash", "args": {"command": solve}}, {"final": "Ran the reference solution."}],
    }
    (dest / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return None


def import_harbor(source: Path, out: Path, *, force: bool = False) -> tuple[list[str], list[tuple[str, str]]]:
    """Convert the Harbor tasks of ``source`` into task folders under ``out``: (written ids, [(id, reason)])."""
    tasks = load_harbor_suite(source)
    if out.exists() and any(out.iterdir()) and not force:
        raise UserError(f"{out} is not empty (pass --force to replace it)")
    if sandbox_status() != "bwrap":
        raise UserError(f"importing checks each task in the sandbox, which cannot run here ({sandbox_status()})")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    written, skipped = [], []
    for task in tasks:
        problem = fit_problem(task)
        if problem is None:
            with tempfile.TemporaryDirectory(prefix="hf-harbor-import-") as tmp:
                problem = _build(task, out / task.id, Path(tmp))
        if problem is None:
            written.append(task.id)
        else:
            shutil.rmtree(out / task.id, ignore_errors=True)
            skipped.append((task.id, problem))
    return written, skipped
