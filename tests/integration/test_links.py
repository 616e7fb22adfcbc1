"""Grants named through links, and links planted between resolving and launching.

The snapshot keeps a grant's name and its target as resolved once; the launch opens every
target one component at a time without following links, so a link planted later is
refused by name and never followed.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import capabilities as caps
from support.sandbox import PROBE_SOURCE, PYTHON_INSIDE, SUPPORT, ProbeResult, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]


def test_a_grant_through_a_link_mounts_its_target(sandbox: Sandbox) -> None:
    real = sandbox.base / "data" / "real"
    real.mkdir(parents=True)
    (real / "f").write_text("through the link")
    (sandbox.base / "data" / "other").mkdir()
    (sandbox.base / "data" / "other" / "g").write_text("not granted")
    (sandbox.home / "shortcut").symlink_to(real)
    sandbox.chown()
    spec = 'files.read = ["~/shortcut"]\nfiles.write = ["."]\n'
    result = sandbox.probe("read", str(sandbox.home / "shortcut" / "f"), spec=spec).expect(0)
    assert "through the link" in result.stdout
    sandbox.probe("read", str(real / "f"), spec=spec).expect(0)
    sandbox.probe("read", str(sandbox.base / "data" / "other" / "g"), spec=spec).expect(
        errno.ENOENT)
    plan = sandbox.lnk("plan", spec=spec)
    assert f"ro-bind    {real}" in plan.stdout


def _two_stage(sandbox: Sandbox, spec: str, *command: str) -> subprocess.Popen[str]:
    path = sandbox.write_spec(spec)
    process = subprocess.Popen(
        [*sandbox.who.prefix, sys.executable, str(SUPPORT / "two_stage.py"), str(path), "--",
         *command],
        cwd=sandbox.working_directory(spec), env=sandbox.env(), stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "RESOLVED\n"
    return process


def _finish(process: subprocess.Popen[str]) -> ProbeResult:
    out, err = process.communicate("go\n", timeout=60)
    return ProbeResult(process.returncode, out, err)


@pytest.mark.parametrize("where", ["last", "middle"])
def test_a_folder_swapped_for_a_link_after_resolving_is_refused(
    sandbox: Sandbox, where: str
) -> None:
    work = sandbox.home / "work"
    (work / "proj").mkdir(parents=True)
    decoy = sandbox.base / "decoy"
    (decoy / "proj").mkdir(parents=True)
    sandbox.chown()
    spec = 'files.write = ["~/work/proj"]\n'
    target = work / "proj" / "out"
    process = _two_stage(sandbox, spec, PYTHON_INSIDE, "-c", PROBE_SOURCE, "write", str(target))
    if where == "last":
        shutil.rmtree(work / "proj")
        (work / "proj").symlink_to(decoy / "proj")
        link = work / "proj"
    else:
        shutil.rmtree(work)
        work.symlink_to(decoy)
        link = work
    result = _finish(process)
    assert result.code == 125, result.stderr
    assert not result.started
    assert f"{link} is a link" in result.stderr
    assert not (decoy / "proj" / "out").exists()


def test_a_link_planted_inside_a_grant_redirects_nothing(sandbox: Sandbox) -> None:
    secret = sandbox.home / "secret"
    secret.mkdir()
    (secret / "key").write_text("secret")
    (sandbox.home / "proj" / "out").mkdir(parents=True)
    sandbox.chown()
    spec = 'files.read = ["~/proj"]\nfiles.write = ["~/proj/out"]\n'
    process = _two_stage(sandbox, spec, PYTHON_INSIDE, "-c", PROBE_SOURCE, "write",
                         str(sandbox.home / "proj" / "out" / "key"))
    (sandbox.home / "proj" / "out").rmdir()
    (sandbox.home / "proj" / "out").symlink_to(secret)
    result = _finish(process)
    assert result.code == 125
    assert "is a link" in result.stderr
    assert (secret / "key").read_text() == "secret"


def test_a_link_already_inside_a_grant_is_refused_at_validation(sandbox: Sandbox) -> None:
    (sandbox.home / "proj").mkdir()
    (sandbox.base / "elsewhere").mkdir()
    (sandbox.home / "proj" / "out").symlink_to(sandbox.base / "elsewhere")
    sandbox.chown()
    spec = 'files.read = ["~/proj"]\nfiles.write = ["~/proj/out"]\n'
    done = sandbox.run("/bin/true", spec=spec)
    assert done.returncode == 125
    assert "files.write[0]" in done.stderr
    assert "is a link" in done.stderr


def test_a_missing_optional_grant_is_left_out(sandbox: Sandbox) -> None:
    spec = ('files.write = [".", { path = "~/.cache/missing", optional = true }]\n')
    sandbox.probe("stat", str(sandbox.home / ".cache" / "missing"), spec=spec).expect(
        errno.ENOENT)
    required = 'files.write = [".", "~/.cache/missing"]\n'
    done = sandbox.run("/bin/true", spec=required)
    assert done.returncode == 125
    assert "optional = true" in done.stderr


def test_the_installation_is_read_only_inside_a_write_grant(root_sandbox: Sandbox) -> None:
    """Run from the clone whose .venv holds lnk-sandbox, with the default spec: the venv,
    the packages and the folder Python imports lnk-sandbox from (on sys.path: a module
    planted there would run at the next `lnk`) are read-only. That folder is the clone
    itself for an editable install, the venv's site-packages for a wheel (as CI installs
    it, and a person with `pip install .`)."""
    import supervisor

    repo = Path(__file__).resolve().parents[2]
    venv = Path(sys.executable).parent.parent
    if not venv.is_relative_to(repo):
        caps.missing(f"the venv {venv} is not inside the clone {repo}")
    probe_target = venv / "pyvenv.cfg"
    before = probe_target.read_bytes()
    result = root_sandbox.probe("write", str(probe_target), cwd=repo)
    result.expect(errno.EROFS)
    assert probe_target.read_bytes() == before
    imported = Path(supervisor.__file__).resolve().parent.parent
    in_package = imported / "supervisor" / "lnk-probe"
    made = imported / f"lnk-probe-{os.getpid()}"
    try:
        root_sandbox.probe("write", str(in_package), cwd=repo).expect(errno.EROFS)
        root_sandbox.probe("write", str(made), cwd=repo).expect(errno.EROFS)
    finally:
        in_package.unlink(missing_ok=True)
        made.unlink(missing_ok=True)
