import random
import string

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessfit.dataset.probe import measure_false_positive_rate
from harnessfit.dataset.redact import Redactor

from _helpers.conversations import make_conv


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
            ("email", f"contact {_rs(rng, 6, string.ascii_lowercase)}.{_rs(rng, 5, string.ascii_lowercase)}@corp-mail.io"),
            ("private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(_rs(rng, 70) for _ in range(4)) + "\n-----END OPENSSH PRIVATE KEY-----"),
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
    from harnessfit.dataset.redact import _iter_texts

    secrets = planted_secrets(9)
    steps = [("read", {"path": f"/home/carol{i % 2}/app/.env"}, text) for i, (_, text) in enumerate(secrets)]
    steps += [("read", {"path": "/home/carol0/app/.env"}, secrets[0][1])]  # repeated text: one placeholder
    steps += [("bash", {"command": "cat notes.txt"}, "no secrets here, just code: x = compute(1, 2)")]
    conv = make_conv("Check the config", steps)
    red = Redactor()
    expected: dict[str, str] = {}
    users: set[str] = set()
    for text in _iter_texts(conv):
        for kind, value in red.find(text):
            if value not in expected and not any(value in s for s in expected):
                expected[value] = kind
        users.update(red.find_users(text))
    res = red.redact(conv)
    assert sum(res.found.values()) == len(expected) + len(users)
    body = orjson.dumps(res.conversation.model_dump()).decode()
    assert all(v not in body for v in expected) and all(f"/home/{u}/" not in body for u in users)
    assert len(users) == 2 and len(expected) >= 30


def test_shortcut_scans_equal_full_regex_scans():
    """The keyword-anchored scan of the assignment patterns and the conversation-level guards of the Telegram and
    Discord plugins give exactly what the plain regexes / plugins give (overlapping keywords, matches back to
    back, non-ASCII text where ``(?i)`` folds the Kelvin sign to ``k``)."""
    from harnessfit.dataset.redact import _PW_ENV, _PW_QUOTED, _matches

    texts = [
        'password="hunter22long" token: \'abcd1234efgh\' api_key = "k3y-v4lue-here"',
        'secretsecret_token="s3cr3tvalue!!" passwordpassword=\'aaaaaaaa1\'apikey="bbbbbbbb2"',
        'AUTH_KEY = "zzzzzzzz9" private_key:"-----x-----" credentials="c1c2c3c4c5"',
        'api_\u212aey="kelvin-folds-to-k1" caf\u00e9 token="t0k3nvalue"',
        "export DB_PASSWORD=Sup3rS3cret!\n  GITHUB_TOKEN=ghx1234567890\nAPI_KEY=$NOPE\nAPIKEY=plainvalue9",
        "nothing to see: tokens tokenizer accessor authority privately",
    ]
    for text in texts:
        for pat in (_PW_QUOTED, _PW_ENV):
            assert [m.span() for m in _matches(pat, text)] == [m.span() for m in pat.finditer(text)]
    red = Redactor()
    # the conversation-level scan (keyword starts from the guard literals' offsets) finds the same, also when
    # another text of the conversation is non-ASCII or holds a folding letter
    for group in (texts, texts[:3], texts[:3] + ["caf\u00e9"], texts[:3] + ["\u017fecret='folded1234'"]):
        assert red._scan(group) == [_plain_findings(red, t) for t in group]
        assert sum(k == "password_assignment" for found in red._scan(group) for k, _ in found) >= 6
    tg = "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawq in config"
    dc = "DISCORD=MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs"
    types: set[str] = set()
    for text in (tg, dc, tg + "\n" + dc, "a:b.c"):
        full = [(p.secret_type, v) for p in red._plugins for v in p.analyze_string(text)]
        got = [(p.secret_type, v) for p, _, _ in red._plan(text).plugins for v in p.analyze_string(text)]
        assert full == got
        types.update(t for t, _ in full)
    assert any("Telegram" in t for t in types) and any("Discord" in t for t in types)


def test_guard_literal_presence_equals_substring_search():
    """The per-conversation guard decision (one Aho-Corasick pass per case; plain searches when a lone surrogate
    stops the automaton) says "present" for exactly the literals a plain substring search finds, on long texts with
    and without non-ASCII characters."""
    red = Redactor()
    filler = "plain code line x = compute(1, 2) # naïve café 東京 \ud800 ✓\n" * 80
    texts = [filler, filler.encode("ascii", "ignore").decode(), filler + "\n".join(t for _, t in planted_secrets(3)),
             "AKIA ghp_ eyJ sq0 SG. -us1 A3T xox://" + filler, "Bearer SECRET Token KEY" + filler]
    for text in texts:
        occ = red._occurrences(text)
        got = {key: key in occ for key in red._literal_keys}
        assert got == {k: k[1] in (text.lower() if k[0] else text) for k in got}
    assert any(got.values()) and not all(got.values())


def test_plugin_guards_never_hide_a_plugin_finding():
    """Guard literals are necessary conditions of the detect-secrets patterns, case-insensitive where the pattern
    is (AWS's keyword pattern, Slack): every plugin finds through the plan exactly what it finds unguarded,
    including upper-case and Unicode-folded spellings (İ ı ſ K are the only non-ASCII characters ``(?i)`` folds
    to ASCII letters)."""
    import re

    from harnessfit.dataset.redact import _FOLDS

    folds = {chr(c) for c in range(128, 0x30000) if re.match("(?i)[a-z]", chr(c))}
    assert folds == set(_FOLDS.pattern.strip("[]"))
    key40 = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8R2LTWKY"
    texts = [f'AWS_SECRET_KEY = "{key40}"', f'aws_key: "{key40}"', f'A\u017fW\u017f key = "{key40}"',
             "XOXB-1234567890-abcdefghij", "xoxp-1234-5678-abcdefgh", "HTTPS://HOOKS.SLACK.COM/SERVICES/T0001/B0002/XXXX",
             "ghp_" + "a1B2" * 9, "glpat-" + "x" * 24, "sk_live_" + "9" * 24, "//registry.npmjs.org/:_authToken=npm_abc",
             "AC" + "a1" * 16, "nothing here at all"]
    red = Redactor()
    types: set[str] = set()
    for text in texts + ["\n".join(texts)]:
        full = [(p.secret_type, v) for p in red._plugins for v in p.analyze_string(text)]
        got = [(p.secret_type, v) for p, _, lits in red._plan(text).plugins for v in p.analyze_string(text)
               if lits is None or any(k[1] in (text.lower() if k[0] else text) or _FOLDS.search(text) for k in lits)]
        assert got == full, text
        types.update(t for t, _ in full)
    assert any("AWS" in t for t in types) and any("Slack" in t for t in types)
    assert any(k == "ds_aws_access_key" for k, _ in red.find(texts[0]))


# -- the fast scan equals a plain, unguarded, text-by-text scan ------------------------------------------------------

def _plain_findings(red, text):
    """What a text holds, by the plainest reading of the detectors: every original regex over the text with
    ``finditer``, every plugin unguarded, then e-mails, high-entropy tokens and home-folder users."""
    import harnessfit.dataset.redact as R

    out = []
    for kind, pat in R._SHAPES:
        for m in pat.finditer(text):
            v = m.group("v") if "v" in pat.groupindex else m.group(0)
            if v and (kind in ("private_key", "aws_access_key") or not R._bad_value(v)):
                out.append((kind, v))
    for plugin in red._plugins:
        out += [(R._slug(plugin.secret_type), v) for v in plugin.analyze_string(text)
                if isinstance(v, str) and not R._bad_value(v)]
    for m in R._EMAIL.finditer(text):
        local, _, domain = m.group(0).rpartition("@")
        if not (local.lower() == "git" or R._EMAIL_SKIP_DOMAINS.search(domain)
                or domain.rsplit(".", 1)[-1].lower() in R._FILE_EXTENSIONS):
            out.append(("email", m.group(0)))
    out += [("high_entropy", m.group("v")) for m in R._TOKEN.finditer(text)
            if R._is_high_entropy_secret(m.group("v"), text, m.start())]
    out += [("home_user", m.group("name")) for m in R._HOME.finditer(text)
            if m.group("name").lower() not in R._GENERIC_USERS and not R._PLACEHOLDER_USER.match(m.group("name"))]
    return out


_FRAGMENTS = ["a", "Z", "9", "@", ".", " ", "\n", "/", "\\", ":", "=", "==", "-", "_", "+", "%", "/home/", "/Users/",
              "C:\\", "C:/", "D:\\\\", "Users", "home", "alice", "sk-ant-", "sk-", "ghp_", "AKIA", "AIza", "eyJ", "hf_",
              "xoxb-", "npm_", "sk_live_", "glpat-", "bob@corp-mail.io", "x.y@a.b.co", "git@github.com",
              "password=", 'token: "', "Bearer ", "api_key", "é", "東", "\u212a", "\u0130",
              "Q2xhdWRlQ29kZVRlc3RUb2tlbjEyMzQ1Njc4OTA", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4", "x" * 30,
              '"', "'", "access", "Auth", "PRIVATE", "key", "Secret", "credentials", '="', "s3cr3tValue99", "Ab1+",
              "Zq8-", "ſ"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_FRAGMENTS), max_size=40).map("".join), min_size=1, max_size=6))
def test_conversation_scan_equals_plain_per_text_scan(texts):
    red = Redactor()
    texts = list(dict.fromkeys(t for t in texts if t))
    if not texts:
        return
    assert red._scan(texts) == [_plain_findings(red, t) for t in texts]
    assert [list(red.find(t)) + [("home_user", u) for u in red.find_users(t)] for t in texts] == red._scan(texts)


def test_literal_first_forms_find_what_the_original_patterns_find():
    import harnessfit.dataset.redact as R

    rng = random.Random(3)
    texts = [t for _, t in planted_secrets(4)] + [
        "xsk-ant-api03-" + "a" * 30, "-sk-proj-" + "b" * 30, "_ghp_" + "c" * 40, "ghp_" + "d" * 40 + " github_pat_" + "e" * 30,
        "9AKIA" + "A" * 16, "AKIA" + "B" * 17, "AIza" + "f" * 35 + "-", "rk_test_" + "1" * 20, "_sk_live_" + "2" * 20,
        "hf_" + "g" * 30, "npm_" + "h" * 36, "pypi-AgE" + "i" * 60, "eyJ" + "j" * 10 + ".eyJ" + "k" * 10 + "." + "l" * 20,
        "sk-ant-sk-ant-" + "m" * 30, "glpat-" + "n" * 25, "xoxb-" + "o" * 12, "gggh" + "p_" + "q" * 40,
    ] + ["".join(rng.choice(_FRAGMENTS) for _ in range(60)) for _ in range(200)]
    originals = dict(R._SHAPES)
    for kind, fast in R._FAST_FORMS.items():
        for text in texts:
            assert [m.span() for m in fast.finditer(text)] == [m.span() for m in originals[kind].finditer(text)], (kind, text)


def test_escaped_arguments_are_still_redacted():
    """Tool-call arguments are left unparsed only when they cannot hide a value: a user name or secret written with
    ``\\u`` or ``\\/`` escapes, or a value JSON must escape (a private key's newlines), is still replaced."""
    import json

    from harnessfit.dataset.redact import _iter_texts

    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq1example0000000000000000\n-----END RSA PRIVATE KEY-----"
    escaped = ['{"path":"\\/ho\\u006de\\/zed\\/app\\/a.py"}', '{"path":"/home/\\u007aed/app/b.py"}',
               '{"command":"echo zed.k@corp-mail.io"}', '{"path":"/home/zed/c.py"}', '{"path":"/srv/other/d.py"}']
    for result, extra in (("", []), (key, [json.dumps({"content": key})])):
        conv = make_conv("Deploy", [("bash", {"command": "ls"}, f"cwd is /home/zed/app; mail zed.k@corp-mail.io\n{result}")])
        msgs = conv.model_dump()["messages"]
        for n, args in enumerate(escaped + extra):
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"e{n}", "type": "function", "function": {"name": "read", "arguments": args}}]})
            msgs.append({"role": "tool", "content": "ok", "tool_call_id": f"e{n}"})
        res = Redactor().redact(conv.model_copy(update={"messages": msgs}))
        texts = _iter_texts(res.conversation)
        assert not any("/home/zed" in t or "zed.k@" in t or "MIIEowIBAAKCAQEA" in t for t in texts), extra
        calls = [m["tool_calls"][0]["function"]["arguments"] for m in res.conversation.messages if m.get("tool_calls")]
        assert escaped[-1] in calls  # nothing to replace: the same bytes


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([":", ".", "a", "Z", "9", "_", "-", " ", "é", "東", "x" * 6, "y" * 27, "Q" * 35, "\n"]),
                max_size=30).map("".join))
def test_compiled_corpus_guards_agree_with_their_patterns(text):
    """Telegram's guard is exactly ``:[0-9A-Za-z_-]{35}``; Discord's never says no where its pattern matches."""
    import numpy as np

    from harnessfit.dataset import kernels
    from harnessfit.dataset.redact import _PLUGIN_CORPUS_GUARDS

    colon, dot = kernels.dot_colon_guards(np.frombuffer(text.encode("utf-8"), dtype=np.uint8))
    assert colon == (_PLUGIN_CORPUS_GUARDS["TelegramBotTokenDetector"].search(text) is not None)
    assert dot or _PLUGIN_CORPUS_GUARDS["DiscordBotTokenDetector"].search(text) is None
