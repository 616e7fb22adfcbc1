"""Below the top, what a run leaves cannot hide what was the person's (issue 26, item 6):
a venv mark never stops the walk, an unlistable folder is said, and what one launch found
is remembered in $LNK_HOME and held by every later one while it is there."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

from supervisor.below_top import (
    found_items,
    memory_data,
    memory_name,
    parse_memory,
    walk,
    with_remembered,
)
from supervisor.dotfiles import analyze
from supervisor.runs_as_you import VCS_METADATA

NAMES = frozenset((".git", *(v.name for v in VCS_METADATA)))


def test_a_venv_mark_at_any_depth_hides_no_repository_below(tmp_path: Path) -> None:
    """The class: a pyvenv.cfg planted in any folder above a repository, at a random
    depth with random names; the venv's packages alone are not walked."""
    for _ in range(10):
        top = tmp_path / secrets.token_hex(4)
        chain = [secrets.token_hex(2) for _ in range(secrets.randbelow(4) + 1)]
        repo = top.joinpath(*chain, "app")
        (repo / ".git").mkdir(parents=True)
        marked = top.joinpath(*chain[:secrets.randbelow(len(chain)) + 1])
        (marked / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (marked / "lib" / "python3" / "site-packages" / "pkg" / ".git").mkdir(parents=True)
        found = walk(str(top), NAMES)
        assert (str(repo), ".git") in found.checkouts
        assert str(marked) in found.venvs
        assert not any("site-packages" in folder for folder, _ in found.checkouts)


def test_an_unlistable_folder_is_said(tmp_path: Path) -> None:
    top = tmp_path / "top"
    (top / "hidden" / "app" / ".git").mkdir(parents=True)
    (top / "hidden").chmod(0o311)
    try:
        if os.geteuid() == 0:  # root lists it anyway: the walk finds the repository
            assert walk(str(top), NAMES).checkouts == ((f"{top}/hidden/app", ".git"),)
        else:
            assert walk(str(top), NAMES).unwalked == (f"{top}/hidden",)
    finally:
        (top / "hidden").chmod(0o755)


def test_what_a_launch_found_is_held_by_every_later_one_while_it_is_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk kept from the repository (300 folders sorting first), the memory of the
    first launch holds it all the same; gone, it is forgotten."""
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", "/dev/null")
    home = tmp_path / "home"
    home.mkdir()
    top = tmp_path / "src"
    app = top / "zz" / "app"
    (app / ".git" / "hooks").mkdir(parents=True)
    (top / "env" / "bin").mkdir(parents=True)
    (top / "env" / "pyvenv.cfg").write_text("")
    (top / "env" / "bin" / "activate").write_text("")
    (top / "central.git" / "objects").mkdir(parents=True)
    (top / "central.git" / "refs").mkdir()
    (top / "central.git" / "HEAD").write_text("ref: refs/heads/main\n")
    first = analyze(str(top), home=str(home))
    assert sorted(first.below) == sorted([(str(app), ".git"), (f"{top}/central.git", "bare"),
                                          (f"{top}/env", "venv")])
    for index in range(300):  # what a run leaves: the walk's bound is reached before zz
        (top / f"a{index:03}").mkdir()
    assert (str(app), ".git") not in walk(str(top), NAMES).checkouts
    kept = {p.path: p.reason for p in analyze(str(top), home=str(home),
                                              remembered=first.below).protected}
    assert f"{app}/.git" in kept and f"{top}/env/bin/activate" in kept
    assert f"{top}/central.git/hooks" in kept
    (app / ".git" / "hooks").rmdir()
    (app / ".git").rmdir()
    again = analyze(str(top), home=str(home), remembered=first.below)
    assert (str(app), ".git") not in again.below  # gone: forgotten


def test_the_memory_reads_only_what_it_wrote_for_that_folder() -> None:
    items = (("/w/a", ".git"), ("/w/b", "venv"))
    assert parse_memory(memory_data("/w", items), "/w") == items
    assert parse_memory(memory_data("/w", items), "/other") == ()
    for garbage in (b"", b"[]", b"{", b'{"top": "/w", "found": 3}', b"\xff", None):
        assert parse_memory(garbage, "/w") == ()
    assert memory_name("/w") != memory_name("/w/") and "/" not in memory_name("/w")[6:]


def test_remembered_items_outside_the_top_are_not_taken(tmp_path: Path) -> None:
    (tmp_path / "x" / ".git").mkdir(parents=True)
    below = walk(str(tmp_path / "top"), NAMES)
    assert with_remembered(below, str(tmp_path / "top"),
                           ((str(tmp_path / "x"), ".git"),)).checkouts == ()
    assert found_items(below) == ()
