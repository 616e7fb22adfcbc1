"""A folder written inside the person's repository (`cd ~/proj/sub && lnk sandbox run`):
what the settings of the repository AROUND it name inside it is held as for a repository
at its top (issue 26). By class: random section, driver and alias names nobody listed,
relative and `~/` paths, nested includes, a link from outside into the folder, a
Mercurial hgrc's hooks, extensions and `%include`; what lies outside the folder is not
this grant's to hold. Real trees, git itself only to make the repositories."""

from __future__ import annotations

import secrets
import shutil
import subprocess
from pathlib import Path

import pytest

from supervisor.dotfiles import DotFiles, Protected, analyze
from supervisor.hg_settings import named_paths

CLEAN_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
             "GIT_CONFIG_GLOBAL": "/dev/null", "LANG": "C"}


def git(*args: str, cwd: Path) -> None:
    subprocess.run([shutil.which("git") or "git", *args], cwd=cwd, env=CLEAN_ENV,
                   capture_output=True, text=True, check=True)


def name() -> str:
    return "n" + secrets.token_hex(4)


def around(dots: DotFiles) -> dict[str, Protected]:
    """The entries the repositories around the top gave, by name."""
    return {p.name: p for p in dots.protected if "around the folder" in p.reason}


@pytest.mark.requires_git
def test_the_enclosing_repositorys_settings_are_held_inside_the_folder(
        tmp_path: Path) -> None:
    proj = tmp_path.resolve() / "proj"
    top = proj / name()
    top.mkdir(parents=True)
    git("init", "-q", cwd=proj)
    driver, diff, merge, alias, hooks, folder = (name() for _ in range(6))
    there = top / f"{name()}.sh"
    there.write_text("#!/bin/sh\n")
    outer = top / f"{name()}.cfg"
    outer.write_text(f"[include]\n\tpath = {folder}/inner.cfg\n")  # from its own folder
    outside = proj / "tools" / "x.sh"
    link = proj / "linked"
    link.symlink_to(top / folder)  # a name outside that leads into the folder
    rel = top.name
    for key, value in (
            ("core.hooksPath", f"{rel}/{hooks}"),
            (f"filter.{driver}.smudge", f"sh {rel}/{folder}/smudge --quiet"),
            (f"diff.{diff}.textconv", str(there)),
            (f"merge.{merge}.driver", "tools/x.sh %O %A"),  # outside the folder
            (f"alias.{alias}", f"!{proj}/linked/run.sh"),
            ("include.path", f"../{rel}/{outer.name}"),
            ("core.fsmonitor", "true"),  # a boolean: no program
    ):
        git("config", key, value, cwd=proj)
    dots = analyze(str(top), home="/home/u")
    found = around(dots)
    label = f"the repository {proj} around the folder: "
    assert {n: (p.kind, p.exists, p.placeholder, p.reason) for n, p in found.items()} == {
        f"{top}/{hooks}": ("folder", False, f"{top}/{hooks}",
                           f"{label}core.hooksPath = {rel}/{hooks} in {proj}/.git/config: "
                           "git runs the hooks there"),
        f"{top}/{folder}/smudge": ("file", False, f"{top}/{folder}",
                                   f"{label}filter.{driver}.smudge = sh {rel}/{folder}/smudge "
                                   f"--quiet in {proj}/.git/config: git runs it"),
        str(there): ("file", True, None, f"{label}diff.{diff}.textconv = {there} in "
                     f"{proj}/.git/config: git runs it"),
        f"{proj}/linked/run.sh": ("file", False, None,
                                  f"{label}alias.{alias} = !{proj}/linked/run.sh in "
                                  f"{proj}/.git/config: git runs it"),
    }
    # the link's target inside the folder is what is held, the link named for refusal
    assert found[f"{proj}/linked/run.sh"].path == f"{top}/{folder}/run.sh"
    assert found[f"{proj}/linked/run.sh"].link == str(link)
    # the includes, followed from the enclosing config (not labelled: git's own words)
    names = {p.name: p for p in dots.protected}
    assert names[str(outer)].reason == (f"include.path = ../{rel}/{outer.name} in "
                                        f"{proj}/.git/config: git reads settings from it")
    assert names[f"{top}/{folder}/inner.cfg"].reason == (
        f"include.path = {folder}/inner.cfg in {outer}: git reads settings from it")
    assert str(outside) not in names and f"{proj}/.git" not in names


@pytest.mark.requires_git
def test_every_repository_around_is_read_and_nested_settings_name_in_the_nearest(
        tmp_path: Path) -> None:
    """A repository at home holding the project's (a dotfiles repository): the person may
    run git in either. And an included file inside the folder, planted at launch with
    a program key, is followed: what it names is held too."""
    home = tmp_path.resolve() / "home"
    proj = home / "proj"
    top = proj / "sub"
    top.mkdir(parents=True)
    git("init", "-q", cwd=home)
    git("init", "-q", cwd=proj)
    key = f"diff.{name()}.command"
    git("config", key, "~/proj/sub/d.sh", cwd=home)
    git("config", "core.editor", "sub/edit.sh", cwd=proj)
    found = around(analyze(str(top), home=str(home)))
    assert sorted(found) == [f"{top}/d.sh", f"{top}/edit.sh"]
    assert found[f"{top}/d.sh"].reason.startswith(f"the repository {home} around the folder")


def test_a_mercurial_repository_around_the_folder(tmp_path: Path) -> None:
    proj = tmp_path.resolve() / "proj"
    top = proj / "sub"
    (top / "lib").mkdir(parents=True)
    (proj / ".hg").mkdir()
    hook, ext, section, key, tool = name(), name(), name(), name(), name()
    (top / "more.rc").write_text(f"[{section}]\n{key} = python:sub/lib/{ext}.py:run\n")
    (proj / ".hg" / "hgrc").write_text(
        f"# a comment sub/no.sh\n[hooks]\npre-status.{hook} = sh sub/{hook}.sh\n"
        f"[extensions]\n{ext} = ~/elsewhere/x.py\n"
        f"[merge-tools]\n{tool}.executable =\n  sub/tool --flag={name()}/t\n"
        "%include ../sub/more.rc\n[paths]\ndefault = https://example.com/sub/x\n")
    found = around(analyze(str(top), home=str(proj)))
    rc = f"{proj}/.hg/hgrc"
    label = f"the repository {proj} around the folder: "
    assert {n: p.reason for n, p in found.items()} == {
        f"{top}/{hook}.sh": f"{label}[hooks] pre-status.{hook} in {rc}: hg runs or reads it",
        f"{top}/tool": f"{label}[merge-tools] {tool}.executable in {rc}: hg runs or reads it",
        f"{top}/more.rc": f"{label}%include ../sub/more.rc in {rc}: hg reads settings from it",
        # relative from the repository's root and from the including file's folder
        **{f"{start}/lib/{ext}.py": f"{label}[{section}] {key} in {top}/more.rc: hg runs "
                                    "or reads it" for start in (top, top / "sub")},
    }
    assert all(p.placeholder is not None or p.exists for p in found.values())


def test_hg_settings_take_every_path_word_of_every_value(tmp_path: Path) -> None:
    rc = tmp_path / ".hg" / "hgrc"
    rc.parent.mkdir()
    key = name()
    rc.write_text(f"[{name()}]\n{key} = a/b 'c d/e' --x=f/g python:h/i.py:fn plain ~/j\n")
    got = sorted(p for p, _ in named_paths(str(tmp_path), str(rc), "/home/u"))
    expected = {f"{start}/{p}" for start in (tmp_path, rc.parent)
                for p in ("a/b", "c d/e", "f/g", "h/i.py")}
    assert got == sorted(expected | {"/home/u/j"})
