"""Write ``labelled.jsonl``, the labelled corpus of secrets and personal data the guardrails
bench measures detection on: each line ``{kind, label, text}``, the value set in one of
several contexts (config files, JSON, logs, prose). Deterministic (seeded); made up values of
the real formats (checksums valid where the format has one), none a live credential.

    .venv/bin/python bench/data/guardrails/make_labelled.py
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from pathlib import Path

from stdnum import iban, luhn

OUT = Path(__file__).parent / "labelled.jsonl"
PER_LABEL = 24
rng = random.Random(20261127)

UPPER = string.ascii_uppercase + "234567"
ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"


def pick(alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def b64url(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def jwt() -> str:
    header = b64url({"alg": "HS256", "typ": "JWT"})
    payload = b64url({"sub": str(rng.randint(1, 10**9)), "name": rng.choice(["ann", "bo", "cy"]), "iat": 1700000000})
    return f"{header}.{payload}.{pick(ALNUM + '-_', 43)}"


def private_key() -> str:
    kind = rng.choice(["RSA PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "PRIVATE KEY"])
    body = "\n".join(pick(B64, 64) for _ in range(rng.randint(3, 8)))
    return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----"


def card() -> str:
    prefix, length = rng.choice([("4", 16), ("51", 16), ("55", 16), ("37", 15), ("6011", 16)])
    partial = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    number = partial + luhn.calc_check_digit(partial)
    style = rng.choice(["plain", "spaces", "dashes"])
    if style == "plain":
        return number
    groups = [number[i : i + 4] for i in range(0, len(number), 4)]
    return (" " if style == "spaces" else "-").join(groups)


def an_iban() -> str:
    country, bban_len = rng.choice([("DE", 18), ("FR", 23), ("NL", 14), ("IT", 23)])
    if country == "NL":
        bban = pick(string.ascii_uppercase, 4) + pick(string.digits, 10)
    elif country == "IT":
        bban = pick(string.ascii_uppercase, 1) + pick(string.digits, 22)
    else:
        bban = pick(string.digits, bban_len)
    number = country + iban.calc_check_digits(country + "00" + bban) + bban
    return " ".join(number[i : i + 4] for i in range(0, len(number), 4)) if rng.random() < 0.5 else number


def phone() -> str:
    return rng.choice(
        [
            f"+1 {rng.choice(['415', '212', '617', '312'])}-{rng.randint(200, 999)}-{rng.randint(1000, 9999)}",
            f"({rng.choice(['415', '646', '206'])}) {rng.randint(200, 999)}-{rng.randint(1000, 9999)}",
            f"+44 20 {rng.randint(7000, 8999)} {rng.randint(1000, 9999)}",
            f"+49 30 {rng.randint(100000, 999999)}{rng.randint(10, 99)}",
            f"+33 1 {rng.randint(40, 59)} {rng.randint(10, 99)} {rng.randint(10, 99)} {rng.randint(10, 99)}",
            f"+81 3-{rng.randint(3000, 6999)}-{rng.randint(1000, 9999)}",
        ]
    )


def email() -> str:
    user = rng.choice(["jane.doe", "j.smith", "ops+alerts", "li_wei", "m.garcia"])
    return f"{user}{rng.randint(1, 99)}@{rng.choice(['example.com', 'corp.example.org', 'mail.example.net'])}"


SECRETS: dict[str, Callable[[], str]] = {
    "aws_access_key": lambda: rng.choice(["AKIA", "ASIA"]) + pick(UPPER, 16),
    "aws_secret_key": lambda: pick(B64, 40),
    "github_token": lambda: rng.choice(["ghp_", "gho_", "ghs_"]) + pick(ALNUM, 36),
    "slack_token": lambda: f"xoxb-{rng.randint(10**11, 10**12)}-{rng.randint(10**12, 10**13)}-{pick(ALNUM, 24)}",
    "stripe_key": lambda: "sk_live_" + pick(ALNUM, 24),
    "private_key": private_key,
    "jwt": jwt,
    "basic_auth_password": lambda: pick(ALNUM, 14),
    "gitlab_token": lambda: "glpat-" + pick(ALNUM + "_-", 20),
    "sendgrid_key": lambda: f"SG.{pick(ALNUM, 22)}.{pick(ALNUM, 43)}",
}
PII: dict[str, Callable[[], str]] = {
    "CREDIT_CARD": card,
    "EMAIL_ADDRESS": email,
    "PHONE_NUMBER": phone,
    "IBAN_CODE": an_iban,
    "IP_ADDRESS": lambda: ".".join(str(rng.randint(1, 254)) for _ in range(4)),
}
CONTEXTS = [
    "{key}={value}",
    '{{"{key}": "{value}", "region": "eu-west-1"}}',
    "{key}: {value}\n",
    "2026-11-27T10:15:02Z INFO loaded {key} {value} from the vault",
    "Here is the {key} you asked for: {value}. Keep it safe.",
]


def contexted(label: str, value: str) -> str:
    if label == "aws_secret_key":
        return rng.choice(
            [
                f"aws_secret_access_key = {value}",
                f'{{"SecretAccessKey": "{value}"}}',
                f"AWS_SECRET_ACCESS_KEY={value}",
                f'aws_secret = "{value}"',
            ]
        )
    if label == "basic_auth_password":
        scheme = rng.choice(["postgres", "https", "redis", "amqp"])
        return f"connect with {scheme}://svc_{rng.randint(1, 9)}:{value}@db.internal.example:5432/app"
    key = label.lower().replace("_", "-")
    return rng.choice(CONTEXTS).format(key=key, value=value)


def main() -> None:
    rows = []
    for kind, table in (("secrets", SECRETS), ("pii", PII)):
        for label, make in table.items():
            rows.extend({"kind": kind, "label": label, "text": contexted(label, make())} for _ in range(PER_LABEL))
    OUT.write_text("".join(json.dumps(row) + "\n" for row in rows))
    print(f"{len(rows)} labelled texts written to {OUT}")


if __name__ == "__main__":
    main()
