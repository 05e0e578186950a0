import random
import string

import orjson

from _helpers.conversations import make_conv
from harnessfit.dataset.probe import measure_false_positive_rate
from harnessfit.dataset.redact import Redactor, iter_texts


def _rs(rng, n, alpha=string.ascii_letters + string.digits):
    return "".join(rng.choice(alpha) for _ in range(n))


def planted_secrets(seed: int = 5) -> list[tuple[str, str]]:
    """(kind, text containing one secret) — generated at test time, never stored."""
    rng = random.Random(seed)
    up = string.ascii_uppercase + string.digits
    out = []
    for _ in range(3):
        out += [
            ("openai", "OPENAI_API_KEY=sk-proj-" + _rs(rng, 48)),
            ("anthropic", "key: sk-ant-api03-" + _rs(rng, 90)),
            ("github", "git push https://x-access-token:ghp_" + _rs(rng, 36) + "@github.com/a/b"),
            ("github_pat", "token github_pat_" + _rs(rng, 22) + "_" + _rs(rng, 59)),
            ("aws", "AKIA" + _rs(rng, 16, up)),
            ("aws_secret", 'aws_secret_access_key = "' + _rs(rng, 40) + '"'),
            ("slack", "SLACK=xoxb-" + _rs(rng, 11, string.digits) + "-" + _rs(rng, 24)),
            ("google", "maps key AIza" + _rs(rng, 35)),
            ("stripe", "stripe sk_live_" + _rs(rng, 24)),
            ("hf", "HF_TOKEN=hf_" + _rs(rng, 34)),
            ("jwt", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI" + _rs(rng, 12) + "In0." + _rs(rng, 43)),
            (
                "email",
                f"contact {_rs(rng, 6, string.ascii_lowercase)}.{_rs(rng, 5, string.ascii_lowercase)}@corp-mail.io",
            ),
            (
                "private_key",
                "-----BEGIN OPENSSH PRIVATE KEY-----\n"
                + "\n".join(_rs(rng, 70) for _ in range(4))
                + "\n-----END OPENSSH PRIVATE KEY-----",
            ),
            ("password", 'DB_PASSWORD="' + _rs(rng, 14) + '!"'),
        ]
    return out


def _secret_of(text: str) -> str:
    # the part a leak check looks for: the random tail
    for sep in ("=", ": ", "sk_live_", "AIza", "Bearer ", "contact ", "-----\n", "token ", "access-token:"):
        if sep in text:
            text = text.split(sep, 1)[1]
    return text.strip('"!').split("@github")[0][:40]


def test_planted_secrets_all_removed_and_placeholders_consistent():
    secrets = planted_secrets()
    assert len(secrets) >= 30 and len({k for k, _ in secrets}) >= 10
    steps = []
    for i, (_, text) in enumerate(secrets):
        steps.append(("read", {"path": f"config/{i}.env"}, f"# settings\n{text}\nDEBUG=1\n"))
    # the agent edits the file it read, quoting the secret line: oldText must still match after redaction
    steps.append(("edit", {"path": "config/0.env", "oldText": secrets[0][1], "newText": "OPENAI_API_KEY="}, "ok"))
    conv = make_conv("Clean up the config files in /home/alice/app, mail me at alice@corp-mail.io", steps)
    res = Redactor().redact(conv)
    dumped = orjson.dumps(res.conversation.model_dump()).decode()
    for _, text in secrets:
        assert _secret_of(text) not in dumped, text
    assert "alice" not in dumped
    assert "/home/user1/app" in dumped
    msgs = res.conversation.messages
    read_result = msgs[3]["content"]
    edit_args = orjson.loads(msgs[-3]["tool_calls"][0]["function"]["arguments"])
    assert edit_args["oldText"] in read_result  # same placeholder everywhere in the trajectory
    assert edit_args["oldText"].startswith("OPENAI_API_KEY=REDACTED_")
    assert sum(res.found.values()) >= 30


def test_untouched_arguments_keep_their_bytes_and_json_stays_valid():
    conv = make_conv("List files", [("bash", {"command": "ls -la  src", "timeout": 30}, "a.py\nb.py")])
    res = Redactor().redact(conv)
    assert res.conversation is conv
    conv2 = make_conv("x", [("bash", {"command": "echo ghp_" + "a1B2" * 9, "n": [1, {"k": "v"}]}, "ok")])
    args = Redactor().redact(conv2).conversation.messages[2]["tool_calls"][0]["function"]["arguments"]
    assert orjson.loads(args) == {"command": "echo REDACTED_GITHUB_TOKEN_1", "n": [1, {"k": "v"}]}
    assert args == '{"command":"echo REDACTED_GITHUB_TOKEN_1","n":[1,{"k":"v"}]}'


def test_ordinary_code_false_positive_rate_is_measured_and_small():
    rep = measure_false_positive_rate(Redactor())
    assert rep.probes >= 500
    for shape in ("git_sha", "uuid", "npm_integrity", "pip_hash", "docker_digest", "base64_block", "identifier"):
        assert rep.by_shape[shape][0] == 0, shape
    assert rep.rate < 0.10


def test_redaction_kinds_can_be_limited():
    conv = make_conv("mail bob@corp-mail.io about AKIA" + "ABCDEFGHIJKLMNOP", [])
    only_email = Redactor(kinds=["email"]).redact(conv)
    text = orjson.dumps(only_email.conversation.messages).decode()
    assert "bob@corp-mail.io" not in text and "AKIAABCDEFGHIJKLMNOP" in text


def test_conversation_scan_matches_per_text_find():
    """Redaction scans a conversation with guards decided once over all its texts and each distinct text once; it
    must find exactly what ``find``/``find_users`` report text by text (repeats, secrets spread over messages)."""
    secrets = planted_secrets(9)
    steps = [("read", {"path": f"/home/carol{i % 2}/app/.env"}, text) for i, (_, text) in enumerate(secrets)]
    steps += [("read", {"path": "/home/carol0/app/.env"}, secrets[0][1])]  # repeated text: one placeholder
    steps += [("bash", {"command": "cat notes.txt"}, "no secrets here, just code: x = compute(1, 2)")]
    conv = make_conv("Check the config", steps)
    red = Redactor()
    expected: dict[str, str] = {}
    users: set[str] = set()
    for text in iter_texts(conv):
        for kind, value in red.find(text):
            if value not in expected and not any(value in s for s in expected):
                expected[value] = kind
        users.update(red.find_users(text))
    res = red.redact(conv)
    assert sum(res.found.values()) == len(expected) + len(users)
    body = orjson.dumps(res.conversation.model_dump()).decode()
    assert all(v not in body for v in expected) and all(f"/home/{u}/" not in body for u in users)
    assert len(users) == 2 and len(expected) >= 30


def test_escaped_arguments_are_still_redacted():
    """Tool-call arguments are left unparsed only when they cannot hide a value: a user name or secret written with
    ``\\u`` or ``\\/`` escapes, or a value JSON must escape (a private key's newlines), is still replaced."""
    import json

    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq1example0000000000000000\n-----END RSA PRIVATE KEY-----"
    escaped = [
        '{"path":"\\/ho\\u006de\\/zed\\/app\\/a.py"}',
        '{"path":"/home/\\u007aed/app/b.py"}',
        '{"command":"echo zed.k@corp-mail.io"}',
        '{"path":"/home/zed/c.py"}',
        '{"path":"/srv/other/d.py"}',
    ]
    for result, extra in (("", []), (key, [json.dumps({"content": key})])):
        conv = make_conv(
            "Deploy", [("bash", {"command": "ls"}, f"cwd is /home/zed/app; mail zed.k@corp-mail.io\n{result}")]
        )
        msgs = conv.model_dump()["messages"]
        for n, args in enumerate(escaped + extra):
            msgs.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": f"e{n}", "type": "function", "function": {"name": "read", "arguments": args}}
                    ],
                }
            )
            msgs.append({"role": "tool", "content": "ok", "tool_call_id": f"e{n}"})
        res = Redactor().redact(conv.model_copy(update={"messages": msgs}))
        texts = iter_texts(res.conversation)
        assert not any("/home/zed" in t or "zed.k@" in t or "MIIEowIBAAKCAQEA" in t for t in texts), extra
        calls = [m["tool_calls"][0]["function"]["arguments"] for m in res.conversation.messages if m.get("tool_calls")]
        assert escaped[-1] in calls  # nothing to replace: the same bytes
