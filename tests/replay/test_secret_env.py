"""One rule for what looks like a secret, in the environment of in-process trials and run specs.

Names the old rules missed (``STRIPE_SK``, ``SENTRY_DSN``) and URLs with a
password (``DATABASE_URL``) are hidden from an in-process sandboxed agent and
from a run's stored spec; the shell's ``PWD`` and a URL without one stay.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from examples.shop import make_tools
from replay import AgentSettings, McpServer, RunSpec, load_case
from replay.modes import Environment, sandbox

CASE = load_case(Path(__file__).parents[2] / "examples" / "shop" / "cases" / "refund-4812.yaml")

PLANTED = {
    "DATABASE_URL": "postgres://app:pw-9f8e7d6c5b4a@db.internal/shop",
    "REDIS_URL": "redis://:cache-5b4a3c2d1e@cache:6379/0",
    "STRIPE_SK": "sk_live_51HxYzAbCdEf",
    "SENTRY_DSN": "https://abc123def456@o1.ingest.sentry.io/42",
    "GOOGLE_APPLICATION_CREDENTIALS": "/etc/gcp/service-account.json",
    "DB_PWD": "hunter2-hunter2",
}
KEPT = {
    "PWD": "/work/project",
    "ANALYTICS_URL": "sqlite:///data/analytics.db",
    "TOKENIZERS_PARALLELISM": "false",
    "SHOP_REGION": "eu",
}


def test_an_in_process_trial_does_not_see_secrets_the_old_rule_missed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {**PLANTED, **KEPT}.items():
        monkeypatch.setenv(name, value)
    seen: dict[str, str | None] = {}

    def nosy(instruction: str, env: Environment) -> str:
        seen.update({name: os.environ.get(name) for name in [*PLANTED, *KEPT]})
        seen["everything"] = json.dumps(dict(os.environ))
        return "done"

    sandbox(CASE, nosy, make_tools, tmp_path / "env.cassette", llm_base_url="http://127.0.0.1:9/v1")
    everything = seen.pop("everything") or ""
    assert seen == {**dict.fromkeys(PLANTED), **KEPT}
    assert [v for v in PLANTED.values() if v in everything] == []
    assert {name: os.environ[name] for name in PLANTED} == PLANTED  # given back after the trial


def test_a_run_spec_hides_urls_with_a_password_and_names_the_old_rule_missed() -> None:
    database = PLANTED["DATABASE_URL"]
    spec = RunSpec(
        "hidden",
        ["case.yaml"],
        "sandbox",
        agent=AgentSettings(
            "m:f",
            "m:t",
            settings={"db": database, "stripe_sk": PLANTED["STRIPE_SK"], "temperature": 0},
            mcp_servers={
                "shop": McpServer(
                    command=("srv", "--db", database, f"--cache={PLANTED['REDIS_URL']}"),
                    env={"SENTRY_DSN": PLANTED["SENTRY_DSN"], "LANG": "C"},
                )
            },
        ),
    )
    stored = json.dumps(spec.to_stored())
    assert [v for v in PLANTED.values() if v in stored] == []
    assert set(spec.secrets()) >= {database, PLANTED["STRIPE_SK"], PLANTED["SENTRY_DSN"]}
    back = RunSpec.from_stored(json.loads(stored))
    assert back.agent.settings["temperature"] == 0
    missing = back.missing_secrets()
    assert "`agent.settings` db=..." in missing
    assert "`agent.settings` stripe_sk=..." in missing
