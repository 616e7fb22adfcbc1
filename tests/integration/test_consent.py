"""Remembered permissions, asking, wrapped commands run later, and `describe`.

A snapshot the person allowed is remembered by what it grants; a spec whose snapshot
differs asks again. A wrapped command runs later from its saved snapshot, never
resolving a name again. `$LNK_HOME`, where all of this lives, is out of every sandbox's
reach.
"""

from __future__ import annotations

import errno
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from supervisor.limits import Limits
from supervisor.limits import describe as describe_limits
from supervisor.limits import resolve as resolve_limits
from support.processes import at_terminal
from support.sandbox import LNK, PROBE_SOURCE, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "describe"


def _linked_spec(sandbox: Sandbox) -> str:
    for name in ("data-a", "data-b"):
        (sandbox.base / name).mkdir()
        (sandbox.base / name / "which").write_text(name)
    (sandbox.home / "data").symlink_to(sandbox.base / "data-a")
    sandbox.chown()
    return 'files.read = ["~/data"]\nfiles.write = ["."]\n'


def test_a_spec_allowed_once_runs_again_and_asks_again_when_a_target_changes(
    sandbox: Sandbox,
) -> None:
    spec = _linked_spec(sandbox)
    first = sandbox.run("/bin/cat", str(sandbox.home / "data" / "which"), spec=spec, yes=False)
    assert first.returncode == 125
    assert "was not allowed before" in first.stderr and "--yes" in first.stderr
    allowed = sandbox.run("/bin/cat", str(sandbox.home / "data" / "which"), spec=spec)
    assert allowed.stdout == "data-a"
    again = sandbox.run("/bin/cat", str(sandbox.home / "data" / "which"), spec=spec, yes=False)
    assert again.returncode == 0 and again.stdout == "data-a"
    (sandbox.home / "data").unlink()
    (sandbox.home / "data").symlink_to(sandbox.base / "data-b")
    sandbox.chown()
    changed = sandbox.run("/bin/cat", str(sandbox.home / "data" / "which"), spec=spec,
                          yes=False)
    assert changed.returncode == 125
    assert "was not allowed before" in changed.stderr
    assert changed.stdout == ""


def test_the_default_spec_is_not_asked_about(sandbox: Sandbox) -> None:
    assert sandbox.run("/bin/true", yes=False).returncode == 0


def _at_terminal(sandbox: Sandbox, spec: Path, answer: bytes) -> tuple[int, bytes]:
    argv = [*sandbox.who.prefix, LNK, "sandbox", "run", "--spec", str(spec), "--",
            "/bin/echo", "STARTED"]
    return at_terminal(argv, cwd=sandbox.project, env=sandbox.env(),
                       typed=((b"[y/b/N]", answer),))


def test_at_a_terminal_the_description_is_shown_and_asked(sandbox: Sandbox) -> None:
    spec = sandbox.write_spec('files.read = ["/srv"]\nfiles.write = ["."]\n'
                              if Path("/srv").is_dir() else 'files.write = ["."]\n')
    status, output = _at_terminal(sandbox, spec, b"n\n")
    assert status == 125
    assert b"writes:" in output and str(sandbox.project).encode() in output
    assert b"STARTED" not in output
    status, output = _at_terminal(sandbox, spec, b"y\n")
    assert status == 0
    assert b"STARTED" in output
    assert sandbox.run("/bin/true", spec=spec.read_text(), yes=False).returncode == 0


def _wrap(sandbox: Sandbox, spec: str, *command: str) -> list[str]:
    done = sandbox.lnk("wrap", "--", *command, spec=spec)
    assert done.returncode == 0, done.stderr
    words = shlex.split(done.stdout)  # one shell command (an argument may hold a newline)
    assert words[1] == "exec" and words[3] == "--"
    assert words[4:] == list(command)
    return words


def _run_saved(sandbox: Sandbox, words: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*sandbox.who.prefix, *words], cwd="/", env=sandbox.env(),
                          capture_output=True, text=True, timeout=60)


def test_a_wrapped_command_runs_later_from_its_snapshot(sandbox: Sandbox) -> None:
    spec = _linked_spec(sandbox)
    words = _wrap(sandbox, spec, "/bin/cat", str(sandbox.home / "data" / "which"))
    done = _run_saved(sandbox, words)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "data-a"
    # Pointing the link elsewhere changes nothing for the saved command: the snapshot
    # holds the target, never resolved again.
    (sandbox.home / "data").unlink()
    (sandbox.home / "data").symlink_to(sandbox.base / "data-b")
    sandbox.chown()
    assert _run_saved(sandbox, words).stdout == "data-a"


def test_a_granted_folder_replaced_or_moved_after_wrap_is_never_the_new_place(
    sandbox: Sandbox,
) -> None:
    work = sandbox.home / "work"
    work.mkdir()
    sandbox.chown()
    spec = 'files.write = ["~/work"]\n'
    target = work / "out"
    words = _wrap(sandbox, spec, PYTHON_INSIDE, "-c", PROBE_SOURCE, "write", str(target))
    decoy = sandbox.base / "decoy"
    work.rename(decoy)
    moved = _run_saved(sandbox, words)
    assert moved.returncode == 125
    assert "no longer exists" in moved.stderr
    work.symlink_to(decoy)
    linked = _run_saved(sandbox, words)
    assert linked.returncode == 125
    assert f"{work} is a link" in linked.stderr
    assert not (decoy / "out").exists()


def test_a_removed_or_changed_snapshot_refuses_the_launch(sandbox: Sandbox) -> None:
    words = _wrap(sandbox, 'files.write = ["."]\n', "/bin/true")
    saved = sandbox.lnk_home / "snapshots" / f"{words[2]}.json"
    assert _run_saved(sandbox, words).returncode == 0
    data = json.loads(saved.read_text())
    data["grants"][0]["target"] = "/"
    saved.write_text(json.dumps(data))
    tampered = _run_saved(sandbox, words)
    assert tampered.returncode == 125
    assert "was changed since it was saved" in tampered.stderr
    saved.unlink()
    removed = _run_saved(sandbox, words)
    assert removed.returncode == 125
    assert "no saved snapshot" in removed.stderr
    bogus = _run_saved(sandbox, [words[0], "exec", "../../etc/passwd", "--", "/bin/true"])
    assert bogus.returncode == 125 and "not a snapshot ID" in bogus.stderr


def test_a_forgotten_permission_refuses_a_saved_snapshot(sandbox: Sandbox) -> None:
    words = _wrap(sandbox, 'files.write = ["."]\n', "/bin/true")
    shutil.rmtree(sandbox.lnk_home / "permissions")
    done = _run_saved(sandbox, words)
    assert done.returncode == 125
    assert "never allowed" in done.stderr


@pytest.mark.parametrize("spec", [
    'files.read = ["~"]\nfiles.write = ["."]\n',
    'files.write = ["."]\n',
])
def test_no_sandbox_reaches_lnk_home(sandbox: Sandbox, spec: str) -> None:
    """Here $LNK_HOME is inside the project, which the sandbox writes."""
    lnk_home = sandbox.project / ".lnk-home"
    env = {"LNK_HOME": str(lnk_home)}
    words_done = sandbox.lnk("wrap", "--", "/bin/true", spec=spec, env=env)
    assert words_done.returncode == 0, words_done.stderr
    sandbox.chown()
    assert (lnk_home / "permissions").is_dir()
    for action, path, code in (
        ("list", lnk_home, 0),
        ("read", next((lnk_home / "permissions").iterdir()), errno.ENOENT),
        ("write", lnk_home / "permissions" / "forged", errno.ENOENT),
        ("write", lnk_home / "forged", errno.EROFS),
        ("mkdir", lnk_home / "snapshots" / "x", errno.ENOENT),
    ):
        result = sandbox.probe(action, str(path), spec=spec, env=env).expect(code)
        if action == "list":
            # Hidden: an empty folder inside, where the host's holds permissions.
            assert [x for x in result.stdout.splitlines() if x.startswith("LIST")] == [
                "LIST "]
    assert not (lnk_home / "permissions" / "forged").exists()
    assert not (lnk_home / "forged").exists()
    inside = sandbox.run("/bin/true", spec='files.read = ["./.lnk-home/permissions"]\n',
                         env=env)
    assert inside.returncode == 125
    assert "$LNK_HOME" in inside.stderr


def test_describe_json_follows_its_schema(sandbox: Sandbox) -> None:
    schema = json.loads((REPO / "docs" / "describe.schema.json").read_text())
    spec = _linked_spec(sandbox) + (
        '[commands]\nprograms = ["sh"]\n[network]\nmode = "proxy"\nallow = ["pypi.org"]\n'
        '[env]\nkeep = ["PATH"]\nset = { A = "1" }\n')
    for text in (None, spec):
        done = sandbox.lnk("describe", "--json", spec=text)
        assert done.returncode == 0, done.stderr
        jsonschema.validate(json.loads(done.stdout), schema)
    described = json.loads(sandbox.lnk("describe", "--json", spec=spec).stdout)
    assert described["read"] == [{"name": "~/data", "target": str(sandbox.base / "data-a"),
                                  "why": "files.read[0]"}]
    assert described["programs"][0]["name"] == "sh"
    assert described["network_allow"] == ["pypi.org"]


@pytest.mark.parametrize("name", ["default", "linked"])
def test_describe_text_matches_its_golden_file(sandbox: Sandbox, name: str) -> None:
    spec = None if name == "default" else _linked_spec(sandbox) + (
        '[commands]\nprograms = ["sh"]\n[env]\nset = { PIP_NO_INPUT = "1" }\n')
    done = sandbox.lnk("describe", spec=spec)
    assert done.returncode == 0, done.stderr
    text = done.stdout.replace(str(sandbox.base), "{BASE}")
    text = _machine_defaults(text.replace("/usr/bin/dash", "{SH}"))
    golden = GOLDEN / f"{name}.txt"
    if os.environ.get("LNK_UPDATE_GOLDEN") == "1":
        golden.write_text(text)
    assert text == golden.read_text()


def _machine_defaults(text: str) -> str:
    """The text with the limits that follow the machine held as names: the default
    memory, /tmp and /dev/shm sizes follow its memory, and open files its hard limit."""
    defaults = describe_limits(resolve_limits(Limits()))
    for line, held in zip(defaults[1:5], ("MEMORY", "TMP", "SHM", "FILES"), strict=True):
        text = text.replace(f"  {line}\n", f"  {line.split(':')[0]}: {{DEFAULT {held}}}\n")
    return text


def _repository(sandbox: Sandbox) -> None:
    """The project as a real repository: a hooks folder its settings name, an included
    settings file, and a submodule checked out."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c",
           "protocol.file.allow=always", "-c", "safe.directory=*"]
    inner = sandbox.base / "lib"
    subprocess.run([*git, "init", "-q", str(inner)], check=True)
    subprocess.run([*git, "-C", str(inner), "commit", "-q", "--allow-empty", "-m", "lib"],
                   check=True)
    project = sandbox.project
    subprocess.run([*git, "init", "-q", str(project)], check=True)
    (project / ".githooks").mkdir()
    (project / ".githooks" / "pre-commit").write_text("#!/bin/sh\n")
    (project / "shared.gitconfig").write_text("[core]\n\tautocrlf = false\n")
    subprocess.run([*git, "-C", str(project), "config", "core.hooksPath", ".githooks"],
                   check=True)
    subprocess.run([*git, "-C", str(project), "config", "include.path", "../shared.gitconfig"],
                   check=True)
    subprocess.run([*git, "-C", str(project), "submodule", "add", "-q", str(inner), "lib"],
                   check=True, capture_output=True)
    subprocess.run([*git, "-C", str(project), "commit", "-q", "-m", "start"], check=True)
    sandbox.chown()


@pytest.mark.parametrize("opened", ["none", "commit", "write_dot_files"])
def test_describe_shows_each_protection_of_a_repository(sandbox: Sandbox, opened: str) -> None:
    """Every protection of a written repository, and exactly what each key opens."""
    _repository(sandbox)
    spec = 'files.write = ["."]\n' + ("" if opened == "none" else f'files.{opened} = ["."]\n')
    done = sandbox.lnk("describe", spec=spec)
    assert done.returncode == 0, done.stderr
    text = done.stdout.replace(str(sandbox.base), "{BASE}").replace(str(sandbox.home), "{HOME}")
    text = _machine_defaults(text)
    golden = GOLDEN / f"repository-{opened}.txt"
    if os.environ.get("LNK_UPDATE_GOLDEN") == "1":
        golden.write_text(text)
    assert text == golden.read_text()
