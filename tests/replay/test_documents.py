"""Document worlds: collections of records keyed by id, on the SQLite world's machinery."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from recorder import ToolEvent, read_cassette, record, tool
from replay import Fixture, StateDiff, load_case
from replay.graders import Assertion, Context, SqliteWorld, Verdict
from replay.modes import Environment, sandbox
from replay.worlds._documents import Documents

STATE = {
    "users": {
        "mia_li_3668": {"name": {"first": "Mia", "last": "Li"}, "membership": "gold",
                        "balance": 100, "active": True, "reservations": ["R1", "R2"]},
        "noah_park_1": {"name": {"first": "Noah", "last": "Park"}, "membership": "silver",
                        "balance": 12.5, "active": False, "reservations": []},
    },
    "reservations": {
        "R1": {"user_id": "mia_li_3668", "status": "booked", "passengers": [{"n": "Mia"}]},
        "R2": {"user_id": "mia_li_3668", "status": "booked", "passengers": []},
    },
}  # fmt: skip


@pytest.fixture
def fixture(tmp_path: Path) -> Fixture:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(STATE))
    return Fixture.load(path)


class User(BaseModel):
    name: dict[str, str]
    membership: str
    balance: float | int
    active: bool
    reservations: list[str]


def test_records_read_back_exactly_and_assertions_read_them(fixture: Fixture) -> None:
    world = fixture.open()
    assert Documents(world.conn).dump() == STATE  # ints stay ints, floats floats, bools bools
    view = SqliteWorld(world.conn)
    ctx = Context(view, StateDiff())
    for source in (
        'users["mia_li_3668"].membership == "gold"',
        'reservations.count(user_id="mia_li_3668") == 2',
        'users["noah_park_1"].balance == 12.5',
        'users["mia_li_3668"].active == True',
    ):
        assert Assertion(source).check(ctx).passed, source
    assert view.get("users", "mia_li_3668")["name"] == {"first": "Mia", "last": "Li"}


def test_each_call_captures_its_delta_and_reset_undoes_it(fixture: Fixture, tmp_path: Path) -> None:
    world = fixture.open()
    docs = Documents(world.conn, {"users": User})

    @tool(writes=True)
    def cancel(reservation_id: str) -> str:
        try:
            reservation = docs.reservations[reservation_id]
            reservation["status"] = "cancelled"
            user = docs.users[reservation["user_id"]]
            user.reservations.remove(reservation_id)
            user.balance += 50.0
            docs.reservations["R9"] = {"user_id": "noah_park_1", "status": "new", "passengers": []}
            del docs.reservations["R2"]
        finally:
            docs.flush()
        return "ok"

    with record(tmp_path / "t.cassette", world=world.conn):
        cancel("R1")
    (event,) = [
        e for e in read_cassette(tmp_path / "t.cassette").events if isinstance(e, ToolEvent)
    ]
    assert event.delta is not None
    diff = StateDiff.from_delta(event.delta)
    users = diff.table("users")
    (update,) = users.updated.values()
    assert set(update.fields) == {"reservations", "balance"}  # changed fields only
    assert update.before["balance"] == 100 and update.after["balance"] == 150.0
    assert list(diff.table("reservations").inserted) == [("R9",)]
    assert list(diff.table("reservations").deleted) == [("R2",)]
    assert diff.table("reservations").updated[("R1",)].after == {"status": "cancelled"}
    world.reset()
    assert Documents(world.conn).dump() == STATE


def test_an_int_to_float_change_is_written(fixture: Fixture) -> None:
    world = fixture.open()
    docs = Documents(world.conn)
    docs.users["mia_li_3668"]["balance"] = 100.0
    docs.flush()
    assert isinstance(Documents(world.conn).dump()["users"]["mia_li_3668"]["balance"], float)


def test_a_case_on_a_document_world_grades_like_any_other(fixture: Fixture, tmp_path: Path) -> None:
    fixture_file = tmp_path / "state.json"
    case_file = tmp_path / "case.yaml"
    case_file.write_text(
        yaml.safe_dump(
            {
                "id": "cancel-r1",
                "instruction": "Cancel reservation R1.",
                "fixture": str(fixture_file),
                "allowed_tables": ["reservations"],
                "assert": ['reservations["R1"].status == "cancelled"', "no_side_effects"],
                "reference_solution": [{"tool": "cancel", "args": {"reservation_id": "R1"}}],
                "match_reference": {},
            }
        )
    )

    def tools(conn: Any) -> list[Any]:
        docs = Documents(conn)

        @tool(writes=True)
        def cancel(reservation_id: str) -> str:
            docs.reservations[reservation_id]["status"] = "cancelled"
            docs.flush()
            return "cancelled"

        @tool(writes=True)
        def close_account(user_id: str) -> str:
            docs.users[user_id]["active"] = False
            docs.flush()
            return "closed"

        return [cancel, close_account]

    def agent(calls: list[tuple[str, dict[str, Any]]]) -> Any:
        def run(instruction: str, env: Environment) -> str:
            for name, args in calls:
                env.call_tool(name, args)
            return "done"

        return run

    case = load_case(case_file)
    url = "http://127.0.0.1:9/v1"
    good = sandbox(
        case, agent([("cancel", {"reservation_id": "R1"})]), tools, tmp_path / "a", llm_base_url=url
    )
    assert good.outcome.verdict is Verdict.PASS, good.outcome.evidence
    extra = [("cancel", {"reservation_id": "R1"}), ("close_account", {"user_id": "mia_li_3668"})]
    bad = sandbox(case, agent(extra), tools, tmp_path / "b", llm_base_url=url)
    assert bad.outcome.verdict is Verdict.FAIL
    evidence = "\n".join(bad.outcome.evidence)
    assert "no_side_effects" in evidence and "users" in evidence
    assert 'users["mia_li_3668"].active: the fixture has true, the trial false' in evidence


def test_deleted_fields_and_enums_are_written_back(fixture: Fixture) -> None:
    import enum

    class Tier(enum.Enum):
        GOLD = "gold"
        SILVER = "silver"

    class Member(BaseModel):
        name: dict[str, str]
        membership: Tier
        balance: float | int
        active: bool
        reservations: list[str]

    world = fixture.open()
    docs = Documents(world.conn, {"users": Member})
    docs.users["noah_park_1"].membership = Tier.GOLD
    docs.flush()
    assert Documents(world.conn).dump()["users"]["noah_park_1"]["membership"] == "gold"
    assert Documents(world.conn, {"users": Member}).users["noah_park_1"].membership is Tier.GOLD
    plain = Documents(world.conn)
    del plain.reservations["R1"]["passengers"]
    plain.flush()
    assert Documents(world.conn).dump()["reservations"]["R1"]["passengers"] is None


def test_multisets_pair_items_within_the_tolerance(fixture: Fixture, tmp_path: Path) -> None:
    """Items sorted by their exact JSON pair off wrongly when a number is a tolerance off."""
    case_file = tmp_path / "case.yaml"
    case_file.write_text(
        yaml.safe_dump(
            {
                "id": "passengers",
                "instruction": "Set R2's passengers.",
                "fixture": str(tmp_path / "state.json"),
                "assert": ["no_side_effects"],
                "allowed_tables": ["reservations"],
                "reference_solution": [
                    {
                        "tool": "seat",
                        "args": {
                            "passengers": [{"fare": 3.3, "n": "b"}, {"fare": 3 * 1.1, "n": "a"}]
                        },
                    }
                ],
                "match_reference": {"multisets": ["reservations.passengers"], "tolerance": 1e-6},
            }
        )
    )

    def tools(conn: Any) -> list[Any]:
        docs = Documents(conn)

        @tool(writes=True)
        def seat(passengers: list[dict[str, Any]]) -> str:
            docs.reservations["R2"]["passengers"] = passengers
            docs.flush()
            return "seated"

        return [seat]

    def agent(instruction: str, env: Environment) -> str:
        env.call_tool(
            "seat", {"passengers": [{"fare": 3 * 1.1, "n": "b"}, {"fare": 3.3, "n": "a"}]}
        )
        return "done"

    trial = sandbox(
        load_case(case_file), agent, tools, tmp_path / "t", llm_base_url="http://127.0.0.1:9/v1"
    )
    assert trial.outcome.verdict is Verdict.PASS, trial.outcome.evidence


def test_each_read_gets_its_own_model_validated_once_per_content(fixture: Fixture) -> None:
    # A record's model is kept per content (replay.worlds._models) for the next world that
    # reads it: each read must still get an object of its own, and a change is its own.
    validated: list[str] = []

    class Counted(User):
        def model_post_init(self, context: Any) -> None:
            validated.append(self.membership)

    first, second = fixture.open(), fixture.open()
    mine = Documents(first.conn, {"users": Counted}).users["mia_li_3668"]
    theirs = Documents(second.conn, {"users": Counted}).users["mia_li_3668"]
    assert mine == theirs and mine is not theirs
    mine.reservations.append("R3")
    mine.name["first"] = "Mi"
    assert theirs.reservations == ["R1", "R2"] and theirs.name["first"] == "Mia"
    # (a class made in a function cannot be pickled: validated at each read, as before)
    assert validated == ["gold", "gold"]

    docs = Documents(first.conn, {"users": User})
    user = docs.users["mia_li_3668"]
    user.membership = "platinum"
    docs.flush()
    again = Documents(first.conn, {"users": User}).users["mia_li_3668"]
    assert again.membership == "platinum" and again is not user  # new content: validated anew
    first.reset()
    assert Documents(first.conn, {"users": User}).users["mia_li_3668"].membership == "gold"


KEPT_VALIDATED: list[str] = []


class Kept(User):
    def model_post_init(self, context: Any) -> None:
        KEPT_VALIDATED.append(self.membership)


def test_a_kept_model_is_handed_out_as_a_fresh_copy_each_read(fixture: Fixture) -> None:
    world = fixture.open()
    reads = [Documents(world.conn, {"users": Kept}).users["noah_park_1"] for _ in range(3)]
    assert KEPT_VALIDATED == ["silver"]  # validated once; the other reads are copies of it
    assert reads[0] == reads[1] == reads[2]
    assert len({id(r) for r in reads}) == 3 and len({id(r.name) for r in reads}) == 3
    reads[0].name["first"] = "Changed"
    docs = Documents(world.conn, {"users": Kept})
    assert docs.users["noah_park_1"].name["first"] == "Noah"
    assert docs.users["noah_park_1"].model_fields_set == reads[1].model_fields_set


def test_the_kept_models_stay_within_their_bound(fixture: Fixture) -> None:
    # The bound counts each kept model, its fingerprint and its row (the key): a cache
    # smaller than one entry keeps none, and every read validates again.
    from replay.worlds._models import ModelCache

    world = fixture.open()
    docs = Documents(world.conn, {"users": Kept})
    row = docs.users._row("noah_park_1")
    assert row is not None
    key = ("users", *row.stored())
    fingerprint = Kept.model_dump_json
    KEPT_VALIDATED.clear()
    tiny, roomy = ModelCache(limit=200), ModelCache(limit=1 << 20)
    for cache in (tiny, tiny, roomy, roomy):
        got, _ = cache.load(Kept, key, row.fields, fingerprint)
        assert got.name == {"first": "Noah", "last": "Park"}
    assert KEPT_VALIDATED == ["silver", "silver", "silver"]  # tiny twice, roomy once
