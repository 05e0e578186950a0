"""Detector gaps (issue 20): an unquoted YAML ``password: value``, lower-case ``.env`` keys (``db_password=…``) and
URL passwords shorter than six characters are found; the code shapes next to them (type annotations, reads from
the environment, templates, versions) are not."""

from __future__ import annotations

import pytest

from harnessfit.dataset.redact import Redactor


@pytest.fixture(scope="module")
def red():
    return Redactor()


@pytest.mark.parametrize(
    "text,value",
    [
        ("database:\n  password: Sup3rS3cret9\n  host: db", "Sup3rS3cret9"),
        ("db_password: hunter2-prod  # staging", "hunter2-prod"),
        ("  client_secret: 8f3kQz!x2m", "8f3kQz!x2m"),
        ("db_password=S3cretValue", "S3cretValue"),
        ("export smtp_password=mail-Pass-42", "mail-Pass-42"),
        ("Api_Token=tok-9a8b7c6d5e", "tok-9a8b7c6d5e"),
        ("DATABASE_URL=postgres://user:pw@db.internal:5432/app", "pw"),
        ("mysql://admin:s3cr@10.0.0.5/app", "s3cr"),
        ("redis://:abc12@cache:6379", "abc12"),
    ],
)
def test_secrets_the_detectors_used_to_miss(red, text, value):
    found = [v for _, v in red.find(text)]
    assert value in found, found


@pytest.mark.parametrize(
    "text",
    [
        "class Settings:\n    password: str\n    token: Optional[str] = None",
        "    password: SecretStr",
        "api_key: str = Field(default=None)",
        "token: Token",
        "password: ${DB_PASSWORD}",
        'token: "{{ secrets.NPM_TOKEN }}"',
        "password: process.env.DB_PASS",
        "token=self.token_value",
        "password=getpass()",
        "https://user:${PASSWORD}@github.com/org/repo",
        "https://user:password@example.com/path",
        "docker://ubuntu:22.04@sha256:abc",
        "ssh://git@github.com:org/repo.git",
        "secret_key: <your-secret-key>",
    ],
)
def test_code_shapes_beside_them_are_left_alone(red, text):
    assert list(red.find(text)) == []
