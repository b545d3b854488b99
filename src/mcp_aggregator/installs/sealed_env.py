"""``SealedEnv``: the gateway's environment, plus the ``${sealed:...}`` secrets it can open.

Installing from a registry keeps an ``isSecret`` value as ``${sealed:TOKEN}`` (a Fernet
token made with the gateway's ``SecretBox``) in the server's stored configuration, so the
database holds it only encrypted; it is opened where every ``${VAR}`` is expanded (at
connect time) and, being a referenced value, is scrubbed from errors and logs like one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from mcp_aggregator.credentials.secret_box import SecretBox
from mcp_aggregator.settings.env_expansion import SEALED_PREFIX


class SealedEnv(Mapping[str, str]):
    """``base`` as it is; a key ``sealed:TOKEN`` reads as the opened token.

    The box is opened on the first sealed lookup only, so a gateway that never installs
    from a registry never makes a key file. Iteration lists ``base``'s keys only.
    """

    def __init__(self, base: Mapping[str, str], box: Callable[[], SecretBox]) -> None:
        self._base = base
        self._open_box = box
        self._box: SecretBox | None = None
        self._opened: dict[str, str] = {}

    def box(self) -> SecretBox:
        if self._box is None:
            self._box = self._open_box()
        return self._box

    def seal(self, value: str) -> str:
        """``${sealed:TOKEN}`` for ``value``: what a stored configuration may hold instead of it."""
        return "${" + SEALED_PREFIX + self.box().seal(value) + "}"

    def __getitem__(self, key: str) -> str:
        if not key.startswith(SEALED_PREFIX):
            return self._base[key]
        if key not in self._opened:
            opened = self.box().open_sealed(key.removeprefix(SEALED_PREFIX))
            if opened is None:
                raise KeyError(key)
            self._opened[key] = opened
        return self._opened[key]

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        try:
            self[key]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self._base)

    def __len__(self) -> int:
        return len(self._base)
