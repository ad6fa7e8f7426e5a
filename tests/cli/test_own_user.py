"""``--user agent``: an agent that simulates its own user replays a case with a ``user:``.

The case's ``user:`` section is for the harness's simulated user; an agent that
brings its own (tau2's orchestrator) is run with ``--user agent``: it gets the
case's instruction, its user's turns are LLM calls recorded with the rest, and
offline they are frozen with the rest. Without it, the run asks for a user.
"""

from __future__ import annotations

from pathlib import Path

from recorder import HttpEvent, read_cassette
from replay import Store
from replay.stub_llm import EchoPolicy, StubLLM
from tests.helpers import replay

AGENT = [
    "--agent", "tests.cli.own_user_agent:agent", "--tools", "tests.cli.own_user_agent:no_tools",
]  # fmt: skip


def test_an_agent_with_its_own_user_records_and_replays_offline(tmp_path: Path) -> None:
    (tmp_path / "empty.sql").write_text("CREATE TABLE t (id INTEGER PRIMARY KEY);\n")
    case = tmp_path / "talk.yaml"
    case.write_text(
        "id: talk\ninstruction: Book a table for two.\nfixture: empty.sql\n"
        "user: {instruction: You want a table for two tonight.}\n"
    )
    store = str(tmp_path / "r.db")
    with StubLLM(EchoPolicy()) as llm:
        code, _, err = replay(
            "run", str(case), "--run", "rec", "--mode", "sandbox", "--user", "agent",
            "--store", store, "--llm-url", llm.openai_base_url, "--isolation", "none", *AGENT,
        )  # fmt: skip
    assert code == 0, err
    (recorded,) = Store(store).trials("rec")
    events = read_cassette(recorded.cassette).events
    assert sum(isinstance(e, HttpEvent) for e in events) == 2  # its user's turn, then its own

    offline = [
        "--mode",
        "offline",
        "--store",
        store,
        "--cassettes",
        str(tmp_path / "cassettes" / "rec"),
    ]
    code, _, err = replay("run", str(case), "--run", "asks", *offline, *AGENT)
    assert code == 2 and "--user agent" in err, err  # the harness's user is asked for
    code, _, err = replay(
        "run", str(case), "--run", "own", *offline, "--user", "agent", "--isolation", "none", *AGENT
    )  # (the stub is stopped: the LLM, its user's turns included, answers from the cassette)
    assert code == 0, err
    (trial,) = Store(store).trials("own")
    assert trial.verdict == "pass"
    assert (
        read_cassette(trial.cassette).summary().final_answer
        == read_cassette(recorded.cassette).summary().final_answer
    )
