"""``settings_view``: every effective setting with its source, secrets shown as such (pure)."""

from __future__ import annotations

from mcp_aggregator.admin.settings_routes import SECRET_SHOWN, settings_view
from mcp_aggregator.settings import Settings


def test_each_setting_says_whether_the_file_the_environment_or_the_default_gave_it() -> None:
    settings = Settings.model_validate(
        {
            "serve": {"port": 9000, "admin_token": "${GATEWAY_ADMIN_TOKEN}"},
            "profiles": [{"name": "ops"}],
            "clients": [{"name": "bot", "token": "bot-token-0123456789abcdef", "profiles": ["ops"]}],
            "servers": [{"name": "alpha", "transport": "stdio", "command": "x", "env": {"KEY": "sk-live-1234567890"}}],
        }
    )
    rows = {row.path: row for row in settings_view(settings).settings}
    assert (rows["serve.port"].value, rows["serve.port"].source) == (9000, "file")
    assert rows["serve.host"].source == "default"
    token = rows["serve.admin_token"]
    assert (token.value, token.source, token.secret) == (SECRET_SHOWN, "environment", True)
    assert rows["clients[0].token"].value == SECRET_SHOWN
    assert rows["clients[0].name"].value == "bot"
    assert not any(path.startswith("servers") for path in rows)
    shown = str([row.model_dump() for row in rows.values()])
    assert "bot-token" not in shown and "sk-live" not in shown


def test_the_view_counts_the_servers_and_names_no_file_for_settings_built_in_code() -> None:
    view = settings_view(Settings.model_validate({"servers": [{"name": "a", "transport": "stdio", "command": "x"}]}))
    assert (view.file, view.servers) == (None, 1)
