"""A tiny agent CLI for tests (``tests/eval/test_scripted_harness.py``): not Pi, its own wire and session format.

    python3 agent.py BASE_URL MODEL SESSION_DIR MAX_TURNS PROMPT

Sends the prompt to an OpenAI-compatible endpoint (no streaming), runs the tool calls it gets back (``bash``,
``read``, ``write``), sends the results, and stops at a reply without calls or after MAX_TURNS model turns (then it
says so on stderr). Every record — the prompt, each reply, each tool result — is one JSON line on stdout and in
SESSION_DIR/session.log (``{"k": "user"|"model"|"tool", ...}``).
"""

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write",
            "description": "Write a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
        },
    },
]


def run_tool(name, args):
    """(output, is_error) of one call."""
    try:
        if name == "bash":
            proc = subprocess.run(["bash", "-c", args["command"]], capture_output=True, text=True, timeout=60)
            out = (proc.stdout + proc.stderr).strip() or "(no output)"
            return (out if proc.returncode == 0 else f"{out}\nexit code {proc.returncode}"), proc.returncode != 0
        if name == "read":
            return Path(args["path"]).read_text(), False
        if name == "write":
            Path(args["path"]).write_text(args["content"])
            return f"wrote {len(args['content'])} characters to {args['path']}", False
        return f"no tool {name}", True
    except Exception as exc:  # noqa: BLE001 - a failing tool is the model's problem: it gets the error text
        return f"{type(exc).__name__}: {exc}", True


def main(base_url, model, session_dir, max_turns, prompt):
    log = open(Path(session_dir) / "session.log", "a", encoding="utf-8")  # noqa: SIM115 - open for the whole run

    def record(entry):
        line = json.dumps(entry)
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    messages = [{"role": "user", "content": prompt}]
    record({"k": "user", "text": prompt})
    for _turn in range(int(max_turns)):
        body = json.dumps({"model": model, "messages": messages, "tools": TOOLS}).encode()
        request = urllib.request.Request(
            base_url.rstrip("/") + "/chat/completions", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
        reply = answer["choices"][0]["message"]
        calls = reply.get("tool_calls") or []
        record(
            {
                "k": "model",
                "text": reply.get("content") or "",
                "usage": answer.get("usage") or {},
                "calls": [
                    {"id": c["id"], "tool": c["function"]["name"], "args": c["function"]["arguments"]} for c in calls
                ],
            }
        )
        messages.append({"role": "assistant", "content": reply.get("content"), "tool_calls": calls or None})
        if not calls:
            return 0
        for call in calls:
            try:
                args = json.loads(call["function"]["arguments"])
                out, error = (
                    run_tool(call["function"]["name"], args)
                    if isinstance(args, dict)
                    else ("arguments are not an object", True)
                )
            except ValueError:
                out, error = "arguments are not JSON", True
            record({"k": "tool", "id": call["id"], "tool": call["function"]["name"], "out": out, "error": error})
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": out})
    print("harnessfit: turn cap reached", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:6]))
