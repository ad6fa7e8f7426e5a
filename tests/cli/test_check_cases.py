"""`replay check-cases`: graders must pass each case's reference solution."""

from __future__ import annotations

from pathlib import Path

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
