"""No secret a run is given reaches any byte it writes: cassettes, store, reports, terminal.

Planted: URL credentials of ``--llm-url``, a ``--set api_key``, an ``--allow-env``
value, a ``--secret-env`` value. The agent (``tests.cli.secret_agents``) sends them
as its LLM key, in its answer, as a tool argument, in a tool's result and error,
and back to the model in the next request. ``--resume`` takes them again.
"""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest

from recorder import PLACEHOLDER, ToolEvent, read_cassette
from recorder._codec import MAGIC, decompressed
from replay import Store
from replay.stub_llm import Reply, ScriptedPolicy, StubLLM, ToolCall
from tests.helpers import replay

AGENT = [
    "--agent",
    "tests.cli.secret_agents:agent",
    "--tools",
    "tests.cli.secret_agents:make_tools",
    "--isolation",
    "none",
]
POLICY = [
    Reply(tool_calls=(ToolCall("vault", {}),)),
    Reply(tool_calls=(ToolCall("charge", {"card": "4242"}),)),
    Reply(content="charged"),
]


def _secret(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex}"


def _case(folder: Path) -> str:
    (folder / "notes.sql").write_text(
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);\n"
    )
    path = folder / "pay.yaml"
    path.write_text(
        "id: pay\ninstruction: charge card 4242\nfixture: notes.sql\n"
        'assert:\n  - answer contains "charged"\n'
    )
    return str(path)


def _bytes_under(folder: Path) -> bytes:
    """Every file under ``folder``, cassettes' record streams decompressed."""
    out = []
    for path in folder.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        out.append(data)
        if data.startswith(MAGIC):
            out.append(decompressed(data))
    return b"\n".join(out)


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    values = {
        "password": _secret("pw"),
        "api_key": _secret("sk"),
        "token": _secret("tok"),
        "payment": _secret("pay"),
    }
    monkeypatch.setenv("MY_TOKEN", values["token"])
    monkeypatch.setenv("PAYMENT_CRED", values["payment"])
    return values


def test_planted_secrets_reach_no_byte_the_run_writes_and_resume_takes_them_again(
    tmp_path: Path, planted: dict[str, str]
) -> None:
    case, store, out = _case(tmp_path), str(tmp_path / "results.db"), tmp_path
    with StubLLM(ScriptedPolicy(POLICY)) as llm:
        url = llm.openai_base_url.replace("http://", f"http://svc:{planted['password']}@")
        secrets = ["--llm-url", url, "--set", f"api_key={planted['api_key']}"]
        given = [*secrets, "--allow-env", "MY_TOKEN", "--secret-env", "PAYMENT_CRED"]
        common = ["--run", "pay", "--store", store, "--trials", "2"]
        code, said, err = replay("run", case, *common, *AGENT, *given)
        assert code == 0, err
        (trial, _) = Store(store).trials("pay")
        cassette = Path(trial.cassette)
        shown = [replay("show", str(cassette)), replay("show", str(cassette), "--json")]
        shown += [replay("report", "pay", "--store", store)]
        shown += [replay("report", "pay", "--store", store, "--json")]
        assert replay("show", str(cassette), "--html", str(out / "t.html"))[0] == 0
        assert replay("report", "pay", "--store", store, "--html", str(out / "r.html"))[0] == 0

        # The agent did carry every secret: to its tools, its answer, its model.
        calls = [e for e in read_cassette(cassette).events if isinstance(e, ToolEvent)]
        assert [c.name for c in calls] == ["vault", "charge"]
        assert calls[1].args == {"card": "4242", "token": PLACEHOLDER}
        assert calls[1].error is not None and PLACEHOLDER in calls[1].error.message
        assert trial.verdict == "pass"

        written = _bytes_under(tmp_path) + said.encode() + err.encode()
        written += b"".join((o + e).encode() for _, o, e in shown)
        with sqlite3.connect(store) as db:  # the store's rows, as SQL sees them
            written += "\n".join(str(r) for r in db.iterdump()).encode()
        for name, value in planted.items():
            assert value.encode() not in written, f"{name} reached disk or the terminal"

        # --resume: the secrets are not stored, so they are given again, unchanged.
        code, _, err = replay("run", "--resume", "--run", "pay", "--store", store)
        assert code == 2 and "--llm-url" in err and "--set api_key=..." in err
        assert len(err.strip().splitlines()) == 1
        wrong = ["--llm-url", llm.openai_base_url.replace("127.0.0.1", "localhost")]
        code, _, err = replay("run", "--resume", "--run", "pay", "--store", store, *wrong)
        assert code == 2 and "--llm-url is not the run's" in err
        code, _, err = replay("run", "--resume", "--run", "pay", "--store", store, *secrets)
        assert code == 0, err


def test_a_bad_redact_tool_path_is_refused_before_the_run(tmp_path: Path) -> None:
    code, _, err = replay(
        "run", _case(tmp_path), "--run", "r", "--store", str(tmp_path / "s.db"), *AGENT,
        "--llm-url", "http://127.0.0.1:9/v1", "--no-llm-check", "--redact-tool", "vault.token",
    )  # fmt: skip
    assert code == 2 and "TOOL.args.PATH" in err
    assert not (tmp_path / "s.db").exists() or Store(tmp_path / "s.db").run("r") is None


def test_redact_tool_replaces_a_result_path_in_the_trials_cassettes(
    tmp_path: Path, planted: dict[str, str]
) -> None:
    store = str(tmp_path / "results.db")
    with StubLLM(ScriptedPolicy(POLICY)) as llm:
        code, _, err = replay(
            "run", _case(tmp_path), "--run", "r", "--store", store, *AGENT,
            "--llm-url", llm.openai_base_url, "--set", "api_key=sk-test-key",
            "--redact-tool", "charge.args.card", "--allow-env", "MY_TOKEN",
        )  # fmt: skip
    assert code == 0, err
    (trial,) = Store(store).trials("r")
    calls = [e for e in read_cassette(trial.cassette).events if isinstance(e, ToolEvent)]
    assert calls[1].args == {"card": PLACEHOLDER, "token": PLACEHOLDER}
    assert Store(store).run("r").pins["redaction"] == {"tool_paths": ["charge.args.card"]}
