"""Helpers shared by the tests: raw cassette bytes, shop worlds, small SQLite worlds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from click.testing import CliRunner

from recorder import _codec
from replay._cli.main import cli

REPO = Path(__file__).resolve().parent.parent
SHOP_FIXTURE = REPO / "examples" / "shop" / "fixture.sql"


def documentation() -> str:
    """The README and every page of the documentation site (``docs/pages``), as one text."""
    pages = sorted((REPO / "docs" / "pages").rglob("*.md"))
    return "\n".join(p.read_text(encoding="utf-8") for p in [REPO / "README.md", *pages])


def decompressed(path: Path) -> bytes:
    """Return a cassette's record stream, decompressed (what a secret would hide in)."""
    return _codec.decompressed(path.read_bytes())


def shop_world(directory: Path) -> sqlite3.Connection:
    """Return a connection to a fresh shop world (a SQLite file) in ``directory``."""
    conn = sqlite3.connect(directory / "shop.db")
    conn.executescript(SHOP_FIXTURE.read_text())
    return conn


HANG_GUARD_S = 300.0
"""How long a test waits for what should end in seconds before calling it hung: a guard
only, generous enough for a loaded machine (timing is ``bench/``'s), and shorter than
the sleeps it guards against (``sleep 431``: a deadline not kept)."""


def replay(*args: str) -> tuple[int, str, str]:
    """Run the ``replay`` command in this process: (exit code, stdout, stderr)."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr
