"""State assertions over the world after a trial and its diff."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from examples.shop import record_refund
from recorder import RowChange, read_cassette
from replay import AssertionSyntaxError, Fixture, StateDiff
from replay.graders import Assertion, Context, SqliteWorld
from tests.helpers import SHOP_FIXTURE


@pytest.fixture(scope="module")
def refunded(tmp_path_factory: pytest.TempPathFactory) -> Context:
    """The shop after the demo refund: world, diff and answer as the graders see them."""
    directory = tmp_path_factory.mktemp("world")
    path = directory / "refund.cassette"
    record_refund(path)
    cassette = read_cassette(path)
    assert cassette.footer is not None and cassette.footer.state_diff is not None
    world = Fixture.load(SHOP_FIXTURE).open()
    world.apply(cassette.footer.state_diff)  # the world after = the fixture + the net delta
    diff = StateDiff.from_delta(cassette.footer.state_diff)
    return Context(
        world=SqliteWorld(world.conn),
        diff=diff,
        answer=cassette.footer.final_answer,
        allowed_tables=frozenset({"orders", "refunds", "ledger", "emails"}),
    )


@pytest.mark.parametrize(
    "source",
    [
        "refunds.count(order_id=4812) == 1",
        'orders[4812].status == "refunded"',
        "refunds.where(order_id=4812).amount == approx(35.0, abs=0.01)",
        "ledger.where(order_id=4812).sum(amount) == 0",
        "ledger.sum(amount) == approx(209.9, abs=1e-9)",
        'emails.count(template="refund") == 1',
        "no_side_effects",
        'answer contains "REFUND"',
        "diff.refunds.inserted == 1",
        "diff.orders.updated == 1 and diff.inventory.deleted == 0",
        "not refunds.count(order_id=4813) > 0",
        "ledger.min(amount) == -35.0",
        "orders[4811].total >= 100",
    ],
)
def test_assertions_that_hold(refunded: Context, source: str) -> None:
    check = Assertion(source).check(refunded)
    assert check.passed, str(check)


@pytest.mark.parametrize(
    ("source", "expected", "actual"),
    [
        ("refunds.count(order_id=4812) == 2", "2", "1"),
        ('orders[4812].status != "refunded"', "!= 'refunded'", "'refunded'"),
        (
            "refunds.where(order_id=4812).amount == approx(30, abs=0.5)",
            "approx(30.0, abs=0.5)",
            "35.0",
        ),
        ('answer contains "apology"', "contains 'apology'", None),
        ("diff.ledger.inserted < 1", "< 1", "1"),
    ],
)
def test_failures_report_expected_and_actual(
    refunded: Context, source: str, expected: str, actual: str | None
) -> None:
    check = Assertion(source).check(refunded)
    assert not check.passed
    assert check.expected == expected
    if actual is not None:
        assert check.actual == actual
    assert str(check).startswith(f"failed: {source}: expected {expected}, actual ")


def test_no_side_effects_names_the_table(refunded: Context) -> None:
    narrow = Context(refunded.world, refunded.diff, refunded.answer, frozenset({"refunds"}))
    check = Assertion("no_side_effects").check(narrow)
    assert not check.passed
    assert check.message == "changed emails, ledger, orders (allowed: refunds)"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("orders[9999].status == 'x'", "orders[9999] does not exist"),
        (
            "ledger.where(order_id=4812).amount == 1",
            "ledger: 2 rows matched, so .amount is ambiguous",
        ),
        ("nope.count() == 0", "no table 'nope' in the world"),
        ("refunds.count(colour='red') == 0", "table 'refunds' has no column 'colour'"),
    ],
)
def test_what_the_world_lacks_is_a_failed_check(
    refunded: Context, source: str, message: str
) -> None:
    check = Assertion(source).check(refunded)
    assert not check.passed and check.message == message


@pytest.mark.parametrize(
    ("source", "column", "message"),
    [
        ("refunds.count(order_id=4812) = 1", 30, "invalid syntax"),
        ("refunds.count() == 1 + 1", 20, "BinOp is not allowed in an assertion"),
        ("orders[4812].status == [1]", 24, "List is not allowed in an assertion"),
        ("1 < refunds.count() < 3", 1, "compare one pair at a time"),
        ("(lambda: 1)() == 1", 1, "only table methods and approx() can be called"),
    ],
)
def test_anything_else_is_a_syntax_error_pointing_at_the_column(
    refunded: Context, source: str, column: int, message: str
) -> None:
    with pytest.raises(AssertionSyntaxError) as info:
        Assertion(source).check(refunded)
    assert message in str(info.value)
    assert f"at column {column} of" in str(info.value)
    assert info.value.caret().splitlines()[1] == " " * (column - 1) + "^"


def test_state_diff_from_deltas_and_nested_json() -> None:
    first = {
        "orders": [
            RowChange(
                key=[1], before={"meta": '{"tags": ["a"]}'}, after={"meta": '{"tags": ["a", "b"]}'}
            )
        ]
    }
    second = {
        "orders": [RowChange(key=[1], before={"status": "paid"}, after={"status": "refunded"})]
    }
    diff = StateDiff.from_deltas([first, second])
    (update,) = diff.table("orders").updated.values()
    assert update.fields == ("meta", "status")
    assert update.nested_changes("meta") == ["root['tags'][1]"]
    assert diff.touched() == {"orders"} and not diff.table("refunds")
    assert (
        StateDiff.from_deltas(
            [
                first,
                {
                    "orders": [
                        RowChange(
                            key=[1],
                            before={"meta": '{"tags": ["a", "b"]}'},
                            after={"meta": '{"tags": ["a"]}'},
                        )
                    ]
                },
            ]
        ).tables
        == {}
    )


def test_sqlite_world_binds_values(tmp_path: Path) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("create table t (id integer primary key, name text)")
    conn.execute("insert into t values (1, 'x'' OR 1=1 --')")
    world = SqliteWorld(conn)
    assert world.rows("t", {"name": "x' OR 1=1 --"}) == [{"id": 1, "name": "x' OR 1=1 --"}]
    assert world.rows("t", {"name": "y"}) == []


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("__import__('os').system('true')", "only approx(value, abs=..., rel=...) can be called"),
        ("refunds.delete() == 0", "unknown method delete()"),
        ("orders.status == 'paid'", "unknown attribute .status"),
    ],
)
def test_meaningless_assertions_are_caught_against_the_world(
    refunded: Context, source: str, message: str
) -> None:
    assertion = Assertion(source)  # parses
    with pytest.raises(AssertionSyntaxError, match=re.escape(message)):
        assertion.validate(refunded.world)  # what a case does when it loads
    check = assertion.check(refunded)  # and in a trial: a failed check, never a crash
    assert not check.passed and message in check.message


@pytest.mark.parametrize(
    ("source", "passed", "detail"),
    [
        ('not answer contains "sorry"', True, None),
        ('orders[4812].status == "refunded" and answer contains "refund"', True, None),
        (
            'answer contains "refund" and answer contains "apology"',
            False,
            """answer contains "apology": expected contains 'apology'""",
        ),
        ("refunds.count(order_id=1) == 1 or diff.ledger.inserted == 2", False, "none held"),
        ("refunds.where(order_id=9999)", False, None),
        ("approx(35.0, abs=0.1) == refunds.where(order_id=4812).amount", True, None),
        ("refunds.sum(reason) > 0", False, "cannot evaluate"),
    ],
)
def test_boolean_composition_and_edge_cases(
    refunded: Context, source: str, passed: bool, detail: str | None
) -> None:
    check = Assertion(source).check(refunded)
    assert check.passed is passed, str(check)
    if detail:
        assert detail in str(check)


def test_the_demo_case_holds_for_the_demo_recording(refunded: Context) -> None:
    from replay import load_case
    from tests.helpers import REPO

    case = load_case(REPO / "examples" / "shop" / "cases" / "refund-4812.yaml")
    ctx = Context(refunded.world, refunded.diff, refunded.answer, frozenset(case.allowed_tables))
    checks = [a.check(ctx) for a in case.parsed_assertions()]
    assert all(c.passed for c in checks), [str(c) for c in checks if not c.passed]


def test_no_matching_row_is_said_plainly(refunded: Context) -> None:
    check = Assertion("refunds.where(order_id=9999).amount == 1").check(refunded)
    assert check.message == "refunds: no row matched, so there is no .amount"
