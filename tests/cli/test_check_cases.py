"""`replay check-cases`: graders must pass each case's reference solution."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import REPO, replay

CASE = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
TOOLS = ["--tools", "examples.shop:make_tools"]


def variant(tmp_path: Path, name: str, old: str, new: str) -> Path:
    path = tmp_path / name
    text = CASE.read_text().replace("../fixture.sql", str(CASE.parent.parent / "fixture.sql"))
    assert old in text
    path.write_text(text.replace(old, new))
    return path


def test_the_demo_reference_solution_passes(tmp_path: Path) -> None:
    code, out, _ = replay("check-cases", str(CASE), *TOOLS)
    assert (code, out) == (0, "refund-4812: pass\n")


def test_a_wrong_reference_fails_naming_case_and_assertion(tmp_path: Path) -> None:
    wrong = variant(tmp_path, "wrong.yaml", "amount: 35.0, reason", "amount: 30.0, reason")
    bare = variant(tmp_path, "bare.yaml", "id: refund-4812", "id: no-reference")
    bare.write_text(bare.read_text().split("reference_solution:")[0] + "tags: []\n")
    code, out, _ = replay("check-cases", str(CASE), str(wrong), str(bare), *TOOLS)
    assert code == 1
    assert "refund-4812: fail" in out
    assert (
        "state: failed: refunds.where(order_id=4812).amount == approx(35.0, abs=0.01): "
        "expected approx(35.0, abs=0.01), actual 30.0"
    ) in out
    assert "no-reference: no reference solution" in out
    assert out.strip().endswith("1 case(s) fail their own reference solution")


SHOP_TABLES = "(its tables: customers, emails, inventory, ledger, orders, refunds)"


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [
        (
            "orders[4812].status",
            "orderz[4812].status",
            f"assertion 3 names table 'orderz', but the fixture has no such table {SHOP_TABLES}",
        ),
        (
            "orders[4812].status",
            "orders[4812].state",
            "assertion 3 names column 'state' of table 'orders', but the fixture's orders has "
            "no such column (its columns: id, customer_id, total, status)",
        ),
        (
            "refunds.count(order_id=4812)",
            "refunds.count(orderid=4812)",
            "assertion 1 names column 'orderid' of table 'refunds'",
        ),
        (
            "ledger.where(order_id=4812).sum(amount)",
            "ledger.where(order_id=4812).sum(amont)",
            "assertion 4 names column 'amont' of table 'ledger'",
        ),
        (
            "refunds.where(order_id=4812).amount",
            "refunds.where(order_id=4812).amout",
            "assertion 2 names column 'amout' of table 'refunds'",
        ),
        (
            "  - no_side_effects",
            "  - diff.refund.inserted == 1",
            f"assertion 6 names table 'refund', but the fixture has no such table {SHOP_TABLES}",
        ),
        (
            "orders[4812].status",
            "orders[4812, 1].status",
            "assertion 3 looks up orders[...] by 2 value(s), "
            "but the fixture keys 'orders' by 1 (id)",
        ),
        (
            "allowed_tables: [orders, refunds, ledger, emails]",
            "allowed_tables: [orders, refunds, ledgers, emails]",
            "allowed_tables names table 'ledgers', but the fixture has no such table "
            + SHOP_TABLES,
        ),
        (
            "tags: [refunds, critical]",
            "match_reference: {multisets: [refund.tags]}",
            "match_reference.multisets names table 'refund', but the fixture has no such table",
        ),
        (
            "tags: [refunds, critical]",
            "match_reference: {multisets: [refunds.tags]}",
            "match_reference.multisets names column 'tags' of table 'refunds'",
        ),
    ],
    ids=[
        "table",
        "row-field",
        "filter",
        "aggregate",
        "field-of-where",
        "diff-table",
        "key-arity",
        "allowed-tables",
        "multiset-table",
        "multiset-column",
    ],
)
def test_a_name_the_fixture_lacks_is_a_case_error(
    tmp_path: Path, old: str, new: str, error: str
) -> None:
    typo = variant(tmp_path, "typo.yaml", old, new)
    code, out, err = replay("check-cases", str(CASE), str(typo), *TOOLS)
    assert code == 2 and out == ""  # refused before any case's reference solution runs
    assert err.startswith(f"error: {typo}: ") and error in err and err.count("\n") == 1, err


def test_every_misnamed_reference_is_listed_in_the_one_line(tmp_path: Path) -> None:
    typo = variant(tmp_path, "typo.yaml", "orders[4812].status", "orderz[4812].stat")
    typo.write_text(typo.read_text().replace("emails.count(", "email.count("))
    code, _, err = replay("check-cases", str(typo), *TOOLS)
    assert code == 2
    assert "assertion 3 names table 'orderz'" in err and "assertion 5 names table 'email'" in err


def test_document_collections_are_checked_by_name_their_fields_are_open(tmp_path: Path) -> None:
    (tmp_path / "world.json").write_text(
        json.dumps({"users": {"mia": {"name": "Mia", "tier": "gold"}}})
    )
    case = tmp_path / "case.yaml"
    body = "id: docs\ninstruction: Upgrade Mia.\nfixture: world.json\nassert:\n  - '{}'\n"
    case.write_text(body.format('users["mia"].upgraded_at != None'))  # a field a tool may add
    assert replay("check-cases", str(case), *TOOLS)[0] == 0
    case.write_text(body.format('user["mia"].tier == "platinum"'))
    code, _, err = replay("check-cases", str(case), *TOOLS)
    assert (
        code == 2
        and "assertion 1 names table 'user', but the fixture has no such table (its tables: users)"
        in err
    )


def test_grade_runs_match_reference_with_the_case_s_tools(tmp_path: Path) -> None:
    case = variant(tmp_path, "ref.yaml", "tags: [refunds, critical]", "match_reference: {}")
    golden = str(REPO / "cassettes" / "refund-4812.cassette")
    code, out, _ = replay("grade", golden, "--case", str(case))
    assert code == 3, out  # not judged: the reference solution cannot run without the tools
    assert "give the case's --tools" in out
    code, out, _ = replay("grade", golden, "--case", str(case), *TOOLS)
    assert (code, out.splitlines()[0]) == (0, "refund-4812: pass"), out
    assert "matches_reference: pass" in out
    code, _, err = replay("grade", golden, "--case", str(case), "--tools", "examples.shop:nope")
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
