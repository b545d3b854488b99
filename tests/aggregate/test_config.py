from typing import Any

import pytest
import yaml

from mcp_aggregator.aggregate import AggregatorSettings, RankingWeights, ServerQuerySettings
from mcp_aggregator.errors import ConfigError

SEED_EXAMPLE = """
aggregator:
  enabled: true
  defaultMaxResults: 30
  serverTimeoutSecs: 3
  totalTimeoutSecs: 5
  dedupThreshold: 0.8

  serverRules:
    - pattern: "documentation|library|package|module"
      servers: ["context7"]
    - pattern: "code|class|function|method|variable"
      servers: ["serena"]
    - pattern: ".*"
      servers: ["context7", "serena", "memory"]

  rankingWeights:
    keywordMatch: 0.4
    freshness: 0.3
    serverReputation: 0.2
    lengthPenalty: 0.1
"""


def test_empty_section_gives_the_documented_defaults() -> None:
    settings = AggregatorSettings.from_mapping(None)
    assert settings.enabled is True
    assert settings.default_max_results == 30
    assert settings.server_timeout_secs == 3.0
    assert settings.total_timeout_secs == 5.0
    assert settings.dedup_threshold == 0.8
    assert settings.server_rules == ()
    assert settings.ranking_weights == RankingWeights(
        keyword_match=0.4, freshness=0.3, server_reputation=0.2, length_penalty=0.1
    )
    assert settings.freshness_half_life_days == 30.0
    assert settings.default_reputation == 0.5
    assert settings.length_penalty_start_chars == 2000
    assert settings.max_result_chars == 10_000
    assert settings.servers == {}
    assert settings.mode == "heuristic"
    assert (settings.llm.model, settings.llm.max_turns, settings.llm.timeout_secs) == ("claude-haiku-4-5", 4, 30.0)
    assert settings.llm.api_key_env == "ANTHROPIC_API_KEY"
    assert (settings.max_keyword_queries, settings.tool_search_selection, settings.tool_search_k) == (6, True, 10)
    assert settings.tool_search_min_servers == 8


def test_seed_example_parses_with_its_camel_case_keys() -> None:
    settings = AggregatorSettings.from_mapping(yaml.safe_load(SEED_EXAMPLE)["aggregator"])
    assert [rule.servers for rule in settings.server_rules] == [
        ("context7",),
        ("serena",),
        ("context7", "serena", "memory"),
    ]
    assert settings.ranking_weights.normalised() == pytest.approx((0.4, 0.3, 0.2, 0.1))


def test_snake_case_names_are_accepted_when_building_in_code() -> None:
    settings = AggregatorSettings(server_timeout_secs=0.2, servers={"m": ServerQuerySettings(reputation=1.0)})
    assert settings.server_timeout_secs == 0.2
    assert settings.reputation_of("m") == 1.0
    assert settings.reputation_of("other") == 0.5


def test_per_server_query_settings_parse() -> None:
    settings = AggregatorSettings.from_mapping(
        {
            "servers": {
                "memory": {"queryTool": "search_nodes", "queryArgument": "query", "reputation": 0.8},
                "docs": {
                    "queryTool": "lookup",
                    "argumentsTemplate": {"topic": "{query}", "limit": "{maxResults}"},
                },
            }
        }
    )
    assert settings.servers["memory"].query_tool == "search_nodes"
    assert settings.servers["docs"].arguments_template == {"topic": "{query}", "limit": "{maxResults}"}


def test_rules_match_case_insensitively() -> None:
    settings = AggregatorSettings.from_mapping({"serverRules": [{"pattern": "react", "servers": ["docs"]}]})
    assert settings.server_rules[0].regex.search("How do REACT hooks work?")


def test_weights_are_normalised_so_any_positive_sum_works() -> None:
    assert RankingWeights(keyword_match=2, freshness=0, server_reputation=0, length_penalty=0).normalised() == (
        1.0,
        0.0,
        0.0,
        0.0,
    )
    assert sum(RankingWeights(keyword_match=3, freshness=1, server_reputation=1, length_penalty=1).normalised()) == (
        pytest.approx(1.0)
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {
                "serverRules": [
                    {"pattern": "ok", "servers": ["a"]},
                    {"pattern": "(unclosed", "servers": ["b"]},
                ]
            },
            "aggregator.serverRules[1].pattern: invalid regular expression '(unclosed': "
            "missing ), unterminated subpattern at position 0",
        ),
        ({"serverRules": [{"pattern": "x", "servers": []}]}, "aggregator.serverRules[0].servers: "),
        (
            {"defaultMaxResults": 500},
            "aggregator.defaultMaxResults: Input should be less than or equal to 100",
        ),
        (
            {"defaultMaxResults": 5},
            "aggregator.defaultMaxResults: Input should be greater than or equal to 10",
        ),
        ({"dedupThreshold": 1.5}, "aggregator.dedupThreshold: Input should be less than or equal to 1"),
        ({"dedupThreshold": float("nan")}, "aggregator.dedupThreshold: Input should be a finite number"),
        ({"serverTimeoutSecs": 0}, "aggregator.serverTimeoutSecs: Input should be greater than 0"),
        ({"totalTimeoutSecs": -1}, "aggregator.totalTimeoutSecs: Input should be greater than 0"),
        (
            {"rankingWeights": {"freshness": -0.1}},
            "aggregator.rankingWeights.freshness: Input should be greater than or equal to 0",
        ),
        (
            {
                "rankingWeights": {
                    "keywordMatch": 0,
                    "freshness": 0,
                    "serverReputation": 0,
                    "lengthPenalty": 0,
                }
            },
            "aggregator.rankingWeights: at least one ranking weight must be greater than 0",
        ),
        ({"rankingWeights": {"recency": 1}}, "aggregator.rankingWeights.recency: unknown field"),
        ({"bogus": 1}, "aggregator.bogus: unknown field"),
        (
            {"servers": {"m": {"queryTool": "t", "queryArgument": "q", "argumentsTemplate": {"q": "{query}"}}}},
            "aggregator.servers.m: give either queryArgument or argumentsTemplate, not both",
        ),
        (
            {"servers": {"m": {"queryArgument": "q"}}},
            "aggregator.servers.m: queryArgument and argumentsTemplate need queryTool",
        ),
        (
            {"servers": {"m": {"queryTool": "t", "argumentsTemplate": {"q": "fixed"}}}},
            "aggregator.servers.m: argumentsTemplate must contain the placeholder {query}",
        ),
        ({"servers": {"m": {"reputation": 2}}}, "aggregator.servers.m.reputation: Input should be less than"),
        (
            {"servers": {"m": {"queryStyle": "fuzzy"}}},
            "aggregator.servers.m.queryStyle: Input should be 'auto', 'semantic' or 'literal'",
        ),
        ({"mode": "agent"}, "aggregator.mode: Input should be 'heuristic' or 'llm'"),
        ({"llm": {"model": ""}}, "aggregator.llm.model: String should have at least 1 character"),
        ({"llm": {"maxTurns": 0}}, "aggregator.llm.maxTurns: Input should be greater than or equal to 1"),
        ({"llm": {"maxTurns": 50}}, "aggregator.llm.maxTurns: Input should be less than or equal to 20"),
        ({"llm": {"timeoutSecs": 0}}, "aggregator.llm.timeoutSecs: Input should be greater than 0"),
        ({"llm": {"requestTimeoutSecs": "soon"}}, "aggregator.llm.requestTimeoutSecs: Input should be a valid number"),
        ({"llm": {"baseUrl": "localhost:8080"}}, "aggregator.llm.baseUrl: String should match pattern"),
        ({"llm": {"apiKeyEnv": "MY-KEY"}}, "aggregator.llm.apiKeyEnv: String should match pattern"),
        ({"llm": {"apiKey": "sk-..."}}, "aggregator.llm.apiKey: unknown field"),
        ({"maxKeywordQueries": 0}, "aggregator.maxKeywordQueries: Input should be greater than or equal to 1"),
        ({"toolSearchK": 0}, "aggregator.toolSearchK: Input should be greater than or equal to 1"),
        (
            {"toolSearchMinServers": 0},
            "aggregator.toolSearchMinServers: Input should be greater than or equal to 1",
        ),
    ],
)
def test_invalid_settings_raise_config_error_naming_the_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        AggregatorSettings.from_mapping(raw)
    assert str(caught.value).startswith(message)


def test_several_problems_are_counted_in_the_message() -> None:
    with pytest.raises(ConfigError) as caught:
        AggregatorSettings.from_mapping({"dedupThreshold": 2, "defaultMaxResults": 1, "bogus": 0})
    assert str(caught.value).endswith("(and 2 more problems)")


def test_config_error_path_uses_the_given_root() -> None:
    with pytest.raises(ConfigError) as caught:
        AggregatorSettings.from_mapping({"dedupThreshold": 2}, path="profiles.fast.aggregator")
    assert caught.value.path == "profiles.fast.aggregator.dedupThreshold"


def test_total_timeout_below_server_timeout_is_allowed_as_a_latency_cap() -> None:
    settings = AggregatorSettings.from_mapping({"serverTimeoutSecs": 3, "totalTimeoutSecs": 1})
    assert settings.total_timeout_secs < settings.server_timeout_secs


def test_rules_naming_unconfigured_servers_are_refused_with_their_path() -> None:
    settings = AggregatorSettings.from_mapping(yaml.safe_load(SEED_EXAMPLE)["aggregator"])
    settings.check_server_names({"context7", "serena", "memory"})
    with pytest.raises(ConfigError) as caught:
        settings.check_server_names({"context7", "memory"})
    assert caught.value.path == "aggregator.serverRules[1].servers[0]"
    assert str(caught.value) == "aggregator.serverRules[1].servers[0]: unknown server 'serena'"


def test_per_server_settings_for_unconfigured_servers_are_refused() -> None:
    settings = AggregatorSettings.from_mapping({"servers": {"ghost": {"reputation": 1}}})
    with pytest.raises(ConfigError) as caught:
        settings.check_server_names({"memory"})
    assert caught.value.path == "aggregator.servers.ghost"


def test_settings_are_immutable() -> None:
    settings = AggregatorSettings()
    with pytest.raises(ValueError, match="frozen"):
        setattr(settings, "dedup_threshold", 0.5)  # noqa: B010
