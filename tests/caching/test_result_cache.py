"""The result cache's pure core: keys by tool, canonical arguments and client scope; expiry on
an injected clock; the size bound; hits and misses counted by server."""

from __future__ import annotations

import pytest

from mcp_aggregator.caching import ResultCache, ResultCacheConfig
from mcp_aggregator.caching.cache_stage import scope_of
from mcp_aggregator.caching.result_cache import CacheKey
from mcp_aggregator.caching.result_cache import cache_key as key_of
from mcp_aggregator.errors import ConfigError
from mcp_aggregator.identity import ClientIdentity
from mcp_aggregator.settings import ServerConfig, parse_settings


def cache_key(server: str, tool: str, arguments: dict[str, object] | None, identity: ClientIdentity) -> CacheKey:
    return key_of(server, tool, arguments, scope_of(identity))


ADA = ClientIdentity(name="ada")
BOB = ClientIdentity(name="bob")


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_arguments_in_another_order_make_the_same_key() -> None:
    assert cache_key("s", "t", {"a": 1, "b": [1, {"y": 2, "x": 1}]}, ADA) == cache_key(
        "s", "t", {"b": [1, {"x": 1, "y": 2}], "a": 1}, ADA
    )
    assert cache_key("s", "t", None, ADA) == cache_key("s", "t", {}, ADA)


@pytest.mark.parametrize(
    ("other"),
    [
        ("s2", "t", {"a": 1}, ADA),
        ("s", "t2", {"a": 1}, ADA),
        ("s", "t", {"a": 2}, ADA),
        ("s", "t", {"a": "1"}, ADA),
        ("s", "t", {"a": 1}, BOB),
        ("s", "t", {"a": 1}, ClientIdentity(name="ada", profile="ops")),
        ("s", "t", {"a": 1}, ClientIdentity(name="ada", subject="u-1")),
    ],
)
def test_another_server_tool_argument_or_client_scope_makes_another_key(other: tuple) -> None:  # type: ignore[type-arg]
    assert cache_key("s", "t", {"a": 1}, ADA) != cache_key(*other)


def test_a_result_lives_until_its_ttl_on_the_injected_clock() -> None:
    clock = FakeClock()
    cache = ResultCache(clock)
    key = cache_key("s", "t", {}, ADA)
    assert cache.get(key) is None
    cache.put(key, "result", 60, 10)
    clock.now += 59.9
    assert cache.get(key) == "result"
    clock.now += 0.1
    assert cache.get(key) is None
    assert len(cache) == 0
    assert (cache.hits["s"], cache.misses["s"]) == (1, 2)


def test_the_oldest_result_goes_first_past_the_size_bound() -> None:
    cache = ResultCache(FakeClock(), max_entries=2)
    keys = [cache_key("s", "t", {"n": n}, ADA) for n in range(3)]
    for n, key in enumerate(keys):
        cache.put(key, n, 60, 10)
    assert [cache.get(key) for key in keys] == [None, 1, 2]


def test_the_least_recently_used_results_go_until_the_bytes_fit() -> None:
    cache = ResultCache(FakeClock(), max_bytes=100)
    keys = [cache_key("s", "t", {"n": n}, ADA) for n in range(4)]
    cache.put(keys[0], 0, 60, 40)
    cache.put(keys[1], 1, 60, 40)
    assert cache.get(keys[0]) == 0  # now the most recently used: keys[1] goes first
    cache.put(keys[2], 2, 60, 40)
    assert [cache.get(key) for key in keys[:3]] == [0, None, 2]
    assert cache.bytes == 80
    cache.put(keys[3], 3, 60, 90)  # needs both others gone
    assert [cache.get(key) for key in keys] == [None, None, None, 3]
    assert cache.bytes == 90


def test_a_result_larger_than_the_whole_budget_is_not_cached_and_evicts_nothing() -> None:
    cache = ResultCache(FakeClock(), max_bytes=100)
    small, large = cache_key("s", "t", {"n": 1}, ADA), cache_key("s", "t", {"n": 2}, ADA)
    assert cache.put(small, "small", 60, 50)
    assert not cache.put(large, "large", 60, 101)
    assert (cache.get(small), cache.get(large), cache.bytes) == ("small", None, 50)


def test_putting_a_key_again_counts_its_bytes_once() -> None:
    cache = ResultCache(FakeClock(), max_bytes=100)
    key = cache_key("s", "t", {}, ADA)
    cache.put(key, 1, 60, 60)
    cache.put(key, 2, 60, 70)
    assert (cache.get(key), cache.bytes, len(cache)) == (2, 70, 1)
    cache.forget("s")
    assert cache.bytes == 0


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1000", "serve.result_cache_bytes: Input should be greater than or equal to 1048576"),
        ("-1", "serve.result_cache_bytes: Input should be greater than or equal to 1048576"),
        ("lots", "serve.result_cache_bytes: Input should be a valid integer"),
        ("2199023255553", "serve.result_cache_bytes: Input should be less than or equal to 1099511627776"),
    ],
)
def test_a_wrong_result_cache_budget_is_refused_naming_the_field(value: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_settings(f"serve: {{result_cache_bytes: {value}}}\n")
    assert message in str(caught.value)


def test_the_result_cache_budget_defaults_to_128_mib() -> None:
    assert parse_settings("serve: {}\n").serve.result_cache_bytes == 128 << 20
    assert parse_settings("serve: {result_cache_bytes: 2097152}\n").serve.result_cache_bytes == 2 << 20


def test_forgetting_a_server_drops_only_its_results() -> None:
    cache = ResultCache(FakeClock())
    mine, other = cache_key("s", "t", {}, ADA), cache_key("o", "t", {}, ADA)
    cache.put(mine, 1, 60, 10)
    cache.put(other, 2, 60, 10)
    cache.forget("s")
    assert (cache.get(mine), cache.get(other)) == (None, 2)


def test_the_tools_globs_pick_the_cacheable_tools() -> None:
    config = ResultCacheConfig(ttl_secs=5, tools=("get_*", "lookup"))
    assert [config.covers(t) for t in ("get_user", "lookup", "lookup2", "set_user")] == [True, True, False, False]
    assert ResultCacheConfig(ttl_secs=5).covers("anything")


def stdio(**extra: object) -> dict[str, object]:
    return {"name": "s", "transport": "stdio", "command": "x", **extra}


@pytest.mark.parametrize(
    ("cache", "message"),
    [
        ("{ttl_secs: 0}", "servers[0].cache.ttl_secs: Input should be greater than 0"),
        ("{ttl_secs: -1}", "servers[0].cache.ttl_secs: Input should be greater than 0"),
        ("{}", "servers[0].cache.ttl_secs: Field required"),
        ("{ttl_secs: 5, ttl: 5}", "servers[0].cache.ttl: unknown field"),
        ("{ttl_secs: 5, tools: get_*}", "servers[0].cache.tools: Input should be a valid tuple"),
    ],
)
def test_a_wrong_cache_section_is_refused_naming_its_field(cache: str, message: str) -> None:
    text = f"servers:\n  - {{name: s, transport: stdio, command: x, cache: {cache}}}\n"
    with pytest.raises(ConfigError) as caught:
        parse_settings(text)
    assert message in str(caught.value)


def test_the_cache_section_is_stored_only_when_set_and_reads_back() -> None:
    plain = ServerConfig.model_validate(stdio())
    assert "cache" not in plain.connection_config()
    cached = ServerConfig.model_validate(stdio(cache={"ttl_secs": 30, "tools": ["get_*"]}))
    stored = cached.connection_config()
    assert stored["cache"] == {"ttl_secs": 30, "tools": ["get_*"]}
    again = ServerConfig.model_validate({"name": "s", "transport": "stdio", **stored})
    assert again.cache == cached.cache
