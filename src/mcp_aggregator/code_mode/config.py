"""The ``code_mode`` settings section: what a script may use and how far it may go."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

SANDBOX_MODULES = frozenset(
    {
        "asyncio",
        "base64",
        "binascii",
        "bisect",
        "collections",
        "copy",
        "csv",
        "dataclasses",
        "datetime",
        "decimal",
        "functools",
        "hashlib",
        "itertools",
        "json",
        "math",
        "os",
        "pathlib",
        "random",
        "re",
        "sys",
        "time",
        "tomllib",
        "typing",
        "unicodedata",
    }
)
"""Every module the sandbox (pydantic-monty) has; nothing else can be imported at all."""

DEFAULT_MODULES: tuple[str, ...] = tuple(sorted(SANDBOX_MODULES - {"os", "pathlib", "sys"}))
"""What scripts may import unless configured otherwise: data handling, no host-shaped modules
(the sandbox refuses their file and environment access anyway)."""

MIB = 1 << 20


class CodeLimits(BaseModel):
    """How far one script may go; each limit stops the script with an error naming it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_secs: float = Field(default=30.0, gt=0, le=3600)
    """Wall-clock time for the whole script, its tool calls included."""
    cpu_secs: float = Field(default=5.0, gt=0, le=600)
    """Time the script itself computes (waiting for tools does not count)."""
    memory_bytes: int = Field(default=64 * MIB, ge=MIB, le=8192 * MIB)
    """The script's heap."""
    recursion_depth: int = Field(default=200, ge=10, le=10_000)
    output_bytes: int = Field(default=16_384, ge=256, le=10 * MIB)
    """``print`` output kept and sent back; printing more stops the script."""
    result_chars: int = Field(default=64_000, ge=256, le=10 * MIB)
    """The script's value, as compact JSON."""
    tool_calls: int = Field(default=50, ge=1, le=10_000)
    """``call_tool`` calls per script."""


class CodeModeSettings(BaseModel):
    """``code_mode``: scripts run by ``run_code`` (exposure ``code``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    limits: CodeLimits = Field(default_factory=CodeLimits)
    workers: int = Field(default=2, ge=1, le=64)
    """Sandbox worker processes; scripts beyond this many at once wait for a free one."""
    queue_wait_secs: float = Field(default=10.0, gt=0, le=600)
    """How long a script waits for a free worker before it is refused."""
    allowed_modules: tuple[str, ...] = DEFAULT_MODULES
    """Modules scripts may import; each must be one the sandbox has."""

    @field_validator("allowed_modules")
    @classmethod
    def _known_modules(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for index, name in enumerate(value):
            if name not in SANDBOX_MODULES:
                choices = ", ".join(sorted(SANDBOX_MODULES))
                raise ValueError(f"[{index}]: {name!r} is not a module the sandbox has (choose from {choices})")
        return value
