"""A plugin installed with pip reaches ``replay run --mode``, ``--grader`` and ``--executor``.

The plugin is a package of its own: a pyproject declaring entry points in the
``agent_replay.*`` groups, built by pip through a backend in its own tree (no
setuptools or network needed) and installed with ``--target`` into a folder the
``replay`` command then finds on its path, as a virtualenv's site-packages would be.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.slow  # pip, then replay twice in processes of their own

PYPROJECT = """
[build-system]
requires = []
build-backend = "tiny_backend"
backend-path = ["."]

[project]
name = "tiny-replay-plugin"
version = "0.1"

[project.entry-points."agent_replay.modes"]
regrade = "tiny_replay_plugin:MODE"

[project.entry-points."agent_replay.graders"]
polite = "tiny_replay_plugin:polite"
mode_ran = "tiny_replay_plugin:mode_ran"

[project.entry-points."agent_replay.backends"]
inline = "tiny_replay_plugin:inline"
"""

PLUGIN = '''
"""A mode that grades recorded trials again (adding a grade of its own), two graders,
and an executor backend running trials in this process."""

import dataclasses

from replay.graders import Grade, Verdict
from replay.modes import REGISTRY, Mode


def polite(trial):
    return Grade("polite", Verdict.PASS, ("graded by the plugin",))


def mode_ran(trial):
    return Grade("mode_ran", Verdict.PASS, ("the plugin's mode ran this trial",))


def _steps(plan):
    graders = (*plan.graders, "mode_ran")
    return REGISTRY["review"].steps(dataclasses.replace(plan, graders=graders))


review = REGISTRY["review"]
MODE = Mode(
    "regrade", "review, by a plugin", review.channels, _steps,
    runs_agent=False, llm=(), recorded="required", per_recording=True,
)


def inline(spec, blobs):
    from replay.runs import BACKENDS

    return BACKENDS["local"](spec, blobs)
'''

BACKEND = '''
"""A PEP 517 backend in the plugin's tree: its wheel from pyproject.toml's [project]."""

import base64
import hashlib
import pathlib
import zipfile

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = tomllib.loads(pathlib.Path("pyproject.toml").read_text())["project"]
    dist, version = project["name"].replace("-", "_"), project["version"]
    info = f"{dist}-{version}.dist-info"
    files = {p.as_posix(): p.read_bytes() for p in pathlib.Path(dist).rglob("*.py")}
    files[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\\nName: {project['name']}\\nVersion: {version}\\n".encode()
    )
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\\nGenerator: tiny_backend\\nRoot-Is-Purelib: true\\n"
        b"Tag: py3-none-any\\n"
    )
    files[f"{info}/entry_points.txt"] = "".join(
        f"[{group}]\\n" + "".join(f"{name} = {value}\\n" for name, value in points.items())
        for group, points in project["entry-points"].items()
    ).encode()
    record = [f"{path},sha256={_digest(data)},{len(data)}" for path, data in files.items()]
    files[f"{info}/RECORD"] = "\\n".join([*record, f"{info}/RECORD,,", ""]).encode()
    wheel = f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(pathlib.Path(wheel_directory) / wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def _digest(data):
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where pip installed the plugin (``--target``), as a virtualenv's site-packages."""
    source = tmp_path_factory.mktemp("plugin-source")
    (source / "pyproject.toml").write_text(PYPROJECT)
    (source / "tiny_backend.py").write_text(BACKEND)
    (source / "tiny_replay_plugin").mkdir()
    (source / "tiny_replay_plugin" / "__init__.py").write_text(PLUGIN)
    site = tmp_path_factory.mktemp("site-packages")
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    done = subprocess.run(
        [*pip, "--no-index", "--no-deps", "--no-build-isolation", "--target", str(site), source],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return site


def _replay(site: Path, *args: str) -> tuple[int, str, str]:
    """The ``replay`` command in a process of its own, the plugin on its path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    done = subprocess.run(
        [str(Path(sys.executable).with_name("replay")), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=site,  # not the checkout: what is found is what pip installed
        check=False,
        timeout=300,
    )
    return done.returncode, done.stdout, done.stderr


def test_a_plugins_mode_grader_and_backend_run_from_the_command_line(
    site: Path, tmp_path: Path
) -> None:
    code, out, err = _replay(site, "run", "--help")
    assert code == 0, err
    words = " ".join(out.split())
    assert "[review|offline|sandbox|record|regrade]" in words
    assert "regrade: review, by a plugin." in words
    assert "[local|ray|dask|inline]" in words
    assert "Registered besides the built-" in words and "ins: polite, mode_ran." in words

    code, out, err = _replay(
        site, "run", str(REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"),
        "--run", "plugged", "--mode", "regrade", "--grader", "polite", "--executor", "inline",
        "--cassettes", str(REPO / "cassettes"), "--store", str(tmp_path / "r.db"), "--json",
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert data["pins"]["mode"] == "regrade"
    assert data["pins"]["graders"]["polite"]["version"] == "1"
    (case,) = data["cases"]
    assert case["graders"]["polite"] == {"pass": 1}  # --grader: the plugin's grader
    assert case["graders"]["mode_ran"] == {"pass": 1}  # added by the plugin mode's steps


def test_a_name_no_plugin_registers_is_refused_listing_the_plugins_names(site: Path) -> None:
    code, _, err = _replay(site, "run", "x.yaml", "--run", "r", "--executor", "nope")
    assert code == 2 and "'nope' is not one of 'local', 'ray', 'dask', 'inline'" in err
