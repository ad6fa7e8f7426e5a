"""A cut-short cassette (its recording killed) is warned of wherever it is read.

``replay show`` always said so; offline and review runs over it, and ``replay
promote`` of it, now do too: the trials replay only what it kept, and a miss
past its end would otherwise look like the agent changed.
"""

from __future__ import annotations

from pathlib import Path

from recorder import read_cassette
from tests.helpers import REPO, replay

CASE = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
GOLDEN = REPO / "cassettes" / "refund-4812.cassette"
AGENT = ["--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools"]


def _cut(folder: Path) -> Path:
    folder.mkdir()
    cut = folder / "refund-4812-0.cassette"
    data = GOLDEN.read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3])
    assert read_cassette(cut).truncation  # (what the warning will quote)
    return cut


def test_runs_and_promote_over_a_cut_cassette_warn_of_it(tmp_path: Path) -> None:
    cut = _cut(tmp_path / "cut")
    store = str(tmp_path / "r.db")
    for mode in ("offline", "review"):
        code, _, err = replay(
            "run", str(CASE), "--run", mode, "--mode", mode, "--store", store,
            "--cassettes", str(cut.parent), *AGENT, "--isolation", "none",
        )  # fmt: skip
        assert code != 2, err
        assert f"warning: {cut}: " in err and "; its trials replay what it kept" in err, err
    code, _, err = replay("promote", str(cut), "--id", "cut-case", "--out", str(tmp_path / "o"))
    assert code == 0, err
    assert f"warning: {cut}: " in err and "the case replays what it kept" in err
