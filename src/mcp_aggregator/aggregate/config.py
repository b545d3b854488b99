"""The ``aggregator:`` section of the configuration, camelCase keys as in the seed.

``AggregatorSettings.from_mapping(raw)`` is the entry point: it turns every validation
problem into a ``ConfigError`` whose path names the field, e.g.
``aggregator.serverRules[1].pattern: invalid regular expression: ...``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from mcp_aggregator.errors import ConfigError

QUERY_PLACEHOLDER = "{query}"
MAX_RESULTS_PLACEHOLDER = "{maxResults}"
MIN_MAX_RESULTS = 10
MAX_MAX_RESULTS = 100

_MODEL_CONFIG = ConfigDict(
    alias_generator=to_camel,
    populate_by_name=True,
    extra="forbid",
    frozen=True,
    allow_inf_nan=False,
)


class ServerRule(BaseModel):
    """If ``pattern`` matches the query (``re.search``, case-insensitive), ask ``servers``."""

    model_config = _MODEL_CONFIG

    pattern: str
    servers: tuple[str, ...] = Field(min_length=1)
    _regex: re.Pattern[str] = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._regex = re.compile(self.pattern, re.IGNORECASE)

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from exc
        return pattern

    @property
    def regex(self) -> re.Pattern[str]:
        return self._regex


class RankingWeights(BaseModel):
    """Weights of the score components.

    Each weight must be non-negative and their sum positive. They are normalised (divided
    by their sum) before use, so ``{keywordMatch: 2}`` alone means "keyword match only" and
    the relevance score stays within [0, 1] whatever the weights add up to.
    """

    model_config = _MODEL_CONFIG

    keyword_match: float = Field(default=0.4, ge=0.0)
    freshness: float = Field(default=0.3, ge=0.0)
    server_reputation: float = Field(default=0.2, ge=0.0)
    length_penalty: float = Field(default=0.1, ge=0.0)

    @model_validator(mode="after")
    def _sum_is_positive(self) -> Self:
        if self.keyword_match + self.freshness + self.server_reputation + self.length_penalty <= 0.0:
            raise ValueError("at least one ranking weight must be greater than 0")
        return self

    def normalised(self) -> tuple[float, float, float, float]:
        """(keywordMatch, freshness, serverReputation, lengthPenalty), summing to 1."""
        raw = (self.keyword_match, self.freshness, self.server_reputation, self.length_penalty)
        total = sum(raw)
        kw, fresh, rep, length = (weight / total for weight in raw)
        return kw, fresh, rep, length


class ServerQuerySettings(BaseModel):
    """How one server is asked, and how much its answers are trusted.

    ``queryTool`` names the tool; the query goes into ``queryArgument``, or
    ``argumentsTemplate`` is sent with every ``{query}`` inside its strings replaced (a
    string that is exactly ``{maxResults}`` becomes the integer). With neither, the
    argument is detected from the tool's input schema. Without ``queryTool`` the tool is
    detected too.
    """

    model_config = _MODEL_CONFIG

    query_tool: str | None = Field(default=None, min_length=1)
    query_argument: str | None = Field(default=None, min_length=1)
    arguments_template: dict[str, Any] | None = None
    reputation: float | None = Field(default=None, ge=0.0, le=1.0)
    query_style: Literal["auto", "semantic", "literal"] = "auto"

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.query_argument is not None and self.arguments_template is not None:
            raise ValueError("give either queryArgument or argumentsTemplate, not both")
        if self.query_tool is None and (self.query_argument is not None or self.arguments_template is not None):
            raise ValueError("queryArgument and argumentsTemplate need queryTool")
        if self.arguments_template is not None and not _mentions_query(self.arguments_template):
            raise ValueError(f"argumentsTemplate must contain the placeholder {QUERY_PLACEHOLDER}")
        return self


class LlmSettings(BaseModel):
    """The LLM-agent mode (seed 002): a model that calls the servers' query tools itself.

    The key is read from the environment variable ``apiKeyEnv`` when a query runs, never
    stored; ``baseUrl`` (else ``ANTHROPIC_BASE_URL``) points at another Messages API.
    ``timeoutSecs`` bounds the whole agent (every turn and tool call); past it, or on any
    API error, the heuristic engine answers instead.
    """

    model_config = _MODEL_CONFIG

    model: str = Field(default="claude-haiku-4-5", min_length=1)
    max_turns: int = Field(default=4, ge=1, le=20)
    max_tokens: int = Field(default=1024, ge=64, le=64_000)
    timeout_secs: float = Field(default=30.0, gt=0.0, le=600.0)
    request_timeout_secs: float = Field(default=20.0, gt=0.0, le=600.0)
    base_url: str | None = Field(default=None, pattern=r"^https?://")
    api_key_env: str = Field(default="ANTHROPIC_API_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")


class AggregatorSettings(BaseModel):
    """Validated ``aggregator:`` section. Durations are seconds; ranges are inclusive.

    ``mode`` picks the heuristic engine (default) or the LLM agent (``llm``).
    ``maxKeywordQueries`` bounds the keyword sub-queries sent to one literal search tool.
    With ``toolSearchSelection``, a query no rule matches goes to the servers whose tools
    the tool search index finds for it (the ``toolSearchK`` best tools), not to all, once
    more than ``toolSearchMinServers`` servers could be asked: tool descriptions say what a
    server can do, not what it holds, so with a few servers asking all finds more (see the
    quality benchmark) and costs little, the calls being concurrent.

    ``totalTimeoutSecs`` may be below ``serverTimeoutSecs``: it then caps the whole query's
    latency and whatever arrived in time is used. ``enabled`` is for the MCP layer (publish
    the tool or not); the engine itself does not look at it.
    """

    model_config = _MODEL_CONFIG

    enabled: bool = True
    default_max_results: int = Field(default=30, ge=MIN_MAX_RESULTS, le=MAX_MAX_RESULTS)
    server_timeout_secs: float = Field(default=3.0, gt=0.0)
    total_timeout_secs: float = Field(default=5.0, gt=0.0)
    dedup_threshold: float = Field(default=0.8, ge=0.0, le=1.0)
    server_rules: tuple[ServerRule, ...] = ()
    ranking_weights: RankingWeights = Field(default_factory=RankingWeights)
    freshness_half_life_days: float = Field(default=30.0, gt=0.0)
    default_reputation: float = Field(default=0.5, ge=0.0, le=1.0)
    length_penalty_start_chars: int = Field(default=2000, ge=1)
    max_result_chars: int = Field(default=10_000, ge=100)
    servers: dict[str, ServerQuerySettings] = Field(default_factory=dict)
    mode: Literal["heuristic", "llm"] = "heuristic"
    llm: LlmSettings = Field(default_factory=LlmSettings)
    max_keyword_queries: int = Field(default=6, ge=1, le=20)
    tool_search_selection: bool = True
    tool_search_k: int = Field(default=10, ge=1, le=100)
    tool_search_min_servers: int = Field(default=8, ge=1)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any] | None, *, path: str = "aggregator") -> AggregatorSettings:
        """Validate the raw section.

        Raises:
            ConfigError: naming the first offending field, e.g.
                ``aggregator.rankingWeights.freshness: Input should be greater than or equal to 0``.
        """
        try:
            return cls.model_validate(dict(raw or {}))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = _format_location(path, first["loc"])
            message = str(first["msg"]).removeprefix("Value error, ")
            if first["type"] == "extra_forbidden":
                message = "unknown field"
            more = exc.error_count() - 1
            suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
            raise ConfigError(message + suffix, path=where) from exc

    def check_server_names(self, known: Collection[str], *, path: str = "aggregator") -> None:
        """Refuse server names in rules or per-server settings that are not configured.

        Raises:
            ConfigError: with a path like ``aggregator.serverRules[0].servers[1]``.
        """
        for rule_index, rule in enumerate(self.server_rules):
            for name_index, name in enumerate(rule.servers):
                if name not in known:
                    raise ConfigError(
                        f"unknown server {name!r}",
                        path=f"{path}.serverRules[{rule_index}].servers[{name_index}]",
                    )
        for name in self.servers:
            if name not in known:
                raise ConfigError(f"unknown server {name!r}", path=f"{path}.servers.{name}")

    def reputation_of(self, server: str) -> float:
        configured = self.servers.get(server)
        if configured is not None and configured.reputation is not None:
            return configured.reputation
        return self.default_reputation


def _mentions_query(value: object) -> bool:
    if isinstance(value, str):
        return QUERY_PLACEHOLDER in value
    if isinstance(value, Mapping):
        return any(_mentions_query(item) for item in value.values())
    if isinstance(value, list):
        return any(_mentions_query(item) for item in value)
    return False


def _format_location(root: str, loc: tuple[int | str, ...]) -> str:
    out = root
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out
