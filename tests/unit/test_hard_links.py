"""A file that runs as the person with more than one name (a hard link) refuses a write
grant on its filesystem (issue 26, red team 2): on real trees, random files of the
table and random settings, no privileges, nothing run."""

from __future__ import annotations

import os
import random
import secrets
from pathlib import Path

import pytest

from supervisor.errors import SpecError
from supervisor.hard_links import hard_linked, startup_files
from supervisor.home_places import home_places
from supervisor.runs_as_you import HOME_PLACES
from supervisor.settings_named import named_by_settings
from support.person_home import person_home, snapshot

TABLE_FILES = [p.name for p in HOME_PLACES if p.kind == "file"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return person_home(tmp_path, monkeypatch)


def linked_file(home: Path, form: str) -> Path:
    """A file that runs as the person in the form `form`, made in home: where it is."""
    if form == "table":
        path = home / random.choice(TABLE_FILES)[2:]
    elif form == "sourced":
        path = home / f".{secrets.token_hex(3)}" / "x.sh"
        (home / ".zshrc").write_text(f". ~/{path.relative_to(home)}\n")
    elif form == "included":
        path = home / secrets.token_hex(3) / "team.gitconfig"
        (home / ".gitconfig").write_text(f"[include]\n\tpath = {path}\n")
    else:
        assert form == "hook"
        hooks = home / secrets.token_hex(3)
        (home / ".gitconfig").write_text(f"[core]\n\thooksPath = {hooks}\n")
        path = hooks / "pre-commit"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# the person's\n")
    return path


@pytest.mark.parametrize("form", ["table", "sourced", "included", "hook"])
def test_a_file_that_runs_with_a_second_name_refuses_a_grant_on_its_filesystem(
        home: Path, form: str) -> None:
    path = linked_file(home, form)
    work = home / secrets.token_hex(3)
    work.mkdir()
    assert snapshot(home, f"~/{work.name}").written() == (str(work),)  # one name: fine
    os.link(path, work / secrets.token_hex(3))  # the other name, anywhere
    with pytest.raises(SpecError) as caught:
        snapshot(home, "~/proj")  # not even the folder holding it: the filesystem
    error = caught.value
    assert (error.file, error.key, error.line) == ("spec.toml", "files.write[0]", 2)
    assert f"on the filesystem of {path}, which has 2 names (hard links): " in str(error)
    assert error.hint is not None and "symbolic link" in error.hint


def test_the_name_a_symbolic_link_gives_is_judged_where_it_leads(home: Path) -> None:
    (home / "dotfiles").mkdir()
    (home / "dotfiles" / "bashrc").write_text("")
    (home / ".bashrc").symlink_to("dotfiles/bashrc")
    assert snapshot(home, "~/proj").written() == (str(home / "proj"),)
    os.link(home / "dotfiles" / "bashrc", home / "proj" / "old-bashrc")
    with pytest.raises(SpecError, match=r"/home/.bashrc \(a link to .*/dotfiles/bashrc\)"):
        snapshot(home, "~/proj")


def test_a_grant_on_another_filesystem_is_not_refused(home: Path) -> None:
    other = Path("/dev/shm")
    if not other.is_dir() or other.stat().st_dev == home.stat().st_dev:
        pytest.skip("no second filesystem at /dev/shm")  # a gap of the host, not a fault
    (home / ".bashrc").write_text("")
    os.link(home / ".bashrc", home / "bashrc-too")
    folder = Path(os.path.realpath(other)) / f"lnk-test-{secrets.token_hex(4)}"
    folder.mkdir()
    try:
        assert snapshot(home, str(folder)).written() == (str(folder),)
    finally:
        folder.rmdir()


def test_only_the_files_that_run_are_looked_at(home: Path) -> None:
    """Every file of the table and the settings, on a home holding them all, each once,
    and nothing else (no folder walked): about a hundred stats a start, timed by
    benchmarks/start.py."""
    for name in TABLE_FILES:
        path = home / name[2:]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    (home / ".config" / "nvim").mkdir(parents=True)
    (home / ".config" / "nvim" / "init.vim").write_text("")  # in a folder place: not
    places, named = home_places(str(home), "/usr/bin:/bin"), named_by_settings(str(home))
    files = [path for path, _, _ in startup_files(places, named)]
    assert len(files) == len(set(files)) < 150
    assert {str(home / name[2:]) for name in TABLE_FILES} <= set(files)
    assert str(home / ".config" / "nvim" / "init.vim") not in files
    assert hard_linked(places, named) == ()


@pytest.mark.requires_git
@pytest.mark.parametrize("what", ["a hook", "the settings", "a protected dot file"])
def test_a_file_the_analysis_holds_or_runs_with_a_second_name_is_reported(
        home: Path, what: str) -> None:
    """The same class inside a written folder: a hook (random name) in .git/hooks, the
    repository's settings or `.envrc`, hard-linked to a file of the project."""
    import subprocess

    from supervisor.dotfiles import analyze

    top = home / "proj"
    subprocess.run(["git", "init", "-q"], cwd=top, check=True)
    inner = {"a hook": top / ".git" / "hooks" / secrets.token_hex(3),
             "the settings": top / ".git" / "config",
             "a protected dot file": top / ".envrc"}[what]
    if not inner.exists():
        inner.write_text("#!/bin/sh\n")
    assert analyze(str(top), home=str(home)).hard_linked == ()
    os.link(inner, top / secrets.token_hex(3))
    assert [path for path, _ in analyze(str(top), home=str(home)).hard_linked] == [
        str(inner)]
