"""The refund demo: a shop world, its tools, an OpenAI-SDK agent and a scripted stub model."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from recorder import Recording, record
from replay.stub_llm import StubLLM

from .agent import agent, run_agent
from .policy import INSTRUCTION, RefundChatPolicy, naive_refund_policy, refund_policy
from .tools import make_tools

FIXTURE = Path(__file__).with_name("fixture.sql")


def open_world(directory: Path) -> sqlite3.Connection:
    """Build a fresh shop world (a SQLite file) in ``directory``."""
    conn = sqlite3.connect(directory / "shop.db")
    conn.executescript(FIXTURE.read_text())
    return conn


def record_refund(out: Path, *, overwrite: bool = True) -> Recording:
    """Record one session of the agent refunding order 4812 into ``out``."""
    with tempfile.TemporaryDirectory() as tmp, StubLLM(refund_policy()) as llm:
        conn = open_world(Path(tmp))
        try:
            with record(
                out,
                world=conn,
                case_id="refund-4812",
                trial=0,
                fixture_source=str(FIXTURE.relative_to(Path.cwd()))
                if FIXTURE.is_relative_to(Path.cwd())
                else str(FIXTURE),
                overwrite=overwrite,
            ) as rec:
                answer = run_agent(INSTRUCTION, make_tools(conn), base_url=llm.openai_base_url)
                rec.answer(answer)
        finally:
            conn.close()
    return rec


__all__ = [
    "INSTRUCTION",
    "RefundChatPolicy",
    "agent",
    "make_tools",
    "naive_refund_policy",
    "open_world",
    "record_refund",
    "refund_policy",
    "run_agent",
]
