"""The tutorial (docs/pages/tutorial.md) runs as written, from an empty folder.

Each code block with a ``title="PATH"`` is written to that path; each ``console``
block's ``$ replay ...`` lines run in order, in that folder, and every command
exits as the page says (0, unless the line's own words say otherwise).
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, replay

PAGE = REPO / "docs" / "pages" / "tutorial.md"
BLOCK = re.compile(r'^```(\w+)(?: title="([^"]+)")?\n(.*?)^```$', re.S | re.M)
EXPECTED = {"replay gate --baseline baseline --candidate candidate --max-drop 0.1": 3}
"""Commands the page says do not exit 0, and what they exit."""


def test_the_tutorial_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai", reason="the tutorial's agent uses the OpenAI SDK")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])  # (its modules, as run's)
    commands = []
    for language, title, body in BLOCK.findall(PAGE.read_text()):
        if title:
            (tmp_path / title).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / title).write_text(body)
        elif language == "console":
            commands += [line[2:] for line in body.splitlines() if line.startswith("$ ")]
    assert len(commands) == 5 and {"agent.py", "tools.py"} <= {p.name for p in tmp_path.iterdir()}
    try:
        for command in commands:
            words = shlex.split(command)
            assert words[0] == "replay"
            code, out, err = replay(*words[1:])
            assert code == EXPECTED.get(command, 0), (command, out, err)
    finally:  # (its modules are the tutorial's: no other test imports them by these names)
        for name in ("agent", "tools"):
            sys.modules.pop(name, None)
    assert (tmp_path / "gate.xml").exists()
