"""The dot-file analysis: which paths at the top of a written folder are protected, why,
and what git's settings and the hook managers' stubs name, on real trees (no privileges,
nothing run but `git` itself to make repositories and to check the config parser); and
the Linux plan's read-only binds, mount points and placeholders compiled from it, exactly."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from supervisor.dotfiles import (
    BARE_REASON,
    ENVRC_REASON,
    GIT_REASON,
    DotFiles,
    Protected,
    analyze,
)
from supervisor.errors import LaunchError
from supervisor.git_config import parse_git_config
from supervisor.grants import Grant, Snapshot
from supervisor.linux.placeholders import Wanted
from supervisor.linux.plan import HostLayout, LaunchPlan, MountOp, build_plan, host_access
from supervisor.policy import LINUX_SYSTEM_FOLDERS, RunSettings
from supervisor.runs_as_you import AGENT_SETTINGS, VCS_METADATA
from supervisor.view import view_for
from support.views import linux_view

GIT = shutil.which("git")
needs_git = pytest.mark.requires_git
CLEAN_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
             "GIT_CONFIG_GLOBAL": "/dev/null", "LANG": "C"}

VSCODE = ("VS Code runs its tasks and the programs its settings name when it opens the "
          "folder")
IDEA = "JetBrains IDEs run its startup tasks and run configurations when they open the project"
HUSKY = "husky's stubs in .husky/_ run the hook scripts beside them"


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run([GIT or "git", *args], cwd=cwd, env=CLEAN_ENV, capture_output=True,
                          text=True, check=True)
    return done.stdout


def by_name(dots: DotFiles) -> dict[str, Protected]:
    return {p.name: p for p in dots.protected}


def project(tmp_path: Path) -> Path:
    top = tmp_path.resolve() / "proj"
    top.mkdir()
    return top


# --- git's config syntax ---------------------------------------------------------------------

CONFIGS = [
    "[core]\n\thooksPath = hooks\n",
    "[Core]\nHooksPath=  spaced   value  \n",
    '[core]\n\thookspath = "quoted  # not a comment" ; a comment\n',
    "[core]\nhooksPath = a\\\n  continued\n",
    '[core]\nhooksPath = "tab\\there" and\\\\back\\"slash\n',
    '[includeIf "gitdir:~/work/"]\n\tpath = work.inc\n[include]\npath = one\npath = two\n',
    '[includeIf "gitdir/i:C:\\\\X\\"Y"]\npath = odd\n',
    "[section.Sub]\nkey = deprecated form\n",
    "[core] hooksPath = same line\n",
    "\ufeff[core]\r\nhooksPath = crlf\r\n",
    "[core]\nbare\nempty =\n",
    "# comment\n; comment\n[core]\n  # indented comment\n  hooksPath = x # trailing\n",
    '[core]\nhooksPath = "" spaced\n',
    "[a]\nk = v\n[b \"c d\"]\nk = w\n[a]\nk = again\n",
]


@needs_git
@pytest.mark.parametrize("text", CONFIGS)
def test_the_config_parser_agrees_with_git(text: str, tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_bytes(text.encode())
    listed = git("config", "--file", str(config), "--no-includes", "--list", "-z",
                 cwd=tmp_path)
    expected: list[tuple[str, str | None]] = []
    for record in listed.split("\0")[:-1]:
        key, newline, value = record.partition("\n")
        expected.append((key, value if newline else None))
    assert parse_git_config(text) == expected


def test_the_config_parser_reads_on_past_a_line_git_refuses() -> None:
    # git refuses the whole file; finding more than git only ever protects more.
    assert parse_git_config("[core]\nthis is junk\nhooksPath = h\n") == [
        ("core.hookspath", "h")]
    assert parse_git_config("hooksPath = outside any section\n") == []
    assert parse_git_config("[core]\nbare ; git refuses a comment here\n") == [
        ("core.bare", None)]


# --- the top's own dot files -----------------------------------------------------------------


def test_a_plain_folder_protects_the_top_names_and_holds_the_missing_folders(
        tmp_path: Path) -> None:
    top = project(tmp_path)
    (top / "Makefile").write_text("all:\n")
    (top / "package.json").write_text("{}")
    (top / ".devcontainer").mkdir()
    dots = analyze(str(top), home="/home/u")
    assert dots.top == str(top)
    assert list(dots.protected) == [
        Protected(f"{top}/.git", f"{top}/.git", "folder", False, f".git: {GIT_REASON}",
                  placeholder=f"{top}/.git", stays=True),
        # No repository here: HEAD held by an empty folder, which git cannot read and
        # checks first, so git's discovery cannot take the top for a bare repository.
        Protected(f"{top}/HEAD", f"{top}/HEAD", "file", False, BARE_REASON,
                  placeholder=f"{top}/HEAD"),
        # A missing .envrc is never held: direnv runs only what you allowed.
        Protected(f"{top}/.envrc", f"{top}/.envrc", "file", False, ENVRC_REASON),
        Protected(f"{top}/.vscode", f"{top}/.vscode", "folder", False, VSCODE,
                  placeholder=f"{top}/.vscode", stays=True),
        Protected(f"{top}/.idea", f"{top}/.idea", "folder", False, IDEA,
                  placeholder=f"{top}/.idea", stays=True),
        Protected(f"{top}/.husky", f"{top}/.husky", "folder", False, HUSKY,
                  placeholder=f"{top}/.husky", stays=True),
        # Coding agents' and editors' project settings (runs_as_you.AGENT_SETTINGS), each
        # held as its table says (an empty folder, whatever the tool reads there); below
        # the top with the missing folders above made. Only a settings folder's stays
        # between runs: a folder where a tool reads a file may make it fail. A name
        # without a dot (OpenCode's) only where its tool is found: not for /home/u.
        *(Protected(f"{top}/{s.name}", f"{top}/{s.name}", s.kind, False,
                    f"{s.tool}: {s.runs}",
                    placeholder=f"{top}/{s.name}" if s.hold and not s.found_by else None,
                    parents=_above(top, s.name) if s.hold and not s.found_by else (),
                    stays=s.hold and s.kind == "folder" and s.lingers)
          for s in AGENT_SETTINGS if "*" not in s.name),
        # Every other version-control system's metadata (runs_as_you.VCS_METADATA): a
        # missing one held only for the tools run in any folder as git is.
        *(Protected(f"{top}/{v.name}", f"{top}/{v.name}", v.kind, False,
                    f"{v.name}: {v.tool}: {v.runs}",
                    placeholder=f"{top}/{v.name}" if v.hold else None)
          for v in VCS_METADATA),
    ]


def test_opencode_s_names_are_held_only_where_opencode_is_found(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Names without a dot would show in the person's listing: held where the tool shows
    it is used (its folder in home, or its program on PATH), read-only where they exist
    whatever."""
    top, home, bin_folder = project(tmp_path), tmp_path / "home", tmp_path / "bin"
    home.mkdir()
    bin_folder.mkdir()
    monkeypatch.setenv("PATH", str(bin_folder))

    def held() -> set[str]:
        return {os.path.basename(p.path) for p in analyze(str(top), home=str(home)).protected
                if p.placeholder and os.path.basename(p.path).startswith("opencode")}

    assert held() == set()
    (bin_folder / "opencode").write_text("#!/bin/sh\n")
    (bin_folder / "opencode").chmod(0o755)
    assert held() == {"opencode.json", "opencode.jsonc"}
    (bin_folder / "opencode").unlink()
    (home / ".local" / "share" / "opencode").mkdir(parents=True)
    assert held() == {"opencode.json", "opencode.jsonc"}
    (home / ".local" / "share" / "opencode").rmdir()
    (top / "opencode.json").write_text("{}")  # the person's: read-only, never held empty
    kept = {p.name: p for p in analyze(str(top), home=str(home)).protected}
    assert kept[f"{top}/opencode.json"].exists and kept[f"{top}/opencode.json"].placeholder \
        is None


def _above(top: Path, name: str) -> tuple[str, ...]:
    parts = name.split("/")[:-1]
    return tuple(f"{top}/{'/'.join(parts[:i])}" for i in range(1, len(parts) + 1))


def test_agent_settings_below_the_top_and_by_pattern(tmp_path: Path) -> None:
    """A workspace file is protected where it is, never held (no name to hold); the
    hooks folder of .github is held whether .github is there or not: where it is not,
    .github is made for the run, writable, so a project can still make
    .github/workflows (the Linux plan binds it onto itself, a mount point)."""
    top = project(tmp_path)
    hooks = by_name(analyze(str(top), home="/home/u"))[f"{top}/.github/hooks"]
    assert (hooks.placeholder, hooks.parents) == (f"{top}/.github/hooks", (f"{top}/.github",))
    (top / ".github").mkdir()
    (top / "team.code-workspace").write_text("{}")
    found = by_name(analyze(str(top), home="/home/u"))
    assert found[f"{top}/.github/hooks"].placeholder == f"{top}/.github/hooks"
    assert found[f"{top}/.github/hooks"].parents == ()
    workspace = found[f"{top}/team.code-workspace"]
    assert workspace.exists and workspace.placeholder is None


def test_env_files_a_tool_loads_on_its_own_are_protected(tmp_path: Path) -> None:
    """.env is held (aider and Gemini CLI load it when they start); mise's files and
    .tool-versions are read-only when there and never held (mise trusts by path: a new
    file is untrusted until you trust it, and an empty one would be a config to it)."""
    top = project(tmp_path)
    (top / "mise.toml").write_text('[tools]\npython = "3.11"\n')
    (top / ".config" / "mise").mkdir(parents=True)
    (top / ".config" / "mise" / "config.toml").write_text("")
    found = by_name(analyze(str(top), home="/home/u"))
    assert found[f"{top}/.env"].placeholder == f"{top}/.env"
    assert found[f"{top}/mise.toml"].exists
    assert found[f"{top}/.config/mise/config.toml"].exists
    missing = found[f"{top}/.mise.toml"]
    assert not missing.exists and missing.placeholder is None
    assert found[f"{top}/.tool-versions"].placeholder is None


def test_a_held_setting_below_a_missing_folder_is_planned_with_its_folder_writable(
        tmp_path: Path) -> None:
    """The plan makes .github (plain, writable, a mount point) before holding
    .github/hooks read-only in it; the placeholder list has the folder first."""
    top = project(tmp_path)
    grant = Grant(".", str(top), "write", "files.write[0]", "files.write[0]", 2)
    snapshot = snap(grant)._replace(cwd=str(top))
    layout = HostLayout({}, "/i", "/usr/bin/python3", "/usr")
    plan = build_plan(linux_view(snapshot, {str(top): analyze(str(top), home="/home/u")}),
                      layout, root_mode=False)
    github, hooks = f"{top}/.github", f"{top}/.github/hooks"
    binds = {(op.kind, op.dest) for op in plan.ops}
    assert ("bind", github) in binds and ("ro-bind", hooks) in binds
    assert ("ro-bind", github) not in binds
    held = [w.path for w in plan.holds]
    assert held.index(github) < held.index(hooks)


def test_places_in_home_inside_a_written_folder_stay_read_only(tmp_path: Path) -> None:
    """A write grant under home that holds a place that runs as the person (not a
    holder: those refuse the grant) keeps it read-only and holds it when missing."""
    home = tmp_path / "home"
    gradle = home / ".gradle"
    gradle.mkdir(parents=True)
    (gradle / "gradle.properties").write_text("org.gradle.jvmargs=-Xmx1g\n")
    found = by_name(analyze(str(gradle), home=str(home)))
    assert found[f"{gradle}/init.d"].placeholder == f"{gradle}/init.d"  # held: missing
    assert found[f"{gradle}/gradle.properties"].exists


def test_existing_dot_files_are_protected_as_they_are(tmp_path: Path) -> None:
    top = project(tmp_path)
    for name in (".vscode", ".idea", ".husky"):
        (top / name).mkdir()
    (top / ".envrc").write_text("export X=1\n")
    found = by_name(analyze(str(top), home="/home/u"))
    for name in (".vscode", ".idea", ".husky"):
        assert found[f"{top}/{name}"].exists
        assert found[f"{top}/{name}"].kind == "folder"
        assert found[f"{top}/{name}"].placeholder is None
    assert found[f"{top}/.envrc"] == Protected(f"{top}/.envrc", f"{top}/.envrc", "file",
                                               True, ENVRC_REASON)
    names = {os.path.basename(p.path) for p in found.values()}
    assert not names & {"Makefile", "package.json", ".devcontainer"}


def test_a_link_at_the_top_is_reported_with_its_target(tmp_path: Path) -> None:
    top = project(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (top / ".vscode").symlink_to(tmp_path / "elsewhere")
    found = by_name(analyze(str(top), home="/home/u"))[f"{top}/.vscode"]
    assert found.link == f"{top}/.vscode"
    assert found.path == str(tmp_path.resolve() / "elsewhere")
    assert found.placeholder is None


# --- git ---------------------------------------------------------------------------------------


@needs_git
def test_a_repository_protects_git_whole_and_what_its_settings_name(tmp_path: Path) -> None:
    top = project(tmp_path)
    git("init", "-q", cwd=top)
    (top / "scripts" / "hooks").mkdir(parents=True)
    (top / "shared.gitconfig").write_text("[include]\n\tpath = nested/deeper.cfg\n")
    git("config", "core.hooksPath", "scripts/hooks", cwd=top)
    git("config", "include.path", "../../proj/shared.gitconfig", cwd=top)
    git("config", "includeIf.gitdir:~/w/.path", "~/.gitconfig-work", cwd=top)
    found = by_name(analyze(str(top), home="/home/u"))
    assert found[f"{top}/.git"].exists and found[f"{top}/.git"].kind == "folder"
    assert found[f"{top}/scripts/hooks"] == Protected(
        f"{top}/scripts/hooks", f"{top}/scripts/hooks", "folder", True,
        "core.hooksPath = scripts/hooks in config: git runs the hooks there")
    # include.path is relative to the including file (.git/config here)...
    assert found[f"{top}/shared.gitconfig"].reason == (
        "include.path = ../../proj/shared.gitconfig in config: git reads settings from it")
    # ...and followed: what it includes is relative to it, and missing, so held.
    nested = found[f"{top}/nested/deeper.cfg"]
    assert (nested.exists, nested.kind, nested.placeholder) == (False, "file", f"{top}/nested")
    assert nested.reason == (f"include.path = nested/deeper.cfg in {top}/shared.gitconfig: "
                             "git reads settings from it")
    work = found["/home/u/.gitconfig-work"]
    assert work.reason == ("includeif.gitdir:~/w/.path = ~/.gitconfig-work in config: git "
                           "reads settings from it")


@needs_git
def test_a_hooks_path_of_dev_null_or_absent_names_nothing(tmp_path: Path) -> None:
    top = project(tmp_path)
    git("init", "-q", cwd=top)
    before = {p.name for p in analyze(str(top), home="/h").protected}
    git("config", "core.hooksPath", "/dev/null", cwd=top)
    assert {p.name for p in analyze(str(top), home="/h").protected} == before


@needs_git
def test_a_linked_worktree_protects_the_main_git_directory(tmp_path: Path) -> None:
    main = project(tmp_path)
    git("init", "-q", "-b", "main", cwd=main)
    (main / "f").write_text("x")
    git("add", "f", cwd=main)
    git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "one", cwd=main)
    wt = tmp_path.resolve() / "wt"
    git("worktree", "add", "-q", str(wt), "-b", "side", cwd=main)
    found = by_name(analyze(str(wt), home="/h"))
    assert found[f"{wt}/.git"].kind == "file"
    assert found[f"{wt}/.git"].reason == f".git (a gitdir: file): {GIT_REASON}"
    gitdir = found[f"{main}/.git/worktrees/wt"]
    assert gitdir.exists and gitdir.kind == "folder"
    assert gitdir.reason.startswith(f"the git directory .git names (gitdir: {main}/.git/")
    common = found[f"{main}/.git"]
    assert common.reason == (f"the commondir of {main}/.git/worktrees/wt (../..): git reads "
                             "its settings and hooks there")


def test_a_gitdir_file_naming_a_missing_folder_holds_it(tmp_path: Path) -> None:
    top = project(tmp_path)
    (top / ".git").write_text("gitdir: ../gone/repo\r\n")
    found = by_name(analyze(str(top), home="/h"))
    target = found[str(tmp_path.resolve() / "gone" / "repo")]
    assert (target.exists, target.placeholder) == (False, str(tmp_path.resolve() / "gone"))
    # Not a gitdir: file at all: only .git itself.
    (top / ".git").write_text("gitdir:no-space\n")
    assert [p.name for p in analyze(str(top), home="/h").protected
            if "gone" in p.name] == []


# --- the top as a bare repository: what git's discovery looks at ------------------------


def bare_held(top: Path, **options: object) -> dict[str, str | None]:
    """The top's protections against becoming a bare repository: name -> what Linux
    holds there ("folder", "file"), None where it is only kept from being made (macOS)
    or is there already."""
    found = analyze(str(top), home="/h", **options)  # type: ignore[arg-type]
    return {os.path.basename(p.name): p.held_as if p.placeholder else None
            for p in found.protected if p.reason == BARE_REASON}


def plant_bare(folder: Path, marker: Path) -> None:
    """What a sandbox would make to turn `folder` into a bare repository whose settings
    run a program on the person's next git command there: an alias here."""
    (folder / "objects").mkdir()
    (folder / "refs" / "heads").mkdir(parents=True)
    if not (folder / "HEAD").is_dir():
        (folder / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "config").write_text(f'[core]\n\tbare = true\n[alias]\n\tst = "!touch {marker}"\n')
    (folder / "sub").mkdir()


def runs_planted(folder: Path, marker: Path) -> bool:
    """Whether the person's git, from a folder inside, ran the planted settings."""
    subprocess.run([GIT or "git", "st"], cwd=folder / "sub", env=CLEAN_ENV,
                   capture_output=True, check=False)
    return marker.exists()


def socket_at(path: Path) -> None:
    """What Linux holds for refs: a socket inode, nobody listening, no execute bit."""
    import socket

    with socket.socket(socket.AF_UNIX) as made:
        made.bind(str(path))
    path.chmod(0o644)


@needs_git
def test_a_top_in_no_repository_holds_head_as_an_empty_folder(tmp_path: Path) -> None:
    """git takes a folder for a bare repository only with a HEAD it can read, checked
    first (before where a commondir points): an empty folder named HEAD keeps what a
    sandbox plants beside it from running, and once it goes after the run, what was
    planted is still no repository. The control, planted without it, runs."""
    marker = tmp_path / "ran"
    control = project(tmp_path)
    (control / ".git").mkdir()  # an empty .git (the placeholder): git goes on to the top
    plant_bare(control, marker)
    assert runs_planted(control, marker)
    marker.unlink()

    top = tmp_path.resolve() / "top"
    top.mkdir()
    (top / ".git").mkdir()
    assert bare_held(top) == {"HEAD": "folder"}
    (top / "HEAD").mkdir()
    plant_bare(top, marker)
    (top / "commondir").write_text("elsewhere\n")  # points nowhere it is read from
    assert not runs_planted(top, marker)
    (top / "HEAD").rmdir()  # the run ended: its placeholder went
    assert not runs_planted(top, marker)
    failed = subprocess.run([GIT or "git", "status"], cwd=top / "sub", env=CLEAN_ENV,
                            capture_output=True, text=True, check=False)
    assert "not a git repository" in failed.stderr


@needs_git
def test_a_top_below_a_repository_holds_commondir_and_refs_nobody_sees(
        tmp_path: Path) -> None:
    """Below the person's repository a folder named HEAD would make their `git diff
    HEAD` there ambiguous: commondir (an empty folder: git dies reading it once a HEAD
    here is valid, so it never points elsewhere) and refs (a socket: no folder git may
    search) are held instead. Neither is in the repository's status, git there works as
    before, a planted bare repository runs nothing, during the run or after it."""
    parent = tmp_path.resolve() / "parent"
    parent.mkdir()
    git("init", "-q", cwd=parent)
    (parent / "README").write_text("x\n")
    git("add", "README", cwd=parent)
    git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "x", cwd=parent)
    top = parent / "top"
    top.mkdir()
    (top / ".git").mkdir()
    assert bare_held(top) == {"commondir": "folder", "refs": "socket"}
    (top / "commondir").mkdir()
    socket_at(top / "refs")
    assert git("status", "--porcelain", "--untracked-files=all", cwd=parent) == ""
    assert git("rev-parse", "--absolute-git-dir", cwd=top).strip() == f"{parent}/.git"
    git("diff", "HEAD", "--stat", cwd=top)  # not ambiguous: no file named HEAD here
    marker = tmp_path / "ran"
    plant = tmp_path / "plant"
    plant.mkdir()
    (top / "x").mkdir()
    plant_bare(top / "x", marker)  # a whole repository for a commondir to point at...
    (top / "HEAD").write_text("ref: refs/heads/main\n")
    (top / "objects").mkdir()
    (top / "config").write_text(f'[alias]\n\tst = "!touch {marker}"\n')
    (top / "sub").mkdir()
    assert not runs_planted(top, marker)
    failed = subprocess.run([GIT or "git", "status"], cwd=top / "sub", env=CLEAN_ENV,
                            capture_output=True, text=True, check=False)
    assert failed.returncode == 128 and "failed to read" in failed.stderr
    (top / "commondir").rmdir()  # the run ended: its placeholders went
    (top / "refs").unlink()
    assert not runs_planted(top, marker)
    assert git("rev-parse", "--absolute-git-dir", cwd=top / "sub").strip() == \
        f"{parent}/.git"


@needs_git
def test_a_repository_at_the_top_needs_no_placeholder_against_a_bare_one(
        tmp_path: Path) -> None:
    """A .git folder that is a git directory, held whole, is where git stops: it never
    looks at the top itself. Proven with git: a bare repository planted beside it runs
    nothing, git finds the repository."""
    top = project(tmp_path)
    git("init", "-q", cwd=top)
    assert bare_held(top) == {}
    marker = tmp_path / "ran"
    plant_bare(top, marker)
    assert not runs_planted(top, marker)
    assert git("rev-parse", "--absolute-git-dir", cwd=top / "sub").strip() == f"{top}/.git"


@needs_git
@pytest.mark.parametrize("case", ["commit", "written HEAD", "written .git", "empty .git",
                                  "broken HEAD"])
def test_a_git_directory_the_sandbox_could_change_keeps_the_top_held(
        case: str, tmp_path: Path) -> None:
    """Where the sandbox writes the top's .git (files.commit writes HEAD, objects and
    refs; a write grant at or in it), or .git is no git directory now, a HEAD written
    wrong lets git go on to the top: it is held, by what a repository below or at it
    needs (not HEAD, which `git diff HEAD` there would find ambiguous)."""
    top = project(tmp_path)
    git("init", "-q", cwd=top)
    options: dict[str, object] = {}
    if case == "commit":
        options["commit"] = True
    elif case == "written HEAD":
        options["written"] = (str(top), f"{top}/.git/HEAD")
    elif case == "written .git":
        options["written"] = (f"{top}/.git",)
    elif case == "empty .git":
        shutil.rmtree(top / ".git")
        (top / ".git").mkdir()
        assert bare_held(top) == {"HEAD": "folder"}  # no repository here any more
        return
    else:
        (top / ".git" / "HEAD").write_text("garbage\n")
        assert bare_held(top) == {"HEAD": "folder"}
        return
    assert bare_held(top, **options) == {"commondir": "folder", "refs": "socket"}


@needs_git
def test_a_gitdir_file_at_the_top_is_where_git_stops_valid_or_not(tmp_path: Path) -> None:
    """A .git file, held read-only, is read as a gitfile: git takes the repository it
    names or stops with an error, never the top (setup.c: only a .git it cannot stat
    lets it go on). Proven with a bare repository planted beside an invalid one."""
    top = project(tmp_path)
    (top / ".git").write_text("not a gitfile\n")
    assert bare_held(top) == {}
    marker = tmp_path / "ran"
    plant_bare(top, marker)
    assert not runs_planted(top, marker)
    # A write grant of the file itself: it is the sandbox's to change.
    other = tmp_path.resolve() / "other"
    other.mkdir()
    (other / ".git").write_text("gitdir: elsewhere\n")
    assert bare_held(other, written=(f"{other}/.git",)) == {"commondir": "folder",
                                                            "refs": "socket"}


def test_what_the_person_has_at_the_top_stays_as_it_is(tmp_path: Path) -> None:
    """A HEAD, commondir, refs or objects of the person's at a top that is no
    repository stays as it is (read-only where it is held); what git still needs is
    held around it."""
    top = project(tmp_path)
    (top / "HEAD").write_text("not a ref\n")
    assert bare_held(top) == {"commondir": "folder", "refs": "socket"}
    (top / "refs").mkdir()
    assert bare_held(top) == {"commondir": "folder", "objects": "socket"}
    (top / "objects").mkdir()  # a bare repository's names: protected as one
    assert bare_held(top) == {"HEAD": None}
    (top / "HEAD").unlink()
    (top / "commondir").write_text(".\n")
    assert bare_held(top) == {"HEAD": "folder"}


@needs_git
def test_pre_commit_and_lefthook_stubs_name_their_settings(tmp_path: Path) -> None:
    top = project(tmp_path)
    git("init", "-q", cwd=top)
    hooks = top / ".git" / "hooks"
    (hooks / "pre-commit").write_text(
        "#!/usr/bin/env bash\n# File generated by pre-commit: https://pre-commit.com\n"
        "INSTALL_PYTHON=/usr/bin/python3\n"
        "ARGS=(hook-impl --config=ci/pre-commit.yaml --hook-type=pre-commit)\n")
    (hooks / "pre-push").write_text(
        "#!/bin/sh\nset -a\n[ -f .lefthookrc ] && . .lefthookrc\n"
        "call_lefthook()\n{\n  :\n}\ncall_lefthook \"run pre-push $@\"\n")
    (top / ".lefthook.yaml").write_text("pre-push: {}\n")
    found = by_name(analyze(str(top), home="/h"))
    stub = f"{top}/.git/hooks/pre-push"
    lefthook = f"lefthook's settings: its stub {stub} runs the hooks they list"
    assert found[f"{top}/ci/pre-commit.yaml"].reason == (
        f"pre-commit's settings: its stub {top}/.git/hooks/pre-commit runs the hooks they list")
    assert found[f"{top}/ci/pre-commit.yaml"].placeholder == f"{top}/ci"
    assert found[f"{top}/.lefthookrc"].reason == (
        f"the rc file lefthook's stub {stub} sources")
    # .lefthook.yaml is the 5th name lefthook tries: each before it is held, so none
    # made now could take its place; the local config, absent, is held by its first name.
    held = [p.name.removeprefix(f"{top}/") for p in found.values() if p.reason == lefthook]
    assert held == ["lefthook.yml", ".lefthook.yml", ".config/lefthook.yml",
                    "lefthook.yaml", ".lefthook.yaml", "lefthook-local.yml"]
    assert found[f"{top}/.config/lefthook.yml"].placeholder == f"{top}/.config"
    assert found[f"{top}/.lefthook.yaml"].exists
    for name in (".lefthook", ".lefthook-local"):
        assert found[f"{top}/{name}"].placeholder == f"{top}/{name}"


@needs_git
def test_no_stub_means_no_hook_manager_settings(tmp_path: Path) -> None:
    top = project(tmp_path)
    git("init", "-q", cwd=top)
    (top / ".pre-commit-config.yaml").write_text("repos: []\n")
    (top / "lefthook.yml").write_text("{}\n")
    names = {p.name for p in analyze(str(top), home="/h").protected}
    assert f"{top}/.pre-commit-config.yaml" not in names
    assert f"{top}/lefthook.yml" not in names


@needs_git
def test_a_hooks_path_through_a_link_inside_the_folder_is_reported(tmp_path: Path) -> None:
    top = project(tmp_path)
    git("init", "-q", cwd=top)
    (top / "real-hooks").mkdir()
    (top / "scripts").symlink_to("real-hooks")
    git("config", "core.hooksPath", "scripts", cwd=top)
    found = by_name(analyze(str(top), home="/h"))[f"{top}/scripts"]
    assert found.link == f"{top}/scripts"
    assert found.path == f"{top}/real-hooks"


@needs_git
def test_includes_that_loop_or_nest_too_deep_end(tmp_path: Path) -> None:
    top = project(tmp_path)
    git("init", "-q", cwd=top)
    (top / "a.cfg").write_text("[include]\npath = b.cfg\n")
    (top / "b.cfg").write_text("[include]\npath = a.cfg\n")
    git("config", "include.path", "../a.cfg", cwd=top)
    names = [p.name for p in analyze(str(top), home="/h").protected]
    assert names.count(f"{top}/a.cfg") == 1 and names.count(f"{top}/b.cfg") == 1


# --- the Linux plan's dot-file ops (pure: the analysis given by hand) ------------------------

CWD = "/home/u/proj"
OWNER = "dot file of . (files.write[0])"
MISSING = "; missing, so an empty folder is held there for the run"


def write(name: str, target: str, key: str = "files.write[0]", **extra: bool) -> Grant:
    return Grant(name, target, "write", key, key, 3, **extra)


def snap(*grants: Grant) -> Snapshot:
    return Snapshot(
        version=1,
        source="spec.toml",
        home="/home/u",
        cwd=CWD,
        lnk_home="/home/u/.lnk",
        uid=1000,
        grants=grants,
        programs=None,
        settings=RunSettings("none", (), (), None, None))


LAYOUT = HostLayout(system={"/usr": None}, inner_source="/i",
                    interpreter="/usr/bin/python3", interpreter_prefix="/usr")


def plan_with(snapshot: Snapshot, *found: Protected) -> LaunchPlan:
    """The plan of `snapshot` with `found` at the top of CWD (the view's dot files)."""
    return build_plan(linux_view(snapshot, {CWD: DotFiles(CWD, found)}), LAYOUT,
                      root_mode=False)


def middle(plan_ops: tuple[MountOp, ...]) -> list[MountOp]:
    """The layered part: after /tmp, before the inner confiner."""
    ops = list(plan_ops)
    inner = next(i for i, op in enumerate(ops) if op.reason == "the inner confiner")
    return ops[ops.index(MountOp("tmpfs", "/tmp", reason="a fresh /tmp", size=1 << 30)) + 1:inner]


DOT_GIT = Protected(f"{CWD}/.git", f"{CWD}/.git", "folder", True, ".git: runs")
VSCODE_MISSING = Protected(f"{CWD}/.vscode", f"{CWD}/.vscode", "folder", False, "vs",
                           placeholder=f"{CWD}/.vscode")
ENVRC_MISSING = Protected(f"{CWD}/.envrc", f"{CWD}/.envrc", "file", False, "direnv")
HOOKS = Protected(f"{CWD}/tools/git/hooks", f"{CWD}/tools/git/hooks", "folder", True,
                  "core.hooksPath")
INCLUDE_MISSING = Protected(f"{CWD}/conf/x/extra.cfg", f"{CWD}/conf/x/extra.cfg", "file",
                            False, "include.path", placeholder=f"{CWD}/conf/x")


def test_the_plan_binds_dot_files_after_their_folder_and_holds_the_missing() -> None:
    plan = plan_with(snap(write(".", CWD)),
                     DOT_GIT, VSCODE_MISSING, ENVRC_MISSING, HOOKS, INCLUDE_MISSING)
    assert middle(plan.ops) == [
        MountOp("bind", CWD, CWD, "files.write[0]: ."),
        MountOp("ro-bind", f"{CWD}/.git", f"{CWD}/.git", f"{OWNER}: .git: runs"),
        MountOp("ro-bind", f"{CWD}/.vscode", f"{CWD}/.vscode", f"{OWNER}: vs{MISSING}"),
        # Each folder between the top and a deeper protection is a mount point: not
        # renamed, still writable; outer to inner.
        MountOp("bind", f"{CWD}/conf", f"{CWD}/conf",
                f"{OWNER}: a mount point, so it cannot be renamed, since it holds "
                f"{CWD}/conf/x"),
        MountOp("bind", f"{CWD}/tools", f"{CWD}/tools",
                f"{OWNER}: a mount point, so it cannot be renamed, since it holds "
                f"{CWD}/tools/git/hooks"),
        MountOp("ro-bind", f"{CWD}/conf/x", f"{CWD}/conf/x", f"{OWNER}: include.path{MISSING}"),
        MountOp("bind", f"{CWD}/tools/git", f"{CWD}/tools/git",
                f"{OWNER}: a mount point, so it cannot be renamed, since it holds "
                f"{CWD}/tools/git/hooks"),
        MountOp("ro-bind", f"{CWD}/tools/git/hooks", f"{CWD}/tools/git/hooks",
                f"{OWNER}: core.hooksPath"),
    ]
    # Every bound dot file is offered to the placeholder state: made when missing,
    # joined when another run's placeholder; a missing .envrc is never held.
    assert plan.holds == (Wanted(f"{CWD}/.git", "folder"), Wanted(f"{CWD}/.vscode", "folder"),
                          Wanted(f"{CWD}/conf/x", "folder"),
                          Wanted(f"{CWD}/tools/git/hooks", "folder"))


def test_write_dot_files_turns_the_protections_off_for_that_folder() -> None:
    plan = plan_with(snap(write(".", CWD, dot_files_writable=True)), DOT_GIT, HOOKS)
    assert middle(plan.ops) == [MountOp("bind", CWD, CWD, "files.write[0]: .")]
    assert plan.holds == ()


def test_only_what_lies_where_the_sandbox_writes_is_bound() -> None:
    elsewhere = Protected("/srv/main/.git", "/srv/main/.git", "folder", True, "commondir")
    inside_git = Protected(f"{CWD}/.git/worktrees/w", f"{CWD}/.git/worktrees/w", "folder",
                           True, "gitdir")
    hidden = Protected(f"{CWD}/secret/.x", f"{CWD}/secret/.x", "folder", True, "x")
    named = Protected(f"{CWD}/out", f"{CWD}/out", "folder", True, "hooks named out")
    grants = (write(".", CWD), write("./out", f"{CWD}/out", "files.write[1]"),
              Grant("./secret", f"{CWD}/secret", "hide", "files.hide[0]", "files.hide[0]", 4))
    plan = plan_with(snap(*grants), DOT_GIT, inside_git, elsewhere, hidden, named)
    assert middle(plan.ops) == [
        MountOp("bind", CWD, CWD, "files.write[0]: ."),
        # The spec names ./out itself: its own grant decides (and its own dot files).
        MountOp("bind", f"{CWD}/out", f"{CWD}/out", "files.write[1]: ./out"),
        MountOp("tmpfs", f"{CWD}/secret", reason="files.hide[0]: ./secret"),
        # Inside .git, already bound read-only; elsewhere, not where the sandbox writes.
        MountOp("ro-bind", f"{CWD}/.git", f"{CWD}/.git", f"{OWNER}: .git: runs"),
    ]
    assert plan.holds == (Wanted(f"{CWD}/.git", "folder"),)


def test_a_link_where_the_sandbox_writes_refuses_the_plan() -> None:
    linked = Protected("/data/vscode", f"{CWD}/.vscode", "folder", True, "vs",
                       link=f"{CWD}/.vscode")
    with pytest.raises(LaunchError) as caught:
        plan_with(snap(write(".", CWD)), DOT_GIT, linked)
    assert caught.value.message == (
        f"{CWD}/.vscode is a link in the path of {CWD}/.vscode (vs), in {CWD}, which the "
        "sandbox writes: it could point the link elsewhere, so the launch is refused")
    assert caught.value.hint == ("replace the link with what it points to, or list '.' in "
                                 "files.write_dot_files if the sandbox may change its dot "
                                 "files")
    # A link outside every write grant (a system folder's) is no one's to repoint.
    system = Protected("/usr/share/x", "/lib/x", "file", True, "inc", link="/lib")
    assert plan_with(snap(write(".", CWD)), system).holds == ()


def test_the_analysis_reaches_the_plan_through_the_view(tmp_path: Path) -> None:
    """The view reads what is at each protected top (the dot files are the view's, no
    longer the host layout's); describe's view reads the opened tops too."""
    top = project(tmp_path)
    (top / ".idea").mkdir()
    snapshot = snap(write(".", str(top)), write("./w", str(top / "w"), "files.write[1]",
                                                dot_files_writable=True))
    (top / "w").mkdir()
    probed = view_for(snapshot, LINUX_SYSTEM_FOLDERS)
    assert list(probed.dot_files) == [str(top)]
    assert probed.dot_files[str(top)] == analyze(str(top), home="/home/u")
    assert [item for _, item in probed.protections] == list(
        analyze(str(top), home="/home/u").protected)
    opened = view_for(snapshot, LINUX_SYSTEM_FOLDERS, opened_too=True)
    assert list(opened.dot_files) == [str(top), str(top / "w")]
    assert opened.protections == probed.protections


def test_lnk_home_made_after_the_snapshot_is_hidden_all_the_same(tmp_path: Path) -> None:
    """A first start resolves before $LNK_HOME exists, then makes it (check cache,
    placeholder lock): the plan hides what the layout finds there at launch."""
    read_home = Grant("~", "/home/u", "read", "files.read[0]", "files.read[0]", 2)
    settings = Grant("$LNK_HOME", None, "hide", "lnk-sandbox's settings ($LNK_HOME)", None,
                     None)
    found = HostLayout(system={"/usr": None}, inner_source="/i",
                       interpreter="/usr/bin/python3", interpreter_prefix="/usr",
                       lnk_home="/home/u/.lnk")
    ops = build_plan(linux_view(snap(read_home, settings)), found, root_mode=False).ops
    hide = MountOp("tmpfs", "/home/u/.lnk", reason="lnk-sandbox's settings ($LNK_HOME): "
                   "$LNK_HOME")
    read_only = MountOp("remount-ro", "/home/u/.lnk", reason="hidden folder")
    assert ops.index(MountOp("ro-bind", "/home/u", "/home/u", "files.read[0]: ~")) \
        < ops.index(hide) < ops.index(read_only)
    # The probe reports it only when the snapshot had no target for it and it exists now.
    lnk = tmp_path.resolve() / ".lnk"
    fresh = snap(settings)._replace(lnk_home=str(lnk))
    assert HostLayout.probe("/i", "/usr/bin/python3", "/usr", fresh).lnk_home is None
    lnk.mkdir()
    assert HostLayout.probe("/i", "/usr/bin/python3", "/usr", fresh).lnk_home == str(lnk)


def test_a_write_grant_inside_a_protected_folder_keeps_its_own_dot_files() -> None:
    """A folder granted for writing inside another's read-only .git is open again, and
    its own dot files are read-only there, as every written folder's are (found by
    tests/unit/test_view.py: the plan took any path inside a bound dot file as closed)."""
    inner = write("./.git/x", f"{CWD}/.git/x", "files.write[1]")
    own = Protected(f"{CWD}/.git/x/.git", f"{CWD}/.git/x/.git", "folder", True, ".git: runs")
    plan = build_plan(linux_view(snap(write(".", CWD), inner),
                                 {CWD: DotFiles(CWD, (DOT_GIT,)),
                                  f"{CWD}/.git/x": DotFiles(f"{CWD}/.git/x", (own,))}),
                      LAYOUT, root_mode=False)
    assert host_access(plan, f"{CWD}/.git/config") == "read"
    assert host_access(plan, f"{CWD}/.git/x/y") == "write"
    assert host_access(plan, f"{CWD}/.git/x/.git/config") == "read"
