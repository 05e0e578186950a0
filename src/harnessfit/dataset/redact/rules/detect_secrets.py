"""Token-shape plugins of detect-secrets (its regex detectors; keyword, entropy and IP ones are ours, tuned for
code). The literals are read off each plugin's own patterns (``denylist``) and proved against them when the plugin
loads; AWS's keyword pattern and Slack's are case-insensitive, so are their literals (``any_case``). Telegram's and
Discord's only literal (``:``, ``.``) is in nearly every text, so they carry a corpus guard: a run of their own
pattern's items, searched once over a conversation."""

from __future__ import annotations

from harnessfit.dataset.redact.rule import PluginRule

_A = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6"
_A88 = (_A * 2)[:88]

DETECT_SECRETS: list[PluginRule] = [
    PluginRule(
        "ds_aws_access_key",
        "aws:AWSKeyDetector",
        literals=("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        any_case=("aws",),
        examples=("AKIA" + "ABCD1234EFGH5678", 'aws_key: "' + _A[:40] + '"'),
    ),
    PluginRule(
        "ds_azure_storage_account_access_key",
        "azure_storage_key:AzureStorageKeyDetector",
        literals=("AccountKey=",),
        examples=("AccountKey=" + _A88,),
    ),
    PluginRule(
        "ds_basic_auth_credentials",
        "basic_auth:BasicAuthDetector",
        literals=("://",),
        examples=("https://deploy:s3cr3tPass99@example.org/x",),
    ),
    PluginRule(
        "ds_discord_bot_token",
        "discord:DiscordBotTokenDetector",
        literals=(".",),
        corpus_guard=r"\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}",
        examples=("DISCORD=M" + _A[:23] + "." + _A[:6] + "." + _A[:27],),
    ),
    # its pattern captures only the prefix (``ghp``), which ``plausible`` refuses: no example holds a finding
    PluginRule(
        "ds_github_token", "github_token:GitHubTokenDetector", literals=("ghp_", "gho_", "ghu_", "ghs_", "ghr_")
    ),
    PluginRule(
        "ds_gitlab_token",
        "gitlab_token:GitLabTokenDetector",
        literals=tuple(
            f"{p}-" for p in ("glpat", "gldt", "glft", "glsoat", "glrt", "glcbt", "glimt", "glptt", "glagent", "gloas")
        )
        + ("GR1348941",),
        examples=("glptt-" + _A[:40], "GR1348941" + _A[:24]),
    ),  # glpat-…: only the prefix is captured
    PluginRule(
        "ds_json_web_token",
        "jwt:JwtTokenDetector",
        literals=("eyJ",),
        examples=("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl",),
    ),
    PluginRule(
        "ds_mailchimp_access_key",
        "mailchimp:MailchimpDetector",
        literals=("-us",),
        examples=("0123456789abcdef" * 2 + "-us12",),
    ),
    PluginRule(
        "ds_npm_tokens",
        "npm:NpmDetector",
        literals=("/:_authToken=",),
        examples=("//registry.npmjs.org/:_authToken=npm_" + _A[:36],),
    ),
    PluginRule(
        "ds_openai_token",
        "openai:OpenAIDetector",
        literals=("T3BlbkFJ",),
        examples=("sk-" + _A[:20] + "T3BlbkFJ" + _A[20:40],),
    ),
    PluginRule(
        "ds_pypi_token",
        "pypi_token:PypiTokenDetector",
        literals=("pypi-AgE",),
        examples=("pypi-AgEIcHlwaS5vcmc" + _A[:50] + _A[:20],),
    ),
    PluginRule(
        "ds_sendgrid_api_key",
        "sendgrid:SendGridDetector",
        literals=("SG.",),
        examples=("SG." + _A[:22] + "." + _A[:43],),
    ),
    PluginRule(
        "ds_slack_token",
        "slack:SlackDetector",
        any_case=("xox", "hooks.slack.com/services/"),
        examples=("xoxb-1234-5678-abcdefgh1", "https://hooks.slack.com/services/T01/B02/" + _A[:24]),
    ),
    PluginRule(
        "ds_square_oauth_secret",
        "square_oauth:SquareOAuthDetector",
        literals=("sq0csp-",),
        examples=("sq0csp-" + _A[:43],),
    ),
    PluginRule(
        "ds_stripe_access_key", "stripe:StripeDetector", literals=("k_live_",), examples=("sk_live_" + _A[:24],)
    ),
    PluginRule(
        "ds_telegram_bot_token",
        "telegram_token:TelegramBotTokenDetector",
        literals=(":",),
        corpus_guard=r":[0-9A-Za-z_-]{35}",
        examples=("bot 123456789:" + _A[:35] + " in config",),
    ),
    PluginRule(
        "ds_twilio_api_key",
        "twilio:TwilioKeyDetector",
        literals=("AC", "SK"),
        examples=("AC" + "a1" * 16, "SK" + "b2" * 16),
    ),
]
