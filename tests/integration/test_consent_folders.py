"""Consent that fits a harness (issue 31): a spec allowed for a folder and every folder
inside it, by `lnk sandbox allow --spec FILE --for DIR` ahead of time or by `b` when
asked, and each refusal saying the command that allows it; as root and as a user.

What an allowance for a folder covers: a snapshot made in it or below whose relative
form is the one allowed. Its `.` grants resolve inside the working directory; every other
grant, its target too, must be the very one allowed (supervisor/permissions.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from support.processes import at_terminal
from support.sandbox import LNK, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

SPEC = 'files.write = ["."]\nfiles.read = ["~/data"]\n'


def folders(sandbox: Sandbox) -> tuple[Path, Path, Path]:
    """`src` with two projects in it, and a folder beside it; `~/data` a link."""
    src = sandbox.base / "src"
    for path in (src / "a", src / "b" / "deep", sandbox.base / "elsewhere",
                 sandbox.base / "data-1", sandbox.base / "data-2"):
        path.mkdir(parents=True)
    (sandbox.home / "data").symlink_to(sandbox.base / "data-1")
    sandbox.chown()
    return src, src / "b" / "deep", sandbox.base / "elsewhere"


def run_in(sandbox: Sandbox, spec: Path, where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*sandbox.who.prefix, LNK, "sandbox", "run", "--spec", str(spec),
                           "--", "/bin/echo", "RAN"], cwd=where, env=sandbox.env(),
                          capture_output=True, text=True, timeout=60)


def test_allowed_ahead_for_a_folder_runs_in_every_folder_inside_and_nowhere_else(
        sandbox: Sandbox) -> None:
    src, deep, elsewhere = folders(sandbox)
    spec = sandbox.write_spec(SPEC)
    refused = run_in(sandbox, spec, deep)
    assert (refused.returncode, refused.stdout, refused.stderr) == (125, "", (
        f"lnk-sandbox: the spec {spec} was not allowed before, and there is no terminal "
        "to ask on\n"
        "  hint: allow it at a terminal (it shows what it allows and asks): lnk sandbox "
        f"allow --spec {spec} --for {deep}; or pass --yes\n"))
    allowed = sandbox.lnk("allow", "--spec", str(spec), "--for", str(src), "--yes")
    assert (allowed.returncode, allowed.stdout, allowed.stderr) == (
        0, "", f"lnk-sandbox: allowed {spec} in {src} and every folder inside it\n")
    for where in (src, src / "a", deep):
        done = run_in(sandbox, spec, where)
        assert (done.returncode, done.stdout) == (0, "RAN\n"), (where, done.stderr)
    done = run_in(sandbox, spec, elsewhere)
    assert done.returncode == 125 and "was not allowed before" in done.stderr
    # A grant not named from the working directory must be the very one allowed: ~/data
    # pointed elsewhere is asked about again, in the allowed folder too.
    (sandbox.home / "data").unlink()
    (sandbox.home / "data").symlink_to(sandbox.base / "data-2")
    sandbox.chown()
    done = run_in(sandbox, spec, src / "a")
    assert done.returncode == 125 and "was not allowed before" in done.stderr


def test_a_dot_grant_through_a_link_out_of_the_folder_is_not_covered(
        sandbox: Sandbox) -> None:
    """`./out` resolving outside the working directory (a link there) keeps its target
    in what is allowed: in another folder inside, where it leads elsewhere, it is asked
    again. (A `./out` below a `.` grant is never resolved through a link: grants.py.)"""
    src, _, elsewhere = folders(sandbox)
    spec = sandbox.write_spec('files.write = ["./out"]\nfiles.read = ["~/data"]\n')
    for project, target in ((src, sandbox.base / "data-2"), (src / "a", sandbox.base /
                            "data-2"), (src / "b", elsewhere)):
        (project / "out").symlink_to(target)
    sandbox.chown()
    assert sandbox.lnk("allow", "--spec", str(spec), "--for", str(src),
                       "--yes").returncode == 0
    # In a, ./out leads where it led when allowed: allowed (and then refused for its
    # working directory, which this spec does not let the sandbox see).
    done = run_in(sandbox, spec, src / "a")
    assert "was not allowed before" not in done.stderr
    assert "is in no folder the spec grants" in done.stderr, done.stderr
    done = run_in(sandbox, spec, src / "b")
    assert done.returncode == 125 and "was not allowed before" in done.stderr


def test_answered_b_at_a_terminal_covers_the_folders_inside(sandbox: Sandbox) -> None:
    src, deep, elsewhere = folders(sandbox)
    spec = sandbox.write_spec(SPEC)
    argv = [*sandbox.who.prefix, LNK, "sandbox", "run", "--spec", str(spec), "--",
            "/bin/echo", "STARTED"]
    status, output = at_terminal(argv, cwd=src, env=sandbox.env(),
                                 typed=((b"[y/b/N]", b"b\n"),))
    assert status == 0 and b"STARTED" in output, output
    assert f"b: yes, for this folder ({src}) and every folder inside it".encode() in output
    assert run_in(sandbox, spec, deep).returncode == 0
    assert run_in(sandbox, spec, elsewhere).returncode == 125


def test_allow_asks_at_a_terminal_and_refuses_without_one(sandbox: Sandbox) -> None:
    src, deep, _ = folders(sandbox)
    spec = sandbox.write_spec(SPEC)
    alone = sandbox.lnk("allow", "--spec", str(spec), "--for", str(src))
    assert (alone.returncode, alone.stderr) == (125, (
        "lnk-sandbox: there is no terminal to ask on\n"
        "  hint: run it at a terminal, or pass --yes having read `lnk sandbox describe "
        "--spec FILE`\n"))
    argv = [*sandbox.who.prefix, LNK, "sandbox", "allow", "--spec", str(spec), "--for",
            str(src)]
    status, output = at_terminal(argv, cwd=sandbox.base, env=sandbox.env(),
                                 typed=((b"[y/N]", b"n\n"),))
    assert status == 125 and b"writes:" in output, output
    assert run_in(sandbox, spec, deep).returncode == 125
    status, output = at_terminal(argv, cwd=sandbox.base, env=sandbox.env(),
                                 typed=((b"[y/N]", b"y\n"),))
    assert status == 0, output
    assert run_in(sandbox, spec, deep).returncode == 0
    missing = sandbox.lnk("allow", "--spec", str(spec), "--for", str(src / "nope"), "--yes")
    assert missing.returncode == 125 and "no such folder" in missing.stderr
