"""A run's stored spec holds no secret; ``restored`` takes them back for ``--resume``."""

from __future__ import annotations

import json

import pytest

from recorder import ConfigError
from replay import AgentSettings, JudgeSettings, LlmSettings, McpServer, RunSpec, UserSettings

SECRETS = {
    "llm": "llm-password-1",
    "judge": "judge-password-2",
    "user": "user-password-3",
    "setting": "sk-setting-4",
    "server_url": "url-token-5",
    "server_env": "env-token-6",
    "server_arg": "arg-key-7",
    "server_eq": "eq-key-8",
    "allowed": "allowed-9-value",
}


def _spec() -> RunSpec:
    servers = {
        "remote": McpServer(url=f"https://bot:{SECRETS['server_url']}@mcp.example/mcp"),
        "local": McpServer(
            command=(
                "srv",
                "--api-key",
                SECRETS["server_arg"],
                f"--token={SECRETS['server_eq']}",
                "--db",
                "x.db",
            ),
            env={"SERVICE_TOKEN": SECRETS["server_env"], "LANG": "C"},
        ),
    }
    return RunSpec(
        name="r",
        cases=["c.yaml"],
        mode="sandbox",
        agent=AgentSettings(
            "m:f",
            "m:t",
            settings={"api_key": SECRETS["setting"], "temperature": 0},
            allow_env=["MY_TOKEN"],
            mcp_servers=servers,
        ),
        llm=LlmSettings(url=f"http://u:{SECRETS['llm']}@127.0.0.1:1/v1"),
        judge=JudgeSettings(url=f"http://j:{SECRETS['judge']}@127.0.0.1:2/v1"),
        user=UserSettings(url=f"http://s:{SECRETS['user']}@127.0.0.1:3/v1"),
    )


def test_the_stored_spec_holds_no_secret_and_says_which_to_give_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_TOKEN", SECRETS["allowed"])
    spec = _spec()
    stored = json.dumps(spec.to_stored())
    assert [name for name, value in SECRETS.items() if value in stored] == []
    assert set(SECRETS.values()) <= set(spec.secrets())
    back = RunSpec.from_stored(json.loads(stored))
    assert back.missing_secrets() == [  # the settings (replay run says its options)
        "`llm.url`",
        "`judge.url`",
        "`user.url`",
        "`agent.settings` api_key=...",
        "`agent.mcp_servers` remote=...",
        "`agent.mcp_servers` local=... `agent.mcp_servers.env` local:SERVICE_TOKEN=...",
        "`agent.mcp_servers` local=...",
    ]
    with pytest.raises(ConfigError, match=r"give `llm\.url`, `judge\.url`"):
        back.restored()
    again = back.restored(
        llm_url=spec.llm.url,
        judge_url=spec.judge.url,
        user_url=spec.user.url,
        settings={"api_key": SECRETS["setting"]},
        mcp_servers=spec.agent.mcp_servers,
    )
    assert again == spec


def test_a_value_given_again_must_be_the_runs() -> None:
    back = RunSpec.from_stored(_spec().to_stored())
    with pytest.raises(ConfigError, match=r"`llm\.url` is not the run's"):
        back.restored(llm_url="http://u:x@127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match=r"`agent\.settings` temperature is not the run's"):
        back.restored(settings={"temperature": 1})


def test_settings_are_secret_by_their_words_not_substrings() -> None:
    settings = {"max_tokens": 4096, "apiKey": "k" * 12}
    spec = RunSpec("r", [], "sandbox", agent=AgentSettings(settings=settings))
    stored = spec.to_stored()["agent"]["settings"]
    assert stored == {"max_tokens": 4096, "apiKey": "[REDACTED]"}
