"""The sandbox spec on its own (no Pi): what a command inside can see, write and reach."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessfit.eval.sandbox import sandbox_status


def test_sandbox_spec_shows_only_what_it_binds(tmp_path):
    """Fast (no Pi): a command in a bare SandboxSpec sees no host secret, writes only its bound folder, reaches no
    host loopback service, and leaves no process behind."""
    import socket

    from harnessfit.eval.episode_runner import run_contained
    from harnessfit.eval.sandbox import SandboxSpec

    if sandbox_status() != "bwrap":
        pytest.skip(f"bubblewrap cannot run here: {sandbox_status()}")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    ws = tmp_path / "ws"
    ws.mkdir()
    probe = (
        f"test -e /etc/shadow && echo shadow; test -e {Path.home() / '.bashrc'} && echo home; "
        f"test -e {Path(__file__).resolve()} && echo project; echo ok > inside.txt; "
        "touch /usr/x 2>/dev/null && echo usr-writable; mkdir /logs 2>/dev/null && echo root-writable; "
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)\" 2>/dev/null "
        "&& echo tcp; echo HOME=$HOME; id -u"
    )
    try:
        code, killed, _, _ = run_contained(
            ["bash", "-c", probe],
            spec=SandboxSpec(read_write=[ws]),
            cwd=ws,
            env={"PATH": "/usr/bin:/bin", "HOME": "/home/agent"},
            etc_dir=tmp_path / "etc",
            max_seconds=60,
            max_bytes=1 << 20,
            stdout_file=tmp_path / "out.txt",
            stderr_file=tmp_path / "err.txt",
        )
    finally:
        listener.close()
    out = (tmp_path / "out.txt").read_text()
    assert code == 0 and killed is None, (tmp_path / "err.txt").read_text()
    assert out.splitlines() == ["HOME=/home/agent", "0"], out
    assert (ws / "inside.txt").read_text() == "ok\n"


def test_every_tmpfs_is_sized_and_the_rlimits_are_set(tmp_path):
    """Fast (no Pi): /tmp, HOME and /dev/shm are tmpfs of the caps' sizes (a write past one ends with ENOSPC),
    /dev itself is read-only, and the file size, process and CPU limits are in force inside."""
    from harnessfit.eval.caps import Caps
    from harnessfit.eval.episode_runner import run_contained
    from harnessfit.eval.sandbox import SandboxSpec

    if sandbox_status() != "bwrap":
        pytest.skip(f"bubblewrap cannot run here: {sandbox_status()}")
    mib = 1 << 20
    caps = Caps(
        tmp_bytes=8 * mib, home_bytes=4 * mib, shm_bytes=2 * mib, file_bytes=32 * mib, processes=100, cpu_seconds=30
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    probe = (
        "for d in /tmp $HOME /dev/shm; do dd if=/dev/zero of=$d/fill bs=1M count=64 2>/dev/null; "
        "echo $d $(stat -c %s $d/fill); done; echo x > /dev/planted 2>/dev/null || echo dev-read-only; "
        "echo f=$(ulimit -f) u=$(ulimit -u) t=$(ulimit -t)"
    )
    code, killed, _, _ = run_contained(
        ["bash", "-c", probe],
        spec=SandboxSpec(read_write=[ws], caps=caps),
        cwd=ws,
        env={"PATH": "/usr/bin:/bin", "HOME": "/home/agent"},
        etc_dir=tmp_path / "etc",
        max_seconds=60,
        max_bytes=1 << 20,
        stdout_file=tmp_path / "out.txt",
        stderr_file=tmp_path / "err.txt",
    )
    out = (tmp_path / "out.txt").read_text().splitlines()
    assert code == 0 and killed is None, (tmp_path / "err.txt").read_text()
    assert out == [
        "/tmp 8388608",
        "/home/agent 4194304",
        "/dev/shm 2097152",
        "dev-read-only",
        f"f={32 * mib // 1024} u=100 t=30",
    ], out  # bash counts KiB


def test_copy_out_follows_nothing_and_keeps_to_its_budget(tmp_path):
    """Fast: what the runner copies out of a captured folder — folders, files, links as links; a FIFO is left
    out, and so is content past the budget (a sparse or hard-linked file can claim more than the tmpfs held)."""
    import os

    from harnessfit.eval.caps import copy_out

    src = tmp_path / "src"
    (src / "a" / "b").mkdir(parents=True)
    (src / "a" / "b" / "code.py").write_text("print(1)\n")
    (src / "link").symlink_to("/etc/passwd")
    os.mkfifo(src / "pipe")
    with open(src / "sparse", "wb") as fh:
        fh.truncate(1 << 30)
    fd = os.open(src, os.O_RDONLY | os.O_DIRECTORY)
    try:
        left = copy_out(fd, tmp_path / "dest", budget=1 << 20)
    finally:
        os.close(fd)
    dest = tmp_path / "dest"
    assert (dest / "a" / "b" / "code.py").read_text() == "print(1)\n"
    assert os.readlink(dest / "link") == "/etc/passwd"
    assert not (dest / "pipe").exists() and not (dest / "sparse").exists()
    assert sorted(x.split(" ")[0] for x in left) == ["pipe", "sparse"], left


def test_sandbox_programs_are_package_files_that_ship():
    """The forwarder, launcher and supervisor are real files in eval/sandbox_programs/ (so they can be linted), each
    matched by a package-data glob of pyproject.toml (so an installed wheel has them), and what the sandbox runs."""
    import tomllib

    from harnessfit.eval import sandbox

    root = Path(__file__).resolve().parents[2]
    package = root / "src" / "harnessfit"
    globs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["harnessfit"]
    shipped = {p for pattern in globs for p in package.glob(pattern)}
    programs = sorted(sandbox.PROGRAMS.iterdir())
    assert {p.name for p in programs} >= {"forward_outside.cjs", "launch.mjs", "supervisor.py"}
    assert [p for p in programs if p.is_file() and p not in shipped] == []
    supervised = sandbox.supervised(["true"])
    assert supervised[-1] == "true" and "PR_SET_CHILD_SUBREAPER" in supervised[-2]
    compile(supervised[-2], "supervisor.py", "exec")  # the program the supervisor runs is valid Python
