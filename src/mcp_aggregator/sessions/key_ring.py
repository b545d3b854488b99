"""``KeyRing``: AES-256-GCM keys, the newest sealing and every one still kept opening.

A sealed value is ``key id (4 bytes) | nonce (12) | ciphertext | tag (16)``, url-safe base64
without padding: 43 characters of overhead on top of the sealed bytes. The key id lets a
ring holding several keys (a rotation in progress, or replicas that each made one at the
same moment) open with the right one at once; ``purpose`` is bound in as associated data,
so a value sealed for one use (a session id) never opens as another (a request state).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from mcp_aggregator.errors import ConfigError

KEY_BYTES: Final = 32
_ID: Final = struct.Struct(">I")
_NONCE_BYTES: Final = 12
_TAG_BYTES: Final = 16
_HEAD_BYTES: Final = _ID.size + _NONCE_BYTES


@dataclass(frozen=True, slots=True)
class SealingKey:
    """One key of the ring; ``created`` orders the ring (newest seals)."""

    key_id: int
    secret: bytes
    created: datetime

    @classmethod
    def generate(cls, created: datetime) -> SealingKey:
        return cls(_ID.unpack(os.urandom(_ID.size))[0], AESGCM.generate_key(bit_length=256), created)

    @classmethod
    def from_text(cls, text: str, created: datetime, *, field: str) -> SealingKey:
        """A configured key: 32 bytes in url-safe base64. Raises ``ConfigError`` naming ``field``."""
        try:
            secret = base64.urlsafe_b64decode(_padded(text.strip()))
        except (binascii.Error, ValueError) as exc:
            raise ConfigError(f"must be 32 bytes in url-safe base64: {exc}", path=field) from exc
        if len(secret) != KEY_BYTES:
            raise ConfigError(
                f"must be 32 bytes in url-safe base64, got {len(secret)} bytes (make one with "
                "`python -c 'import os,base64; print(base64.urlsafe_b64encode(os.urandom(32)).decode())'`)",
                path=field,
            )
        # The id of a configured key is derived from it, so every replica given the same
        # list agrees on it without storing anything.
        digest = hashlib.sha256(b"mcp-aggregator sealing key id\0" + secret).digest()
        return cls(_ID.unpack(digest[: _ID.size])[0], secret, created)

    def text(self) -> str:
        return base64.urlsafe_b64encode(self.secret).decode("ascii")


class KeyRing:
    """Seals with the newest key, opens with whichever key a value names."""

    def __init__(self, keys: Iterable[SealingKey]) -> None:
        ordered = sorted(keys, key=lambda key: key.created, reverse=True)
        if not ordered:
            raise ValueError("a KeyRing needs at least one key")
        self._keys: tuple[SealingKey, ...] = tuple(ordered)
        self._by_id = {key.key_id: AESGCM(key.secret) for key in reversed(ordered)}
        self._sealing = AESGCM(ordered[0].secret)

    @property
    def keys(self) -> Sequence[SealingKey]:
        """Newest first."""
        return self._keys

    @property
    def newest(self) -> SealingKey:
        return self._keys[0]

    def knows(self, key_id: int) -> bool:
        return key_id in self._by_id

    def seal(self, plain: bytes, purpose: bytes) -> str:
        nonce = os.urandom(_NONCE_BYTES)
        head = _ID.pack(self.newest.key_id) + nonce
        sealed = head + self._sealing.encrypt(nonce, plain, purpose)
        return base64.urlsafe_b64encode(sealed).rstrip(b"=").decode("ascii")

    def open(self, text: str, purpose: bytes) -> bytes | None:
        """The sealed bytes; None when ``text`` is malformed, forged, tampered with, sealed
        for another purpose or by a key this ring does not hold."""
        raw = sealed_bytes(text)
        if raw is None:
            return None
        aead = self._by_id.get(_ID.unpack(raw[: _ID.size])[0])
        if aead is None:
            return None
        try:
            return aead.decrypt(raw[_ID.size : _HEAD_BYTES], raw[_HEAD_BYTES:], purpose)
        except InvalidTag:
            return None


def sealed_key_id(text: str) -> int | None:
    """The id of the key ``text`` says sealed it (unauthenticated: a hint for reloading keys)."""
    raw = sealed_bytes(text)
    return None if raw is None else int(_ID.unpack(raw[: _ID.size])[0])


def sealed_bytes(text: str) -> bytes | None:
    if not text.isascii():
        return None
    try:
        raw = base64.urlsafe_b64decode(_padded(text))
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) >= _HEAD_BYTES + _TAG_BYTES else None


def _padded(text: str) -> str:
    return text + "=" * (-len(text) % 4)
