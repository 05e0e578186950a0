"""Harbor tasks through both backends: the oracle (solution/solve.sh) and the untouched workspace (``scripted:nop``).

    PYTHONPATH=src python bench/harbor_oracle.py --out runs/harbor-oracle TASK_DIR [TASK_DIR ...]

Each TASK_DIR is a Harbor task folder (a mirror of a public task; none is copied into this repository). For every
task, backend (``host``: bubblewrap; ``podman``: the container backend) and model it prints one line — status,
reward, backend, image — and writes ``summary.json`` beside the run folders. The goal: the oracle scores 1.0 and
the untouched workspace 0.0 on both backends; a task the host cannot stand in for is ``needs_container`` there,
with the reason.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path


def main() -> int:
    from harnessfit.eval.run import run_eval

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path("runs/harbor-oracle"))
    ap.add_argument("--env", action="append", default=None, help="host and/or podman (default: both)")
    args = ap.parse_args()
    rows = []
    for task in args.tasks:
        for env in args.env or ["host", "podman"]:
            for model in ("scripted:oracle", "scripted:nop"):
                with tempfile.TemporaryDirectory(prefix="hf-harbor-suite-") as tmp:
                    suite = Path(tmp) / task.name  # one task folder as the suite
                    shutil.copytree(task, suite)
                    out = args.out / f"{task.name}-{env}-{model.split(':')[1]}"
                    results = run_eval(model, f"harbor:{suite}", out, env=env, progress=False)
                for ep in results.episodes:
                    f = ep.facts
                    row = {"task": task.name, "env": env, "model": model, "status": f.status, "reward": f.reward,
                           "backend": f.backend, "image": f.image, "error": f.error,
                           "verifier_problem": f.verifier.problem if f.verifier else None,
                           "pi_seconds": f.wall_seconds}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
