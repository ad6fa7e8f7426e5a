"""The README's install instructions, followed outside the clone into new virtualenvs.

The project's tracked files are copied to a folder of their own (what a clone
holds, nothing the developer's checkout has on top), `python -m build` makes the
sdist and the wheel there, and each install line of the README runs in a fresh
virtualenv elsewhere: the installed `replay` must run, and the wheel's metadata
must be complete and valid as packaging (what pip and PyPI use) reads it.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from packaging.metadata import Metadata

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("install")]  # one build per run


def _clone(into: Path) -> Path:
    """The tracked files of the checkout as they are now (a clone of the working tree)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    clone = into / "agent-replay"
    for name in filter(None, listed):
        source = REPO / name.decode()
        if source.is_file():
            target = clone / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return clone


def _venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    return where / "bin"


# pip byte-compiles every module it installs unless told not to: half of each install's
# time here, for a test that imports a few of them once.
NO_COMPILE = "--no-compile"


def _run(args: list[str], cwd: Path) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{shlex.join(args)}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout


def _readme_line(pattern: str) -> list[str]:
    """The README's install line matching ``pattern``, as words (its comment dropped)."""
    match = re.search(rf"^({pattern}.*?)\s*(#.*)?$", README, re.MULTILINE)
    assert match, f"README has no line matching {pattern!r}"
    return shlex.split(match.group(1))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A clone elsewhere, and the sdist and wheel `python -m build` makes of it."""
    clone = _clone(tmp_path_factory.mktemp("clone"))
    dist = clone / "dist"
    _run([sys.executable, "-m", "build", "--outdir", str(dist), str(clone)], cwd=clone)
    (wheel,) = dist.glob("agent_replay-*.whl")
    (sdist,) = dist.glob("agent_replay-*.tar.gz")
    return clone, wheel, sdist


def test_the_readme_names_the_files_python_m_build_makes(built: tuple[Path, Path, Path]) -> None:
    _, wheel, sdist = built
    assert f"dist/{wheel.name}" in README
    assert sdist.name in README


def test_the_wheel_metadata_is_complete_and_valid(built: tuple[Path, Path, Path]) -> None:
    _, wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        text = archive.read(info).decode()
        entry_points = archive.read(info.replace("METADATA", "entry_points.txt")).decode()
    meta = Metadata.from_email(text, validate=True)  # raises on any invalid field
    assert meta.name == "agent-replay"
    assert meta.summary and meta.requires_python and meta.license_expression == "MIT"
    assert meta.description_content_type == "text/markdown"
    assert meta.description and meta.description.startswith("# agent-replay")
    assert meta.keywords and meta.classifiers and meta.author
    assert {str(r.name) for r in meta.requires_dist or []} >= {"vcrpy", "httpx", "pydantic"}
    assert {"mcp", "ray", "dask", "tau2", "demo"} <= set(meta.provides_extra or [])
    assert "replay = replay._cli.main:main" in entry_points
    assert "replay = replay.pytest_plugin" in entry_points
    for data in ("recorder/cassette.schema.json", "recorder/py.typed", "replay/py.typed"):
        assert data in names
    assert any(n.endswith("/licenses/LICENSE") for n in names)
    assert not [n for n in names if n.startswith(("tests/", "examples/", "bench/"))]


def test_the_sdist_builds_the_same_package(built: tuple[Path, Path, Path]) -> None:
    _, _, sdist = built
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    for needed in ("pyproject.toml", "README.md", "LICENSE", "recorder/cassette.schema.json"):
        assert needed in names


def test_the_readme_install_from_a_clone_works_in_a_new_venv(
    built: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    clone, _, _ = built
    bin_ = _venv(tmp_path / "venv")
    words = _readme_line(r"pip install /path/to/agent-replay")
    words = [str(clone) if w == "/path/to/agent-replay" else w for w in words]
    _run([str(bin_ / "python"), "-m", *words, NO_COMPILE], cwd=tmp_path)
    assert "Usage: replay" in _run([str(bin_ / "replay"), "--help"], cwd=tmp_path)


def test_the_built_wheel_installs_in_a_new_venv(
    built: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _, wheel, _ = built
    bin_ = _venv(tmp_path / "venv")
    _run([str(bin_ / "python"), "-m", "pip", "install", "-q", NO_COMPILE, str(wheel)], cwd=tmp_path)
    assert "Usage: replay" in _run([str(bin_ / "replay"), "--help"], cwd=tmp_path)
    code = "import recorder, replay; print(recorder.__file__)"
    where = _run([str(bin_ / "python"), "-c", code], cwd=tmp_path)
    assert str(tmp_path / "venv") in where  # the installed package, not the clone
