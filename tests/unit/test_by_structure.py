"""What runs as the person, found by structure (issue 26, item 2), on real trees with no
privileges: home's links, what the person's shells source and their git settings name,
what a walk below the top finds, and the analysis that holds each of them."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

from supervisor.below_top import activation_scripts, walk
from supervisor.dotfiles import analyze
from supervisor.home_places import home_links, home_places
from supervisor.person_settings import sourced_files, value_paths
from supervisor.runs_as_you import VCS_METADATA

NAMES = frozenset((".git", *(v.name for v in VCS_METADATA)))


def protected(top: Path, home: Path) -> dict[str, str]:
    return {p.path: p.reason for p in analyze(str(top), home=str(home)).protected}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path.resolve() / "home"
    folder.mkdir()
    for variable in ("GIT_CONFIG_GLOBAL", "XDG_CONFIG_HOME", "ZDOTDIR", "ENV", "BASH_ENV",
                     "INPUTRC"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", "/dev/null")
    return folder


# -- home's links --------------------------------------------------------------------------

def test_every_link_among_homes_dot_entries_is_found_whatever_its_name(home: Path) -> None:
    names = [secrets.token_hex(3) for _ in range(4)]
    (home / "dotfiles").mkdir()
    (home / f".{names[0]}").symlink_to(f"dotfiles/{names[0]}")
    (home / f".d{names[1]}" / "x").mkdir(parents=True)
    (home / f".d{names[1]}" / names[1]).symlink_to("/nowhere")
    (home / f".d{names[1]}" / "x" / names[2]).symlink_to("/nowhere")
    (home / f".d{names[1]}" / "x" / "y").mkdir()
    (home / f".d{names[1]}" / "x" / "y" / "deeper").symlink_to("/nowhere")
    (home / names[3]).symlink_to("dotfiles")  # no dot at home's top: the person's files
    found = home_links(str(home))
    assert sorted(found.links) == sorted([
        f"{home}/.{names[0]}", f"{home}/.d{names[1]}/{names[1]}",
        f"{home}/.d{names[1]}/x/{names[2]}"])  # three levels of folders: home, .d, x
    assert found.unwalked == ()


def test_where_the_home_walk_stops_it_says(home: Path) -> None:
    for index in range(5):
        (home / f".d{index}" / "sub").mkdir(parents=True)
    found = home_links(str(home), max_folders=3)
    # home, .d0 and .d1 listed; the rest waiting, breadth first
    assert found.unwalked == tuple(sorted(
        [f"{home}/.d0/sub", f"{home}/.d1/sub", f"{home}/.d2", f"{home}/.d3", f"{home}/.d4"]))


def test_a_linked_place_keeps_its_target(home: Path) -> None:
    dotfiles = home / "dotfiles"
    name = secrets.token_hex(3)
    (dotfiles / "nvim").mkdir(parents=True)
    (dotfiles / name).write_text("#!/bin/sh\n")
    (home / f".{name}").symlink_to(f"dotfiles/{name}")
    (home / ".config").mkdir()
    (home / ".config" / "nvim").symlink_to("../dotfiles/nvim")
    places = {p.path: p for p in home_places(str(home), "/usr/bin")}
    assert places[f"{home}/.{name}"].real == f"{dotfiles}/{name}"
    assert places[f"{home}/.{name}"].linked  # found by the walk: a grant of it is not refused
    assert places[f"{home}/.config/nvim"].real == f"{dotfiles}/nvim"  # a table's place
    kept = protected(dotfiles, home)
    assert f"{dotfiles}/{name}" in kept and f"{dotfiles}/nvim" in kept
    assert "a link in your home leads here" in kept[f"{dotfiles}/{name}"]


# -- what the shells source ------------------------------------------------------------------

def test_literal_sources_are_followed_and_the_rest_are_not(home: Path) -> None:
    (home / ".bashrc").write_text(
        "# . ~/commented\n"
        ". ~/a\n"
        "source \"$HOME/b\"\n"
        "[ -f ~/c ] && . ~/c\n"
        "if true; then source ${HOME}/d; fi\n"
        "for f in ~/e/*; do . \"$f\"; done\n"
        ". $OTHER/f\n"
        "echo . notsourced\n"
        "  . 'relative'\n")
    (home / "a").write_text("source ~/nested\n")
    (home / ".inputrc").write_text("$include ~/keys\n")
    found = dict(sourced_files(str(home), environ={}))
    for name in ("a", "b", "c", "d", "nested", "relative", "keys"):
        assert f"{home}/{name}" in found, name
    assert found[f"{home}/nested"] == "sourced by ~/a"
    assert not any(p.startswith((f"{home}/e", f"{home}/f", f"{home}/notsourced"))
                   for p in found)


def test_a_sourced_file_in_a_grant_is_kept_held_when_missing(home: Path) -> None:
    work = home / "work"
    work.mkdir()
    (work / "aliases").write_text("")
    (home / ".zshrc").write_text(f"source {work}/aliases\n. ~/work/later\n")
    kept = {p.path: p for p in analyze(str(work), home=str(home)).protected}
    assert kept[f"{work}/aliases"].exists
    assert kept[f"{work}/later"].placeholder == f"{work}/later"


# -- what git's settings name --------------------------------------------------------------

def test_value_paths_takes_every_absolute_or_home_word() -> None:
    assert value_paths("core.pager", "less --lesskey-file=~/k -R /x/y", "/h") == [
        "/h/k", "/x/y"]
    assert value_paths("alias.t", "!sh ~/bin/t && /opt/x", "/h") == ["/h/bin/t", "/opt/x"]
    assert value_paths("remote.origin.url", "/srv/repo.git", "/h") == []
    assert value_paths("safe.directory", "/h/src", "/h") == []
    assert value_paths("core.editor", "vim", "/h") == []


def test_any_git_key_naming_a_path_is_judged_with_no_repository_there(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The class: random keys in the person's global settings, included through a file
    that is itself in the folder, each naming a path there."""
    work = home / "work"
    work.mkdir()
    included = work / "team.gitconfig"
    keys = [(secrets.token_hex(3), secrets.token_hex(3), secrets.token_hex(3))
            for _ in range(20)]
    included.write_text("".join(f"[s{s}]\n\tk{k} = ~/work/{v}\n" for s, k, v in keys))
    (home / ".gitconfig").write_text(
        "[include]\n\tpath = ~/work/team.gitconfig\n[core]\n\thooksPath = ~/work/hooks\n"
        f"\tfsmonitor = {work}/monitor --watch\n")
    kept = protected(work, home)
    assert str(included) in kept and f"{work}/hooks" in kept and f"{work}/monitor" in kept
    for section, key, value in keys:
        assert f"{work}/{value}" in kept, (section, key)
        assert f"s{section}.k{key} = ~/work/{value}" in kept[f"{work}/{value}"]


# -- below the top -----------------------------------------------------------------------------

def test_the_walk_finds_checkouts_bare_repositories_and_environments(tmp_path: Path) -> None:
    top = tmp_path.resolve()
    (top / "app" / ".git").mkdir(parents=True)
    (top / "app" / "vendor" / "lib" / ".hg").mkdir(parents=True)
    (top / "deep" / "a" / "b").mkdir(parents=True)
    (top / "deep" / "a" / "b" / ".fslckout").write_text("")
    (top / "central.git" / "objects").mkdir(parents=True)
    (top / "central.git" / "refs").mkdir()
    (top / "central.git" / "HEAD").write_text("ref: refs/heads/main\n")
    (top / ".venv" / "bin").mkdir(parents=True)
    (top / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (top / ".venv" / "bin" / "activate").write_text("")
    (top / ".venv" / "bin" / "activate.fish").write_text("")
    (top / ".venv" / "bin" / "python").symlink_to("/usr/bin/python3")
    (top / "linked").symlink_to(top / "app")  # never followed
    found = walk(str(top), NAMES)
    assert sorted(found.checkouts) == [(f"{top}/app", ".git"),
                                       (f"{top}/app/vendor/lib", ".hg"),
                                       (f"{top}/deep/a/b", ".fslckout")]
    assert found.bare == (f"{top}/central.git",)
    assert found.venvs == (f"{top}/.venv",)
    assert found.unwalked == ()
    assert activation_scripts(f"{top}/.venv") == [f"{top}/.venv/bin/activate",
                                                  f"{top}/.venv/bin/activate.fish"]
    assert walk(str(top), NAMES, max_folders=2).unwalked != ()


def test_what_was_there_at_launch_is_held_like_the_tops(home: Path) -> None:
    top = home / "src"
    (top / "app" / ".git" / "hooks").mkdir(parents=True)
    (top / "app" / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (top / "app" / ".vscode").mkdir()
    (top / "other" / ".jj").mkdir(parents=True)
    (top / "env" / "bin").mkdir(parents=True)
    (top / "env" / "pyvenv.cfg").write_text("")
    (top / "env" / "bin" / "activate").write_text("")
    (top / "central.git" / "objects").mkdir(parents=True)
    (top / "central.git" / "refs").mkdir()
    (top / "central.git" / "hooks").mkdir()
    (top / "central.git" / "HEAD").write_text("ref: refs/heads/main\n")
    dots = analyze(str(top), home=str(home))
    kept = {p.path: p for p in dots.protected}
    assert "a push to it runs its hooks" in kept[f"{top}/central.git/hooks"].reason
    assert f"{top}/central.git/objects" not in kept  # a push from inside still works
    for path in ("app/.git", "app/.vscode", "other/.jj", "env/bin/activate"):
        assert kept[f"{top}/{path}"].exists, path
        assert kept[f"{top}/{path}"].placeholder is None  # nothing missing is held below
    assert f"{top}/app/.claude" not in kept
    assert "the repository app (there at launch)" in kept[f"{top}/app/.git"].reason
    assert dots.unwalked == ()


def test_the_tops_own_submodules_are_not_walked_twice(home: Path) -> None:
    top = home / "proj"
    (top / ".git" / "modules" / "lib").mkdir(parents=True)
    (top / "lib").mkdir()
    (top / "lib" / ".git").write_text("gitdir: ../.git/modules/lib\n")
    kept = protected(top, home)
    assert not any("there at launch" in why for why in kept.values())
    assert os.path.join(top, "lib", ".git") not in kept or \
        "there at launch" not in kept[os.path.join(top, "lib", ".git")]


def test_a_linked_git_below_the_top_names_its_link(home: Path, tmp_path: Path) -> None:
    """A repository below whose .git is a link the sandbox could repoint: the protection
    names the link, and the launch is refused for it (view.check_links)."""
    top = home / "src"
    (top / "app").mkdir(parents=True)
    (tmp_path / "gitdir").mkdir()
    (top / "app" / ".git").symlink_to(tmp_path / "gitdir")
    kept = {p.name: p for p in analyze(str(top), home=str(home)).protected}
    assert kept[f"{top}/app/.git"].link == f"{top}/app/.git"


def test_a_git_value_is_expanded_as_its_shell_expands_it() -> None:
    """red team 4: core.editor = `${HOME%/}/w/ed`, nested defaults, an unset variable
    glued: each named; a path whose start only the shell knows refuses the launch, but
    the repository's own top (`$(git rev-parse --show-toplevel)`, where git runs it)."""
    import pytest as _pytest

    from supervisor.person_settings import SettingsUnbounded
    from supervisor.person_settings import value_paths as git_paths

    home = "/home/u"
    assert git_paths("core.editor", "${HOME%/}/w/ed", home) == [f"{home}/w/ed"]
    assert git_paths("core.editor", "${ZQ_A:-${ZQ_B:-$HOME}}/w/ed", home) == [
        f"{home}/w/ed"]
    assert git_paths("alias.x", "!$HOME${ZQ_UNSET}/w/x", home) == [f"{home}/w/x"]
    assert git_paths("alias.t", "!$(git rev-parse --show-toplevel)/tools/x.sh", home,
                     "/srv/repo") == ["/srv/repo/tools/x.sh"]
    assert git_paths("alias.h", "!ls $(git rev-parse --git-dir)/hooks", home,
                     "/srv/repo") == ["/srv/repo/.git/hooks"]  # held as .git is
    for value in ("$(echo ~)/w/ed", "!`echo ~`/w/x"):
        with _pytest.raises(SettingsUnbounded):
            git_paths("core.editor", value, home)
    assert value_paths("alias.l", "!git log -1 $(~/w/x.sh)", home) == [f"{home}/w/x.sh"]
