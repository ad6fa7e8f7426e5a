"""One registry type for modes, graders and backends: duplicates, unknown names, plugins."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from recorder import ConfigError
from replay import graders, modes
from replay.plugins import Registry
from replay.runs import BACKENDS


def test_the_three_registries_are_one_type() -> None:
    assert type(modes.REGISTRY) is type(graders.REGISTRY) is type(BACKENDS) is Registry
    assert modes.REGISTRY.group == "agent_replay.modes"
    assert graders.REGISTRY.group == "agent_replay.graders"
    assert BACKENDS.group == "agent_replay.backends"
    assert BACKENDS.names()[:3] == ["local", "ray", "dask"]


@pytest.mark.parametrize(
    ("registry", "name", "message"),
    [
        (modes.REGISTRY, "nope", "no mode 'nope'; the modes are review, offline, sandbox, record"),
        (BACKENDS, "nope", "no executor 'nope'; the executors are local, ray, dask"),
        (graders.REGISTRY, "nope", "no grader 'nope'; the graders are rule, state, replay, "),
    ],
)
def test_an_unknown_name_lists_the_known_ones(
    registry: Registry[object], name: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        registry[name]
    assert registry.get(name) is None and name not in registry


def test_the_same_entry_again_is_nothing_and_another_under_its_name_is_refused() -> None:
    review = modes.REGISTRY["review"]
    assert modes.register(review) is review
    other = modes.Mode("review", "another review", review.channels, review.steps)
    taken = r"a mode named 'review' is already registered \(a Mode\): "
    with pytest.raises(ConfigError, match=taken + "register yours under another name, or"):
        modes.register(other)
    assert modes.REGISTRY["review"] is review


def _plugin(root: Path, group: str, **points: str) -> None:
    """An installed distribution (its dist-info alone) declaring ``points`` in ``group``."""
    info = root / "tiny_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-plugin\nVersion: 0.1\n")
    lines = "".join(f"{name} = {value}\n" for name, value in points.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}")


def test_plugins_are_found_through_entry_points_on_the_first_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    things: Registry[str] = Registry("thing", "agent_replay_test.things")
    holder = ModuleType("tiny_holder")
    holder.THINGS = things  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tiny_holder", holder)
    (tmp_path / "tiny_things.py").write_text(
        "from tiny_holder import THINGS\n"
        "big = 'BIG'\n"
        "THINGS.register('registered-on-import', 'yes')\n"
        "THINGS.register('big', big)  # and named by an entry point too: the same entry\n"
    )
    _plugin(tmp_path, "agent_replay_test.things", big="tiny_things:big", whole="tiny_things")
    monkeypatch.syspath_prepend(str(tmp_path))
    things.register("built-in", "first")
    assert "tiny_things" not in sys.modules  # nothing read until asked
    assert things["big"] == "BIG"
    assert things.names() == ["built-in", "registered-on-import", "big"]
    assert list(things) == things.names() and len(things) == 3
    monkeypatch.delitem(sys.modules, "tiny_things")


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("no_such_module_here:x", "ModuleNotFoundError: No module named 'no_such_module_here'"),
        ("tiny_broken:x", "ZeroDivisionError: division by zero"),
        ("tiny_broken_ok:number", "it names a int, not a thing"),
    ],
)
def test_a_broken_plugin_is_a_one_line_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, why: str
) -> None:
    (tmp_path / "tiny_broken.py").write_text("1 / 0\n")
    (tmp_path / "tiny_broken_ok.py").write_text("number = 3\n")
    _plugin(tmp_path, "agent_replay_test.broken", bad=value)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "tiny_broken_ok", raising=False)

    def adopt(name: str, obj: object) -> str:
        if not isinstance(obj, str):
            raise ConfigError(f"it names a {type(obj).__name__}, not a thing")
        return obj

    registry = Registry("thing", "agent_replay_test.broken", adopt)
    with pytest.raises(ConfigError) as raised:
        registry.names()
    message = str(raised.value)
    assert message == (
        f"plugin tiny-plugin 0.1 (agent_replay_test.broken: bad = {value}) is broken: {why}; "
        "fix or uninstall it"
    )
    assert "\n" not in message
