"""``replay import tau2 DOMAIN --out DIR``: a tau2-bench domain as a fixture and case files.

Writes ``DIR/fixture.json`` (the domain's database: a document world) and
``DIR/cases/<task>.yaml`` for every task with gold actions: the user's
reason for calling as the instruction, the full user scenario as a
simulated user's hidden instruction, the gold actions as the reference
solution, ``match_reference`` on (the world must end as the gold actions
leave it), and each piece of information the agent must communicate as an
``answer contains`` assertion. A task without gold actions (7 airline, 2
retail in tau2 26.3) is a case too: tau2 still compares its database with
what the (empty) gold actions leave, so its reference solution is empty and
``matches_reference`` holds the world to the fixture — any write fails it,
changing nothing passes. Run them with ``--tools replay.tau2:<domain>_tools``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..cases import inside, write_whole
from . import _domains as tau2

MULTISETS = {
    "airline": ["reservations.passengers", "reservations.payment_history", "users.reservations"],
    "retail": ["orders.payment_history"],
}
"""Lists compared in any order: their order is how the agent happened to write them."""


@dataclass
class Tau2Import:
    """What ``import_tau2`` wrote."""

    fixture: Path
    cases: list[Path] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    """Task ids without gold actions: their cases expect the world to end unchanged."""


def import_tau2(domain: str, out: str | Path) -> Tau2Import:
    """Write a tau2-bench domain's fixture and one case per task into ``out``.

    ``out/fixture.json`` is the domain's database as a document world;
    ``out/cases/<task>.yaml`` each has the gold actions as its reference
    solution, graded by ``matches_reference``, the information to tell as
    ``answer contains`` assertions and the user scenario as a simulated
    user. A task without gold actions gets an empty reference solution: its
    world must end as it began (``Tau2Import.unchanged`` lists them). Run
    them with ``--tools replay.tau2:<domain>_tools``.

    Args:
        domain: ``airline`` or ``retail`` (``replay.tau2.DOMAINS``).
        out: The directory to write to (created if missing).

    Raises:
        ConfigError: tau2 is not installed, or the domain is unknown.
    """
    out = Path(out)
    tau2.db_class(domain)  # the domain exists and tau2 imports, before anything is written
    (out / "cases").mkdir(parents=True, exist_ok=True)
    fixture = out / "fixture.json"
    write_whole(fixture, json.dumps(tau2.database(domain)))  # each file whole or not at all
    result = Tau2Import(fixture)
    for task in tau2.tasks(domain):
        actions = [a for a in task.evaluation_criteria.actions or [] if a.requestor == "assistant"]
        if not actions:  # tau2 checks the database all the same: it must not change
            result.unchanged.append(str(task.id))
        path = inside(out / "cases", out / "cases" / f"{_slug(str(task.id))}.yaml", "task id")
        write_whole(path, _case_yaml(domain, task, actions))
        result.cases.append(path)
    return result


import_domain = import_tau2
"""The former name, which tests/tau2bench and bench/ still use."""
Imported = Tau2Import
"""The former name of ``Tau2Import``."""


def _slug(text: str) -> str:
    """A task id as a name (``replay.cases.check_name``): in a case id and a file name."""
    slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in text).replace("..", "--")
    return f"_{slug}" if slug[:1] in ("", ".", "-") else slug


def _case_yaml(domain: str, task: Any, actions: list[Any]) -> str:
    scenario = task.user_scenario.instructions
    reason = getattr(scenario, "reason_for_call", None) or str(scenario)
    known = getattr(scenario, "known_info", None)
    informs = [str(i) for i in task.evaluation_criteria.communicate_info or []]
    case: dict[str, Any] = {
        "id": f"tau2-{domain}-{_slug(str(task.id))}",
        "suite": "capability",
        "instruction": "A customer contacts support. What they were told: "
        + " ".join(" ".join(str(p).split()) for p in (reason, known) if p),
        "fixture": "../fixture.json",
        "user": {"instruction": _block(str(scenario))},
        "match_reference": {"multisets": MULTISETS.get(domain, [])},
        "assert": [f"answer contains {json.dumps(i)}" for i in informs],
        # Empty without gold actions: with match_reference, the world must end unchanged.
        "reference_solution": [{"tool": a.name, "args": dict(a.arguments)} for a in actions],
        "tags": ["tau2", domain],
    }
    if informs:
        case["reference_answer"] = " ".join(informs)
    if not case["assert"]:
        del case["assert"]
    header = f"# tau2-bench {domain} task {task.id}, imported by `replay import tau2`.\n"
    purpose = getattr(task.description, "purpose", None) if task.description else None
    if purpose:
        header += f"# Purpose: {' '.join(str(purpose).split())}\n"
    if not actions:
        header += "# No gold actions: the database must end as it began (any write fails).\n"
    return header + yaml.dump(case, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def _block(text: str) -> str:
    """Text a YAML literal block can hold: no tabs, no trailing spaces."""
    lines = [line.replace("\t", "  ").rstrip() for line in text.strip().splitlines()]
    return "\n".join(lines)


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Multi-line strings as literal blocks, for readers of the case files.

    libyaml's emitter where PyYAML has it (six times as fast; the same text for every
    tau2 task, tested), else PyYAML's own.
    """


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)
