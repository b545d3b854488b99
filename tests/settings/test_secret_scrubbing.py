"""Which values of a server's config count as secrets, and scrubbing them out of text and logs."""

from __future__ import annotations

import logging

import pytest

from mcp_aggregator.serve.secret_log_filter import SecretLogFilter, scrubbed_logs
from mcp_aggregator.settings import SecretScrubber, secret_values

ENV = {"TOKEN": "expanded-token-value", "SHORT": "ab"}


def test_expanded_variables_and_what_redaction_hides_are_secrets() -> None:
    stdio = {
        "command": "server",
        "args": ["--token", "literal-arg-secret", "-v", "--key=flag-value-secret"],
        "env": {"API": "${TOKEN}", "PLAIN": "plain-env-value", "TINY": "1"},
    }
    assert secret_values(stdio, ENV) == {
        "literal-arg-secret",
        "flag-value-secret",
        "${TOKEN}",
        "expanded-token-value",
        "plain-env-value",
    }
    http = {"base_url": "https://u:url-password@h/mcp/tok9876543210abcdefghij", "headers": {"X-Key": "Key ${TOKEN}"}}
    assert secret_values(http, ENV) == {
        "url-password",
        "tok9876543210abcdefghij",
        "Key ${TOKEN}",
        "Key expanded-token-value",
        "expanded-token-value",
    }


def test_the_scrubber_hides_the_longest_match_and_ignores_short_values() -> None:
    scrub = SecretScrubber(["secret-value", "secret-value-longer", "ab"])
    assert scrub("a secret-value-longer and secret-value; ab") == "a *** and ***; ab"
    assert not SecretScrubber([]) and SecretScrubber([])("x") == "x"


def test_the_log_filter_scrubs_messages_and_tracebacks_on_every_handler(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    log = logging.getLogger("tests.scrubbing")
    with scrubbed_logs(SecretScrubber(["hunter2-secret"])):
        log.warning("token %s refused", "hunter2-secret")
        try:
            raise RuntimeError("bad key hunter2-secret")
        except RuntimeError:
            log.exception("failed")
        logging.getLogger("aiosqlite").debug("executing INSERT ... hunter2-secret")
    log.warning("after: %s", "hunter2-secret")
    messages = [r.getMessage() for r in caplog.records]
    assert messages[:2] == ["token *** refused", "failed"]
    assert "bad key ***" in (caplog.records[1].exc_text or "")
    assert not any("executing INSERT" in m for m in messages), "SQL parameter lines are dropped"
    assert messages[-1] == "after: hunter2-secret", "the filter is removed on exit"
    assert isinstance(SecretLogFilter(str), logging.Filter)
