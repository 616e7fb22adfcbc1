"""What a user installs is the source tree: the wheel holds every package and data file.

A hand-written package list once left `supervisor.platform` out of the wheel, so a
non-editable install crashed on every command while CI, which installed editable, passed.
The wheel is built here the way pip builds it for a user (from the checkout, without
the network: `--no-build-isolation` uses this venv's setuptools and cffi) and compared
with the tree, so a package or data file added later is checked without an edit here.
What the build makes and the tree does not hold (the compiled inner confiner) is checked
on its own: in the wheel, runnable, static, built from the tree's source.
"""

from __future__ import annotations

import configparser
import hashlib
import importlib
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOP_PACKAGES = ("supervisor", "inner", "netns_helper", "lnk_sandbox")
# What the tree holds that is not for the wheel: compiled leftovers of a local build.
NOT_SHIPPED = (".pyc", ".so", ".o")
# What the build makes from the tree (an editable install leaves it in the tree too):
# setup.py's compiled inner confiner.
BUILT = ("inner/confine",)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """Built from a copy of the tree: setuptools builds in the source's `build/`, and a
    file left there by an earlier build would hide one the build now leaves out."""
    source = tmp_path_factory.mktemp("source") / "lnk-sandbox"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "__pycache__", ".*_cache", *(
            f"*{suffix}" for suffix in NOT_SHIPPED)))
    for built in BUILT:  # an editable install's build: the wheel's must be its own
        (source / built).unlink(missing_ok=True)
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-q", "-w", str(out), str(source)],
        capture_output=True, text=True, cwd=out)
    assert build.returncode == 0, f"pip wheel failed:\n{build.stdout}\n{build.stderr}"
    wheels = list(out.glob("lnk_sandbox-*.whl"))
    assert len(wheels) == 1, wheels
    return zipfile.ZipFile(wheels[0])


def _tree_files() -> set[str]:
    """Every file of the four packages' folders that a user's install needs."""
    files = set()
    for top in TOP_PACKAGES:
        for path in (REPO / top).rglob("*"):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            if path.suffix in NOT_SHIPPED or path.relative_to(REPO).as_posix() in BUILT:
                continue
            files.add(path.relative_to(REPO).as_posix())
    return files


def test_every_package_of_the_tree_is_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    packages = {p.parent.relative_to(REPO).as_posix()
                for top in TOP_PACKAGES for p in (REPO / top).rglob("__init__.py")}
    assert "supervisor/linux" in packages and "supervisor/proxy" in packages
    in_wheel = {name.rsplit("/", 1)[0] for name in wheel.namelist()
                if name.endswith("/__init__.py")}
    assert packages - in_wheel == set()


def test_every_file_of_the_packages_is_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    """Modules and data alike (default_spec.toml, py.typed): a file of a package's folder
    missing from the wheel is one a user's install lacks."""
    missing = _tree_files() - set(wheel.namelist())
    assert missing == set()


def test_nothing_but_the_packages_is_installed_at_the_top(wheel: zipfile.ZipFile) -> None:
    """tests/, benchmarks/ and tools/ stay out of a user's site-packages."""
    tops = {name.split("/", 1)[0] for name in wheel.namelist()}
    assert {t for t in tops if not t.endswith((".dist-info", ".data"))} == set(TOP_PACKAGES)


def test_every_console_script_names_a_function_that_exists(wheel: zipfile.ZipFile) -> None:
    entry_points = next(n for n in wheel.namelist()
                        if n.endswith(".dist-info/entry_points.txt"))
    parser = configparser.ConfigParser()
    parser.read_string(wheel.read(entry_points).decode())
    scripts = dict(parser["console_scripts"])
    assert set(scripts) == {"lnk", "lnk-sandbox", "lnk-sandbox-shell-prefix"}
    for target in scripts.values():
        module, _, function = target.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), target


def test_the_compiled_inner_is_built_into_the_wheel(wheel: zipfile.ZipFile) -> None:
    """setup.py builds inner/confine at install: in the wheel, executable by everyone (the
    sandbox's own uid runs it in root mode), static (no loader: the sandbox may show no
    C library), built from the tree's confine.c (its digest is in the program)."""
    if shutil.which("cc") is None:
        from support.capabilities import missing

        missing("no C compiler here, so the wheel holds no compiled inner (the Python one "
                "runs)")
    info = wheel.getinfo("inner/confine")
    mode = info.external_attr >> 16
    assert stat.S_ISREG(mode) and mode & 0o777 == 0o755, oct(mode)
    program = wheel.read(info)
    assert program[:4] == b"\x7fELF"
    program_headers = int.from_bytes(program[32:40], "little")
    size, count = int.from_bytes(program[54:56], "little"), int.from_bytes(program[56:58],
                                                                               "little")
    kinds = [int.from_bytes(program[program_headers + i * size:][:4], "little")
             for i in range(count)]
    assert 3 not in kinds  # PT_INTERP: a loader to run it
    digest = hashlib.sha256((REPO / "inner" / "confine.c").read_bytes()).hexdigest()
    assert f"lnk-confine-source-sha256:{digest}".encode() in program
