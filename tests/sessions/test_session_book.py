"""``SessionBook`` on a real (SQLite) registry: shared keys, rotation, the ledger, configured keys."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.registry import Registry
from mcp_aggregator.registry.config import RegistrySettings
from mcp_aggregator.sessions import SessionBook, SessionLedger
from mcp_aggregator.sessions.session_keys import ROTATE_AFTER_SECS
from mcp_aggregator.settings.serve_settings import ServeSettings

T0 = datetime(2026, 11, 27, tzinfo=UTC)
CLIENT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
ALICE = AuthorizationContext(client_id="alice", issuer=None, subject=None)
BOB = AuthorizationContext(client_id="bob", issuer=None, subject=None)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def registry(tmp_path: Path) -> AsyncIterator[Registry]:
    async with Registry(RegistrySettings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'r.db'}")) as opened:
        yield opened


async def _book(registry: Registry, clock: Clock, **serve: object) -> SessionBook:
    return await SessionBook.open(ServeSettings.model_validate(serve), registry, env={}, clock=clock)


async def test_books_on_one_registry_share_its_key_and_resume_each_others_sessions(registry: Registry) -> None:
    clock = Clock()
    one, two = await _book(registry, clock), await _book(registry, clock)
    assert len(await SessionLedger(registry, clock=clock).keys()) == 1, "the second book made no key of its own"
    session_id = one.issue(CLIENT, ALICE, "default")
    resumed = await two.resume(session_id, ALICE, "default")
    assert resumed is not None and resumed.facts.client == CLIENT


async def test_a_session_resumes_only_for_its_owner_at_its_endpoint(registry: Registry) -> None:
    book = await _book(registry, Clock())
    session_id = book.issue(CLIENT, ALICE, "default")
    assert await book.resume(session_id, BOB, "default") is None
    assert await book.resume(session_id, None, "default") is None
    assert await book.resume(session_id, ALICE, "research") is None
    assert await book.resume(session_id, ALICE, "default") is not None


async def test_what_a_client_changed_comes_back_and_an_ended_session_does_not(registry: Registry) -> None:
    book = await _book(registry, Clock())
    session_id = book.issue(CLIENT, None, "default")
    await book.record(session_id, log_level="warning")
    await book.record(session_id, subscriptions=["a://1", "b://2"])
    resumed = await book.resume(session_id, None, "default")
    assert resumed is not None
    assert (resumed.state.log_level, resumed.state.subscriptions) == ("warning", ("a://1", "b://2"))
    await book.record(session_id, ended=True)
    assert await book.resume(session_id, None, "default") is None


async def test_a_key_is_rotated_in_when_due_and_older_ids_still_resume(registry: Registry) -> None:
    clock = Clock()
    old_book = await _book(registry, clock, session_max_age_secs=30 * 86_400)
    old_id = old_book.issue(CLIENT, None, "default")
    clock.now = T0 + timedelta(seconds=ROTATE_AFTER_SECS + 1)
    await old_book.keys.rotate_if_due()
    assert len(await SessionLedger(registry, clock=clock).keys()) == 2
    new_id = old_book.issue(CLIENT, None, "default")
    assert old_id[3:9] != new_id[3:9], "the new key seals"
    assert await old_book.resume(old_id, None, "default") is not None


async def test_a_replica_reads_a_key_another_made_when_an_id_names_it(registry: Registry) -> None:
    clock = Clock()
    reader = await _book(registry, clock)
    clock.now = T0 + timedelta(seconds=ROTATE_AFTER_SECS + 1)
    rotated = await _book(registry, clock)  # starts after the rotation is due: makes the new key
    assert await reader.resume(rotated.issue(CLIENT, None, "default"), None, "default") is not None


async def test_keys_older_than_any_valid_id_are_dropped(registry: Registry) -> None:
    clock = Clock()
    book = await _book(registry, clock, session_max_age_secs=3600)
    first_id = book.issue(CLIENT, None, "default")
    clock.now = T0 + timedelta(seconds=ROTATE_AFTER_SECS + 3600 + 1)
    await book.keys.rotate_if_due()
    keys = await SessionLedger(registry, clock=clock).keys()
    assert [key.created for key in keys] == [clock.now]
    assert await book.resume(first_id, None, "default") is None


async def test_configured_keys_override_the_registrys(registry: Registry) -> None:
    key = base64.urlsafe_b64encode(bytes(range(32))).decode()
    clock = Clock()
    one = await _book(registry, clock, session_keys=[key])
    two = await SessionBook.open(
        ServeSettings.model_validate({"session_keys": ["${SESSION_KEY}"]}),
        registry,
        env={"SESSION_KEY": key},
        clock=clock,
    )
    assert await SessionLedger(registry, clock=clock).keys() == [], "nothing made or stored"
    assert await two.resume(one.issue(CLIENT, None, "default"), None, "default") is not None
    shared = await _book(registry, clock)
    assert await shared.resume(one.issue(CLIENT, None, "default"), None, "default") is None


async def test_a_bad_configured_key_is_refused_at_start_naming_it(registry: Registry) -> None:
    good = base64.urlsafe_b64encode(bytes(32)).decode()
    with pytest.raises(ConfigError, match=r"serve\.session_keys\[1\].*32 bytes"):
        await _book(registry, Clock(), session_keys=[good, "dG9vIHNob3J0"])
    with pytest.raises(ConfigError, match=r"serve\.session_keys\[0\].*\$\{NOPE\} is not set"):
        await _book(registry, Clock(), session_keys=["${NOPE}"])


@pytest.mark.parametrize("value", [0, 59, 31 * 86_400, "forever"])
def test_a_bad_session_max_age_is_refused_naming_the_field(value: object) -> None:
    from pydantic import ValidationError

    from mcp_aggregator.settings import Settings

    with pytest.raises(ValidationError, match=r"serve\.session_max_age_secs"):
        Settings.model_validate({"serve": {"session_max_age_secs": value}})
