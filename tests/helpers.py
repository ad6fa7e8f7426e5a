"""Helpers shared by the tests: raw cassette bytes, shop worlds, small SQLite worlds."""

from __future__ import annotations

import sqlite3
import zlib
from pathlib import Path

from recorder._codec import PREAMBLE

REPO = Path(__file__).resolve().parent.parent
SHOP_FIXTURE = REPO / "examples" / "shop" / "fixture.sql"


def decompressed(path: Path) -> bytes:
    """Return a cassette's record stream, decompressed (what a secret would hide in)."""
    data = path.read_bytes()
    return zlib.decompressobj(-15).decompress(data[len(PREAMBLE) :])


def shop_world(directory: Path) -> sqlite3.Connection:
    """Return a connection to a fresh shop world (a SQLite file) in ``directory``."""
    conn = sqlite3.connect(directory / "shop.db")
    conn.executescript(SHOP_FIXTURE.read_text())
    return conn
