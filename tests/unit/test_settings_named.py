"""What the person's own settings name, judged for every write grant (issue 26, red team
1-4): a grant that is what they name, or lies inside a folder whose entries git runs, is
refused naming the setting; one that holds it keeps it read-only; each by its name and
by where its links lead, at any depth. On real trees, random names (no table names
them), no privileges, nothing run."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

from supervisor.dotfiles import analyze
from supervisor.errors import SpecError
from supervisor.settings_named import named_by_settings
from support.person_home import person_home, snapshot


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return person_home(tmp_path, monkeypatch)


def refused(home: Path, grant: str) -> SpecError:
    with pytest.raises(SpecError) as caught:
        snapshot(home, grant)
    assert (caught.value.file, caught.value.key, caught.value.line) == (
        "spec.toml", "files.write[0]", 2)
    return caught.value


def kept(top: Path, home: Path) -> dict[str, str]:
    return {p.path: p.reason for p in analyze(str(top), home=str(home)).protected}


def name() -> str:
    return "w" + secrets.token_hex(4)


def settings(home: Path, form: str, target: str) -> str:
    """Make the person's settings name `target` (a `~/` path) in the form `form`; what
    the refusal says of it."""
    if form == "sourced":
        (home / ".bashrc").write_text(f"[ -f {target} ] && . {target}\n")
        return "sourced by ~/.bashrc"
    if form == "sourced twice":  # by a file the startup file sources
        (home / "middle.sh").write_text(f"source {target}\n")
        (home / ".zshrc").write_text(". ~/middle.sh\n")
        return "sourced by ~/middle.sh"
    if form == "readline":
        (home / ".inputrc").write_text(f"$include {target}\n")
        return "included by ~/.inputrc"
    section, key = name(), name()
    if form == "unknown key":
        (home / ".gitconfig").write_text(f"[{section}]\n\t{key} = {target}\n")
        return f"{section}.{key} = {target}"
    if form == "include":
        (home / ".gitconfig").write_text(f"[include]\n\tpath = {target}\n")
        return f"include.path = {target}"
    if form == "included key":  # a key in a file the global settings include
        (home / "team.gitconfig").write_text(f"[core]\n\tfsmonitor = {target} --watch\n")
        (home / ".gitconfig").write_text("[include]\n\tpath = ~/team.gitconfig\n")
        return f"core.fsmonitor = {target} --watch in your ~/team.gitconfig"
    if form == "hooks":
        (home / ".gitconfig").write_text(f"[core]\n\thooksPath = {target}\n")
        return f"core.hookspath = {target}"
    assert form == "templates"
    (home / ".gitconfig").write_text(f"[init]\n\ttemplateDir = {target}\n")
    return f"init.templatedir = {target}"


def make(target: Path, form: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if form in FOLDER_FORMS:
        target.mkdir()
    else:
        target.write_text("")


FILE_FORMS = ["sourced", "sourced twice", "readline", "unknown key", "include",
              "included key"]
FOLDER_FORMS = ["hooks", "templates"]


@pytest.mark.parametrize("form", FILE_FORMS + FOLDER_FORMS)
def test_a_grant_that_is_what_the_settings_name_is_refused(home: Path, form: str) -> None:
    folder = home / name()
    target = folder / name()
    make(target, form)
    said = settings(home, form, f"~/{target.relative_to(home)}")
    error = refused(home, f"~/{target.relative_to(home)}")
    assert f"resolves to {target}, named by your settings: " in str(error)
    assert said in str(error)
    assert error.hint is not None and f"grant a folder that holds {target}" in error.hint
    # the folder around it is granted: what the settings name stays read-only in it
    assert snapshot(home, f"~/{folder.relative_to(home)}").written() == (str(folder),)
    assert said in kept(folder, home)[str(target)]


@pytest.mark.parametrize("form", FOLDER_FORMS)
def test_a_grant_inside_a_folder_git_runs_the_entries_of_is_refused(home: Path,
                                                                   form: str) -> None:
    folder = home / name()
    inner = folder / name() / name()
    inner.mkdir(parents=True)
    settings(home, form, f"~/{folder.relative_to(home)}")
    error = refused(home, f"~/{inner.relative_to(home)}")
    assert f"resolves to {inner}, inside {folder}: " in str(error)
    assert error.hint is not None and f"grant a folder outside {folder}" in error.hint


@pytest.mark.parametrize("form", FILE_FORMS)
def test_a_grant_inside_a_folder_a_file_setting_names_is_not_refused(home: Path,
                                                                     form: str) -> None:
    """A setting naming a file says nothing of the folder it is in, nor of what a
    folder of that name would hold: a grant beside it or below its folder is the
    person's work."""
    folder = home / name()
    (folder / "sub").mkdir(parents=True)
    (folder / "beside").mkdir()
    settings(home, form, f"~/{folder.relative_to(home)}/sourced")
    for grant in ("sub", "beside"):
        assert snapshot(home, f"~/{folder.name}/{grant}").written() == (
            str(folder / grant),)


@pytest.mark.parametrize("form", FILE_FORMS + FOLDER_FORMS)
def test_where_a_named_path_leads_is_judged_as_the_path(home: Path, form: str) -> None:
    """The named path reaches a dotfiles repository through a link two folders up
    (`~/.cfg/NAME/x -> ~/dotfiles/NAME/x` by `~/.cfg/NAME -> ../dotfiles/NAME`): a
    grant of where it leads is refused, one holding that is kept read-only."""
    repo = home / "dotfiles" / name()
    target = repo / name()
    make(target, form)
    (home / ".cfg").mkdir()
    (home / ".cfg" / repo.name).symlink_to(f"../dotfiles/{repo.name}")
    named = f"~/.cfg/{repo.name}/{target.name}"
    said = settings(home, form, named)
    error = refused(home, f"~/dotfiles/{repo.name}/{target.name}")
    assert (f"resolves to {target} (where {home}/.cfg/{repo.name}/{target.name} leads), "
            "named by your settings: ") in str(error)
    assert said in str(error)
    assert said in kept(repo, home)[str(target)]
    if form in FOLDER_FORMS:
        (target / "x").mkdir()
        error = refused(home, f"~/dotfiles/{repo.name}/{target.name}/x")
        assert f"inside {target} (where {home}/.cfg/" in str(error)


def test_every_named_path_is_resolved_through_links(home: Path) -> None:
    (home / "real").mkdir()
    (home / "a").symlink_to("b")
    (home / "b").symlink_to("real")
    (home / ".bashrc").write_text(". ~/a/x.sh\n")
    found = {n.path: n for n in named_by_settings(str(home))}
    assert found[f"{home}/a/x.sh"].real == f"{home}/real/x.sh"
    assert found[f"{home}/a/x.sh"].paths() == (f"{home}/a/x.sh", f"{home}/real/x.sh")
    assert found[f"{home}/.bashrc"].paths() == (f"{home}/.bashrc",)


def test_a_grant_the_settings_do_not_name_is_not_refused(home: Path) -> None:
    (home / ".gitconfig").write_text(
        "[core]\n\thooksPath = .githooks\n"  # relative: each repository's own
        "[remote \"o\"]\n\turl = ~/proj\n"  # work, not settings
        "[safe]\n\tdirectory = ~/proj\n")
    (home / ".bashrc").write_text(". ~/other/proj/x\n")
    assert snapshot(home, "~/proj").written() == (str(home / "proj"),)
    assert os.path.isdir(home / "proj")


# -- through links at any depth (red team 1) -------------------------------------------------


@pytest.mark.parametrize("form", FOLDER_FORMS)
def test_each_entry_of_a_folder_git_runs_is_followed_where_it_leads(home: Path,
                                                                    form: str) -> None:
    """Stow without folding: each hook a link of its own, from a folder home's walk
    never reaches (random names, four folders deep), into a dotfiles repository; one
    dangling (the sandbox could make it). Each is kept read-only in a grant of the
    repository, held when missing; a grant of one of them is refused."""
    repo = home / "dotfiles"
    (repo / "hooks").mkdir(parents=True)
    folder = home.joinpath(*(f".{name()}" for _ in range(4)))
    inner = folder / "hooks" if form == "templates" else folder
    inner.mkdir(parents=True)
    hooks = [name() for _ in range(3)]
    for hook in hooks[:2]:
        (repo / "hooks" / hook).write_text("#!/bin/sh\n")
    for hook in hooks:
        (inner / hook).symlink_to(os.path.relpath(repo / "hooks" / hook, inner))
    said = settings(home, form, str(folder))
    held = {p.path: p for p in analyze(str(repo), home=str(home)).protected}
    for hook in hooks:
        item = held[f"{repo}/hooks/{hook}"]
        assert said in item.reason and item.reason.startswith("an entry of ")
        assert item.exists is (hook != hooks[2])
        assert item.placeholder == (None if item.exists else f"{repo}/hooks/{hook}")
    error = refused(home, f"~/dotfiles/hooks/{hooks[0]}")
    assert f"(where {inner}/{hooks[0]} leads), named by your settings" in str(error)


def test_a_template_folder_s_hooks_linked_whole_are_held_whole(home: Path) -> None:
    repo = home / "dotfiles"
    (repo / "hooks").mkdir(parents=True)
    (home / ".tmpl").mkdir()
    (home / ".tmpl" / "hooks").symlink_to("../dotfiles/hooks")
    settings(home, "templates", "~/.tmpl")
    held = {p.path: p for p in analyze(str(repo), home=str(home)).protected}
    assert held[f"{repo}/hooks"].kind == "folder"
    (repo / "hooks" / "sub").mkdir()
    assert "inside" in str(refused(home, "~/dotfiles/hooks/sub"))


def test_gits_own_settings_file_linked_into_a_grant_is_held(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GIT_CONFIG_GLOBAL naming a file reached through a link three folders down."""
    repo = home / "dotfiles"
    repo.mkdir()
    (repo / "gitconfig").write_text("[user]\n\tname = p\n")
    deep = home / ".a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "gitconfig").symlink_to(os.path.relpath(repo / "gitconfig", deep))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(deep / "gitconfig"))
    assert "git's own settings" in kept(repo, home)[f"{repo}/gitconfig"]
    assert "named by your settings" in str(refused(home, "~/dotfiles/gitconfig"))


def test_the_settings_are_read_once_per_start_and_again_when_asked(home: Path) -> None:
    from supervisor.home_places import found_once, look_again

    (home / ".bashrc").write_text(". ~/first\n")
    with found_once():
        first = named_by_settings(str(home))
        (home / ".bashrc").write_text(". ~/second\n")
        assert named_by_settings(str(home)) is first
        look_again()  # a start that waited (on the person's answer) looks again
        assert f"{home}/second" in {n.path for n in named_by_settings(str(home))}
    assert f"{home}/second" in {n.path for n in named_by_settings(str(home))}


# -- the hooks folders of a repository around the grant -----------------------------------


def git(*args: str, cwd: Path) -> None:
    import subprocess

    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1",
                        "GIT_CONFIG_GLOBAL": "/dev/null"})


@pytest.mark.requires_git
@pytest.mark.parametrize("how", ["its own setting", "the person's relative setting",
                                 "its git directory's"])
def test_a_grant_of_a_repositorys_hooks_folder_is_refused(home: Path, how: str) -> None:
    """A hooks folder of a repository around the grant (random names), by the
    repository's own core.hooksPath, the person's relative one, or git's default in
    its git directory: the grant and any folder inside it are refused; the repository
    itself, and a folder of it beside the hooks, are not."""
    repo = home / name()
    repo.mkdir()
    git("init", "-q", cwd=repo)
    relative = f"{name()}/{name()}"
    if how == "its own setting":
        git("config", "core.hooksPath", relative, cwd=repo)
    elif how == "the person's relative setting":
        (home / ".gitconfig").write_text(f"[core]\n\thooksPath = {relative}\n")
    else:
        relative = ".git/hooks"
    hooks = repo / relative
    inner = hooks / name() / name()
    inner.mkdir(parents=True)
    (repo / "src").mkdir()
    error = refused(home, str(hooks))
    assert f"resolves to {hooks}, which is a hooks folder of the repository {repo} (" \
        in str(error)
    assert f"which lies inside {hooks}, a hooks folder" in str(refused(home, str(inner)))
    for fine in (repo, repo / "src"):
        assert snapshot(home, str(fine)).written() == (str(fine),)


@pytest.mark.parametrize("form", FILE_FORMS + FOLDER_FORMS)
def test_a_link_on_the_way_in_a_grant_refuses_it(home: Path, form: str) -> None:
    """A named path reaching its file through a link that lies in the grant (random
    names): refused when the spec is resolved, and the analysis (what a launch of a
    saved snapshot reads again) names the link, which the view refuses where written."""
    repo = home / name()
    target = repo / name()
    make(target, form)
    (repo / "step").symlink_to(target.name)
    deep = home / ".cfg" / name() / name()  # below home's link walk: only this rule
    deep.mkdir(parents=True)
    (deep / "x").symlink_to(os.path.relpath(repo / "step", deep))
    said = settings(home, form, f"~/{(deep / 'x').relative_to(home)}")
    error = refused(home, f"~/{repo.name}")
    assert f"which holds {repo}/step, a link on the way from {deep}/x to {target}" \
        in str(error)
    assert said in str(error)
    held = analyze(str(repo), home=str(home)).protected
    assert any(p.path == str(target) and p.link is None and said in p.reason for p in held)
    assert any(p.link == f"{repo}/step" and said in p.reason for p in held)
