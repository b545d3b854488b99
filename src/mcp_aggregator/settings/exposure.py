"""What clients see as tools and how they are named: plain enums, importable without pydantic
(the command line's ``--exposure`` option is built from them)."""

from __future__ import annotations

from enum import StrEnum


class Exposure(StrEnum):
    FACADES = "facades"
    PASSTHROUGH = "passthrough"
    SEARCH = "search"
    CODE = "code"


class FacadeGrouping(StrEnum):
    SERVER = "server"
    SKILL = "skill"


class ToolNames(StrEnum):
    NAMESPACED = "namespaced"
    ORIGINAL = "original"
