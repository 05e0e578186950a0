"""Codex command outputs → (output, exit code), and Pi's bash text for them when it can be rebuilt exactly.

The output shapes, as the ``openai/codex`` sources write them:

- JSON ``{"output": …, "metadata": {"exit_code": N, "duration_seconds": S}}``: ``shell`` / ``container.exec`` /
  ``local_shell`` in codex-rs (``format_exec_output_for_model_structured``) and the TypeScript CLI
  (``handle-exec-command.ts``, whose ``output`` is ``stdout || stderr``: stderr is lost whenever stdout is not empty);
- header lines, then ``Output:`` and the body: ``Exit code: N`` / ``Wall time: S seconds`` (the freeform shell
  format, ``format_exec_output_for_model_freeform``; ``shell_command``), ``Chunk ID`` / ``Wall time`` /
  ``Process exited with code N`` or ``Process running with session ID N`` / ``Original token count`` (unified exec,
  ``exec_command``). ``Total output lines: N`` and ``Warning: truncated output`` headers say Codex cut the output.
- ``failed in sandbox TYPE with execution error: sandbox denied exec error, exit code: N, stdout: …, stderr: …``
  (or ``execution error: sandbox error: sandbox denied …``): codex-rs's ``SandboxErr::Denied`` in its ``Display``
  form (``core/src/error.rs``; ``handle_sandbox_error`` in ``core/src/codex.rs``). Until codex-rs told a real
  denial from a failure, every non-zero exit under its sandbox was "denied" — its own comment names "a grep command
  that did not match anything" — so this is a command's result, with its exit code and both streams: the stream
  that is not empty is the output (``codex.sandbox_denied_output``). Both non-empty (their interleaving is
  unknown), a split the text leaves ambiguous (``, stderr: `` inside stdout), or a stream at the 10 KiB / 256-line
  cap those versions cut each stream at without a mark, is ``unmappable_result``.

Codex's cuts (``[... omitted N of M lines ...]``, ``[... output truncated to fit N bytes ...]``, ``…N tokens
truncated…``, ``…N chars truncated…``, a leading ``Total output lines:`` / ``Warning: truncated output``, the
TypeScript CLI's ``[Output truncated: too many lines or bytes]``) leave the full output unknown, a timeout
(``command timed out after N milliseconds``) is worded by Pi otherwise, a still-running process has no Pi
equivalent, and an output made of several content items is no single text: each is ``unmappable_result``, with the
data that says so in its detail.
"""

from __future__ import annotations

import re

import orjson

from harnessfit.core.rejection import Reason, excerpt
from harnessfit.core.trajectory import Step
from harnessfit.formats.base import Failure, result_failure
from harnessfit.harness.card import HarnessCard
from harnessfit.harness.pi_results import pi_bash_result

__all__ = ["CODEX_TRUNCATION", "bash_result", "parse_output", "refused", "sandbox_denied"]

CODEX_TRUNCATION = re.compile(
    r"\[\.\.\. omitted \d+ of \d+ lines \.\.\.\]|\[\.\.\. output truncated to fit \d+ bytes \.\.\.\]"
    r"|…\d+ (?:tokens|chars) truncated…|tokens truncated|\A(?:Total output lines: \d+(?=\n)|Warning: truncated output)"
    r"|\[Output truncated: too many lines or bytes\]|\[omitted \d+ text items \.\.\.\]"
)
_HEADER = re.compile(
    r"Chunk ID: \S+|Wall time: [0-9.]+ seconds|Original token count: \d+"
    r"|(?:Process exited with code|Exit code:) (?P<code>-?\d+)|Process running with session ID (?P<session>\S+)"
    r"|(?P<cut>Total output lines: \d+|Warning: truncated output \(original token count: \d+\))"
)
_DENIED = re.compile(
    r"\A(?:failed in sandbox \w+ with execution error|execution error: sandbox error): sandbox denied exec error, "
    r"exit code: (?P<code>-?\d+), stdout: (?P<streams>.*)\Z",
    re.S,
)
_STREAM_CAP_BYTES, _STREAM_CAP_LINES = 10 * 1024, 256  # codex-rs exec.rs MAX_STREAM_OUTPUT(_LINES), no mark
_TIMEOUT = re.compile(r"\Acommand timed out after \d+ milliseconds")
_REFUSALS = ("exec command rejected by user", "patch rejected by user")
"""What codex-rs returns for a command or patch the user declined in its approval prompt."""


def _json_output(text: str, tool: str) -> tuple[str, int | None] | Failure | None:
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("output"), str):
        return None
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    code = meta.get("exit_code")
    if not isinstance(code, int) or isinstance(code, bool):
        keys = ", ".join(sorted(meta)) or "none"
        return result_failure(
            tool,
            f"no exit_code in its metadata (keys: {keys}; output {excerpt(obj['output'], 40)!r}),"
            " and the exit status decides Pi's text",
            "re-record the rollout with output metadata",
        )
    return obj["output"], code


def _headed_output(text: str, tool: str) -> tuple[str, int | None] | Failure | None:
    header, sep, body = text.partition("\nOutput:\n")
    if not sep and text.endswith("\nOutput:"):
        header, sep, body = text[: -len("\nOutput:")], "\nOutput:", ""
    if not sep:
        return None
    code = None
    for line in header.split("\n"):
        m = _HEADER.fullmatch(line)
        if m is None:
            return None
        if m.group("session"):
            return result_failure(
                tool,
                f"the process was still running when Codex returned ({line!r}: an interactive session)",
                "Pi's bash waits for the command to end: re-run it non-interactively",
            )
        if m.group("cut"):
            return result_failure(
                tool,
                f"Codex truncated the output ({line!r}); the full output is unknown",
                "the full output is needed to render Pi's result: re-run the command",
            )
        if m.group("code"):
            code = int(m.group("code"))
    if code is None:
        return None
    return body, code


def sandbox_denied(text: str) -> bool:
    """The output is codex-rs's ``sandbox denied exec error`` text (a command's exit code and streams)."""
    return _DENIED.match(text) is not None


def _denied_output(text: str, tool: str) -> tuple[str, int | None] | Failure | None:
    m = _DENIED.match(text)
    if m is None:
        return None
    code, streams = int(m.group("code")), m.group("streams").split(", stderr: ")
    if len(streams) != 2:
        return result_failure(
            tool,
            f"Codex's sandbox-denied text (exit code {code}) is ambiguous: ', stderr: ' "
            "occurs in its output, so stdout and stderr cannot be told apart",
            "keep the session up to this call, or re-run it under Pi",
        )
    for name, stream in zip(("stdout", "stderr"), streams, strict=True):
        if len(stream.encode()) >= _STREAM_CAP_BYTES or stream.count("\n") >= _STREAM_CAP_LINES:
            return result_failure(
                tool,
                f"the {name} Codex reported (exit code {code}) is at its 10 KiB / 256-line "
                "cap, which cut it without a mark; the full output is unknown",
                "the full output is needed to render Pi's result: re-run the command",
            )
    out, err = streams
    if out and err:
        return result_failure(
            tool,
            f"Codex reported stdout ({excerpt(out, 30)!r}) and stderr ({excerpt(err, 30)!r}) "
            f"apart (exit code {code}); their interleaving in Pi's merged output is unknown",
            "re-run the command under Pi to record its merged output",
        )
    return out or err, code


def parse_output(text: str, tool: str) -> tuple[str, int | None] | Failure:
    """(output, exit code) from any of the shapes in the module docstring, or why there is none."""
    parsed = _json_output(text, tool) if text.lstrip().startswith("{") else None
    if parsed is None:
        parsed = _denied_output(text, tool)
    if parsed is None:
        parsed = _headed_output(text, tool)
    if parsed is None:
        return result_failure(
            tool,
            f"no exit status in the output ({excerpt(text, 60)!r}): an error of Codex's own that Pi has no words for",
            "keep the session up to this call, or re-run it under Pi",
        )
    return parsed


def refused(result: Step | None) -> Failure | None:
    """The user declined the command or patch in Codex's approval prompt (codex-rs words it one of ``_REFUSALS``; the
    TypeScript CLI returns ``{"output": "aborted", "metadata": {}}``): a refused call is no label, Pi has no
    approval step."""
    text = (result.text or "").strip() if result is not None else ""
    said = next((r for r in _REFUSALS if text.startswith(r)), None)
    if said is None and text.startswith("{"):
        try:
            obj = orjson.loads(text)
        except orjson.JSONDecodeError:
            obj = None
        if isinstance(obj, dict) and obj.get("output") == "aborted" and obj.get("metadata") == {}:
            said = '{"output": "aborted", "metadata": {}}'
    if said is None:
        return None
    return Failure(
        Reason.user_rejected_call,
        f"the user refused the call ({said!r})",
        "Pi has no approval step: the calls before the refused one are kept",
    )


def bash_result(result: Step | None, card: HarnessCard, tool: str) -> str | Failure | None:
    """Pi's bash text for a Codex command's result step (``None``: no result step), or why it cannot be rebuilt."""
    if result is None:
        return None
    parts = result.meta.get("output_parts")
    if parts is not None:
        return result_failure(
            tool,
            f"the output is {parts} content item(s) with {result.images} image(s), not one text",
            "Pi's bash returns one text: keep the session up to this call",
        )
    parsed = parse_output(result.text or "", tool)
    if isinstance(parsed, Failure):
        return parsed
    output, code = parsed
    cut = CODEX_TRUNCATION.search(output)
    if cut:
        return result_failure(
            tool,
            f"Codex truncated the output ({cut.group(0)!r}); the full output is unknown",
            "the full output is needed to render Pi's result: re-run the command",
        )
    timeout = _TIMEOUT.match(output)
    if timeout:
        return result_failure(
            tool,
            f"Codex killed the command ({timeout.group(0)!r}, exit code {code}); Pi words a "
            "timeout otherwise and has no default one",
            "re-run the command without the timeout",
        )
    if output and result.meta.get("codex_output") == "stdout_or_stderr":
        return result_failure(
            tool,
            "the TypeScript Codex CLI recorded `stdout || stderr`, so the stderr of a command "
            f"with output ({excerpt(output, 40)!r}) is unknown; Pi's bash shows both",
            "re-run the command to record its full output",
        )
    return pi_bash_result(card, output, code, tool=tool)
