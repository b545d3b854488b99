from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.sessions import KeyRing, SealingKey
from mcp_aggregator.sessions.key_ring import sealed_key_id

T0 = datetime(2026, 11, 27, tzinfo=UTC)
PURPOSE = b"test"


def _flip(text: str, at: int) -> str:
    raw = bytearray(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    raw[at] ^= 1
    return base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


def test_a_sealed_value_opens_with_the_ring_that_sealed_it() -> None:
    ring = KeyRing([SealingKey.generate(T0)])
    sealed = ring.seal(b"hello", PURPOSE)
    assert ring.open(sealed, PURPOSE) == b"hello"
    assert b"hello" not in base64.urlsafe_b64decode(sealed + "=" * (-len(sealed) % 4))


def test_a_value_is_43_characters_longer_than_what_it_seals() -> None:
    ring = KeyRing([SealingKey.generate(T0)])
    assert len(ring.seal(b"x" * 300, PURPOSE)) - len(base64.urlsafe_b64encode(b"x" * 300).rstrip(b"=")) == 43


@pytest.mark.parametrize("at", [0, 5, 20, -1])
def test_any_altered_byte_makes_a_value_not_open(at: int) -> None:
    ring = KeyRing([SealingKey.generate(T0)])
    sealed = ring.seal(b"hello", PURPOSE)
    assert ring.open(_flip(sealed, at), PURPOSE) is None


def test_a_value_sealed_for_one_purpose_does_not_open_for_another() -> None:
    ring = KeyRing([SealingKey.generate(T0)])
    assert ring.open(ring.seal(b"hello", b"session"), b"request state") is None


@pytest.mark.parametrize("text", ["", "not base64 !", "AAAA", "é" * 40, "A" * 80])
def test_malformed_or_forged_values_do_not_open(text: str) -> None:
    assert KeyRing([SealingKey.generate(T0)]).open(text, PURPOSE) is None


def test_the_newest_key_seals_and_older_keys_still_open() -> None:
    old, new = SealingKey.generate(T0), SealingKey.generate(T0 + timedelta(days=7))
    before = KeyRing([old]).seal(b"before", PURPOSE)
    ring = KeyRing([old, new])
    after = ring.seal(b"after", PURPOSE)
    assert sealed_key_id(after) == new.key_id
    assert ring.open(before, PURPOSE) == b"before"
    assert KeyRing([new]).open(before, PURPOSE) is None, "a retired key's values no longer open"


def test_a_configured_key_has_the_same_id_on_every_replica() -> None:
    text = base64.urlsafe_b64encode(bytes(range(32))).decode()
    one = SealingKey.from_text(text, T0, field="f")
    two = SealingKey.from_text(text.rstrip("="), T0 + timedelta(days=1), field="f")
    assert one.key_id == two.key_id
    assert KeyRing([two]).open(KeyRing([one]).seal(b"x", PURPOSE), PURPOSE) == b"x"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (base64.urlsafe_b64encode(b"short").decode(), "got 5 bytes"),
        ("%%%", "url-safe base64"),
    ],
)
def test_a_bad_configured_key_is_refused_naming_the_field(text: str, said: str) -> None:
    with pytest.raises(ConfigError, match=r"serve\.session_keys\[1\]") as raised:
        SealingKey.from_text(text, T0, field="serve.session_keys[1]")
    assert said in str(raised.value)
