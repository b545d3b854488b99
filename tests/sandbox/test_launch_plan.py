"""The pure part: merging a server's sandbox over the default, and turning it into a plan."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from mcp_aggregator.errors import SandboxError
from mcp_aggregator.sandbox import NetworkMode, SandboxConfig
from mcp_aggregator.sandbox.cgroup_limits import counter
from mcp_aggregator.sandbox.launch_plan import Entry, HostFacts, allow_list_rules, outbound_rules, plan_launch
from mcp_aggregator.sandbox.runtime_paths import prefix_of
from mcp_aggregator.sandbox.sandbox_launch import SandboxLaunch
from mcp_aggregator.sandbox.sandbox_policy import DEFAULT_MEMORY_MB, SandboxSite, effective
from mcp_aggregator.settings import ServerConfig

FACTS = HostFacts(
    bwrap="/usr/bin/bwrap", slirp4netns="/usr/bin/slirp4netns", nft="/usr/sbin/nft", nsenter="/x", cgroups="v2"
)
ENTRY = Entry("notes", "/opt/venv/bin/python", ("-m", "srv"), {"TOKEN": "t"}, "/srv/app", "/srv")


def argv_pairs(argv: tuple[str, ...], flag: str) -> list[str]:
    return [argv[i + 1] for i, item in enumerate(argv) if item == flag]


@pytest.mark.parametrize(
    ("defaults", "own", "expected"),
    [
        (SandboxConfig(), None, (True, False, (), NetworkMode.OUTBOUND, DEFAULT_MEMORY_MB)),
        (SandboxConfig(enabled=False), None, (False, True, (), NetworkMode.OUTBOUND, DEFAULT_MEMORY_MB)),
        (SandboxConfig(enabled=False), SandboxConfig(enabled=True), (True, True, (), NetworkMode.OUTBOUND, 2048)),
        (
            SandboxConfig(read=("/a",)),
            SandboxConfig(read=("/b", "/a")),
            (True, False, ("/a", "/b"), NetworkMode.OUTBOUND, 2048),
        ),
        (SandboxConfig(network="none", memory_mb=64), SandboxConfig(), (True, False, (), NetworkMode.NONE, 64)),
        (SandboxConfig(network="none"), SandboxConfig(network="host"), (True, False, (), NetworkMode.HOST, 2048)),
    ],
)
def test_a_servers_own_sandbox_wins_field_by_field_and_grants_add_up(
    defaults: SandboxConfig, own: SandboxConfig | None, expected: tuple[object, ...]
) -> None:
    merged = effective(defaults, own)
    assert (merged.enabled, merged.enabled_explicit, merged.read, merged.network, merged.limits.memory_mb) == expected


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("network", "internet", "must be outbound, none, host or a list of host:port"),
        ("network", ["example.com"], "must be host:port"),
        ("network", ["example.com:70000"], "port must be in 1..65535"),
        ("memory_mb", 0, "greater than 0"),
        ("processes", -1, "greater than 0"),
        ("cpu_secs", 0, "greater than 0"),
        ("read", [""], "non-empty string"),
        ("memory_mb", True, "must be a whole number, got True"),
        ("processes", False, "must be a whole number, got False"),
        ("cpu_secs", 2.5, "must be a whole number, got 2.5"),
        ("memory_mb", 2**50, "less than or equal to 1048576"),
        ("processes", 2**40, "less than or equal to 4194304"),
        ("cpu_secs", 2**70, "less than or equal to 31622400"),
        ("network", ["*.example.com:443"], "wildcards are not supported"),
        ("network", ["[::1]:443"], "IPv6 addresses are not supported"),
        ("network", ["localhost:8080"], "loopback is never reachable"),
        ("network", ["127.0.0.53:53"], "loopback is never reachable"),
        ("network", ["bad_host!:443"], "must be host:port with a host name or IPv4 address"),
    ],
)
def test_a_bad_sandbox_setting_is_refused_naming_the_field(field: str, value: object, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ServerConfig.model_validate({"name": "s", "transport": "stdio", "command": "x", "sandbox": {field: value}})
    assert message in str(caught.value)
    assert f"sandbox.{field}" in str(caught.value)


def test_a_sandbox_on_an_http_server_is_refused() -> None:
    with pytest.raises(ValidationError, match="sandbox: only allowed for transport stdio"):
        ServerConfig.model_validate(
            {"name": "s", "transport": "http", "base_url": "http://127.0.0.1:1/mcp", "sandbox": {"read": ["/"]}}
        )


def test_the_plan_binds_runtime_cwd_and_grants_and_masks_the_data_dir_inside_a_grant() -> None:
    entry = Entry(
        "notes", "/opt/venv/bin/python", (), {}, "/srv/app", "/srv",
        read=("/srv",), write=("/srv/app/out",), runtime=("/opt/venv",),
    )  # fmt: skip
    plan = plan_launch(
        entry, effective(SandboxConfig(), None), FACTS, root="/srv/data/sandbox", hidden=("/srv/data/", "/srv/gw.yaml")
    )
    argv = plan.argv
    assert {"/opt/venv", "/srv"} <= set(argv_pairs(argv, "--ro-bind"))
    assert "/srv/app" not in argv_pairs(argv, "--ro-bind")  # inside the read grant already
    assert argv_pairs(argv, "--tmpfs") == ["/tmp", "/srv/data"]
    assert argv[argv.index("/dev/null") + 1] == "/srv/gw.yaml"
    # The grant of /srv comes before the mask of /srv/data, the write grant below it after.
    order = [argv.index("/srv"), argv.index("/srv/data"), argv.index("/srv/app/out")]
    assert order == sorted(order)
    assert argv[argv.index("--chdir") + 1] == "/srv/app"
    assert argv[-2:] == ("--", "/opt/venv/bin/python")
    assert "--unshare-net" in argv and "--cap-drop" in argv and "--unshare-pid" in argv
    assert plan.home == "/srv/data/sandbox/notes/home"


def test_the_environment_is_the_entrys_plus_a_minimal_path_home_and_lang() -> None:
    plan = plan_launch(ENTRY, effective(SandboxConfig(), None), FACTS, root="/d/sandbox", hidden=())
    assert dict(plan.env) == {
        "PATH": "/opt/venv/bin:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/d/sandbox/notes/home",
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        "TOKEN": "t",
    }


@pytest.mark.parametrize(
    ("network", "unshares", "rules", "resolver"),
    [
        ("outbound", True, "reject", True),
        ("none", True, None, False),
        ("host", False, None, False),
        (["api.example.com:443"], True, "tcp dport 443 accept", True),
    ],
)
def test_each_network_mode_plans_its_namespace_rules_and_resolver(
    network: object, unshares: bool, rules: str | None, resolver: bool
) -> None:
    sandbox = effective(SandboxConfig.model_validate({"network": network}), None)
    plan = plan_launch(ENTRY, sandbox, FACTS, root="/d", hidden=(), allowed=(("93.184.216.34", 443),))
    assert ("--unshare-net" in plan.argv) is unshares
    if rules is None:
        assert plan.net is None
    else:
        assert plan.net is not None and rules in plan.net.rules
    assert (plan.resolv_conf is not None) is resolver


def test_outbound_rules_refuse_private_ranges_and_the_hosts_addresses_but_allow_dns() -> None:
    rules = outbound_rules(("192.0.2.2",))
    assert "10.0.0.0/8" in rules and "169.254.0.0/16" in rules and "127.0.0.0/8" in rules
    assert "ip daddr { 192.0.2.2 } reject" in rules
    assert rules.index("udp dport 53 accept") < rules.index("10.0.0.0/8")
    allow = allow_list_rules((("93.184.216.34", 443),))
    assert "ip daddr 93.184.216.34 tcp dport 443 accept" in allow
    assert allow.index("tcp dport 443 accept") < allow.index("    reject")
    assert "dport 53" not in allow  # no DNS: a query can carry data to any name server


def test_an_allow_list_gets_its_names_from_a_hosts_file_of_its_own() -> None:
    sandbox = effective(SandboxConfig(network=["api.example.com:443"]), None)
    plan = plan_launch(
        ENTRY,
        sandbox,
        FACTS,
        root="/d/sandbox",
        hidden=(),
        allowed=(("93.184.216.34", 443),),
        names=(("api.example.com", "93.184.216.34"),),
    )
    assert plan.hosts == ("/d/sandbox/notes/hosts", "127.0.0.1 localhost\n93.184.216.34 api.example.com\n")
    argv = plan.argv
    assert "/d/sandbox/notes/hosts" in argv_pairs(argv, "--ro-bind")
    # Bound after the host's /etc/hosts, so it is the one the server reads.
    assert argv.index("/d/sandbox/notes/hosts") > argv.index("/etc/hosts")
    assert plan.net is not None and "dport 53" not in plan.net.rules


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/opt/venv/bin/python", "/opt/venv"),
        ("/work/upstreams/node_modules/.bin/mcp-server-memory", "/work/upstreams/node_modules"),
        ("/root/.local/bin/mcp-server-time", "/root/.local/bin/mcp-server-time"),  # never all of ~/.local
        ("/root/tool", "/root/tool"),
        ("/srv/app/server.js", "/srv/app"),
    ],
)
def test_a_commands_installation_is_the_folder_above_bin_but_never_the_home(path: str, expected: str) -> None:
    assert str(prefix_of(Path(path), Path("/root"))) == expected


def test_cgroup_counters_are_read_by_key() -> None:
    assert counter("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n", "oom_kill") == 1
    assert counter("max 0\n", "max") == 0
    assert counter("", "max") == 0


def launch(tmp_path: Path, sandbox: SandboxConfig, facts: HostFacts) -> SandboxLaunch:
    site = SandboxSite(SandboxConfig(), tmp_path / "data")
    return SandboxLaunch("notes", "/bin/true", (), {}, None, effective(site.defaults, sandbox), site, {}, facts)


def test_a_grant_that_does_not_exist_fails_the_start_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match=r"notes: sandbox.write\[1\]: '/no/such/dir' does not exist"):
        launch(tmp_path, SandboxConfig(write=(str(tmp_path), "/no/such/dir")), FACTS).prepare()


def test_a_missing_bwrap_is_a_warning_by_default_and_an_error_when_the_sandbox_was_asked_for(tmp_path: Path) -> None:
    bare = HostFacts(bwrap=None, slirp4netns=None, nft=None, nsenter=None, cgroups=None)
    plan = launch(tmp_path, SandboxConfig(), bare).prepare()
    assert not plan.sandboxed and plan.warnings == ("runs unsandboxed: bwrap not installed",)
    with pytest.raises(SandboxError, match=r"sandbox\.enabled: bwrap \(bubblewrap\) is not installed"):
        launch(tmp_path, SandboxConfig(enabled=True), bare).prepare()


def test_a_missing_network_tool_fails_a_server_whose_network_was_written(tmp_path: Path) -> None:
    no_slirp = HostFacts(bwrap="/usr/bin/bwrap", slirp4netns=None, nft="/usr/sbin/nft", nsenter="/x", cgroups="v2")
    with pytest.raises(SandboxError, match=r"sandbox\.network: slirp4netns not installed"):
        launch(tmp_path, SandboxConfig(network="outbound"), no_slirp).prepare()
    with pytest.raises(SandboxError, match=r"sandbox\.network: slirp4netns not installed"):
        launch(tmp_path, SandboxConfig(network=["example.com:443"]), no_slirp).prepare()
    assert launch(tmp_path, SandboxConfig(network="none"), no_slirp).prepare().sandboxed


def test_without_network_tools_the_default_keeps_the_filesystem_sandbox_and_says_the_network_is_shared(
    tmp_path: Path,
) -> None:
    no_slirp = HostFacts(bwrap="/usr/bin/bwrap", slirp4netns=None, nft=None, nsenter="/x", cgroups="v2")
    started = launch(tmp_path, SandboxConfig(), no_slirp)
    plan = started.prepare()
    assert plan.sandboxed and plan.net is None
    assert "--unshare-net" not in plan.argv
    assert plan.warnings == ("network not confined: slirp4netns, nft not installed, so it shares the host's network",)
    assert started.sandbox.network is NetworkMode.HOST


def test_explicit_limits_without_a_cgroup_fail_and_default_ones_warn(tmp_path: Path) -> None:
    no_cgroup = HostFacts(bwrap="/usr/bin/bwrap", slirp4netns="/s", nft="/n", nsenter="/x", cgroups=None)
    with pytest.raises(SandboxError, match="no writable cgroup"):
        launch(tmp_path, SandboxConfig(memory_mb=64), no_cgroup).prepare()
    plan = launch(tmp_path, SandboxConfig(), no_cgroup).prepare()
    assert plan.warnings == ("memory and process limits not enforced: no writable cgroup",)
