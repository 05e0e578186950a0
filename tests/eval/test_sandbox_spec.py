"""The sandbox spec on its own (no Pi): what a command inside can see, write and reach."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessfit.eval.sandbox import sandbox_status


def test_sandbox_spec_shows_only_what_it_binds(tmp_path):
    """Fast (no Pi): a command in a bare SandboxSpec sees no host secret, writes only its bound folder, reaches no
    host loopback service, and leaves no process behind."""
    import socket

    from harnessfit.eval.runner import run_contained
    from harnessfit.eval.sandbox import SandboxSpec

    if sandbox_status() != "bwrap":
        pytest.skip(f"bubblewrap cannot run here: {sandbox_status()}")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    ws = tmp_path / "ws"
    ws.mkdir()
    probe = (f"test -e /etc/shadow && echo shadow; test -e {Path.home() / '.bashrc'} && echo home; "
             f"test -e {Path(__file__).resolve()} && echo project; echo ok > inside.txt; "
             "touch /usr/x 2>/dev/null && echo usr-writable; mkdir /logs 2>/dev/null && echo root-writable; "
             f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)\" 2>/dev/null "
             "&& echo tcp; echo HOME=$HOME; id -u")
    try:
        code, killed, _, _ = run_contained(
            ["bash", "-c", probe], spec=SandboxSpec(read_write=[ws]), cwd=ws, env={"PATH": "/usr/bin:/bin",
                                                                                 "HOME": "/home/agent"},
            etc_dir=tmp_path / "etc", max_seconds=60, max_bytes=1 << 20, stdout_file=tmp_path / "out.txt",
            stderr_file=tmp_path / "err.txt")
    finally:
        listener.close()
    out = (tmp_path / "out.txt").read_text()
    assert code == 0 and killed is None, (tmp_path / "err.txt").read_text()
    assert out.splitlines() == ["HOME=/home/agent", "0"], out
    assert (ws / "inside.txt").read_text() == "ok\n"
