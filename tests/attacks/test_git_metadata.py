"""Git metadata that would run code on the host: each attack run for real from inside.

Every test plants a payload from inside a real sandbox (the project is writable, so the
payload itself is written), then tries to make git run it on the host afterwards: a
hook, `core.fsmonitor`, `core.hooksPath`, `diff.external`, a filter driver, `core.pager`,
`core.sshCommand`, an included settings file, a `gitdir:`/`commondir` redirection, a dot
file made before it exists, a link, a rename of a folder above. Each action's exact
errno is asserted after the attacker proved it started inside (STARTED), as root (root
mode) and as the unprivileged test user. The kernel's answers: EROFS inside a read-only
bind, EBUSY to rename, remove or rename over a mount point, EXDEV to rename from the
writable project into a read-only bind (another mount), EEXIST to make what a
placeholder holds, EISDIR to write a file where a folder is held, ENOTDIR to rename a
folder over the `.git` file, ENOENT for what the spec does not show.

Three attacks here succeeded before lnk-sandbox was fixed (supervisor/dotfiles.py): a
submodule's `.git` pointed at a git directory of the sandbox's making (its fsmonitor ran
on the person's next `git status` at the top); a relative `core.hooksPath` in the
person's global settings (`.githooks`, filled from inside); a program the repository's
settings name in the project (a textconv, rewritten, ran on `git diff`).

Then, outside the sandbox, the real `git` runs in the project as the person would (as
the same user, commit, checkout, status, diff, add, log on a terminal, ls-remote) and
the payload's marker file is absent: what the attack aimed at never ran. The control,
`test_with_write_dot_files_the_same_attacks_run_on_the_host`, runs the same attacks with
`write_dot_files = ["."]` (the person's choice): there they succeed and every marker
appears, so the other tests pass because the sandbox refused, not because the payloads
or the host-side triggers were broken.

Hook managers (pre-commit, lefthook) are not installed here: their stubs are stand-ins
that carry the real stubs' markers (what lnk-sandbox detects) and run the commands their
settings name, as the real tools do.
"""

from __future__ import annotations

import errno
import os
import re

import pytest

from support.actions import Action, run_actions
from support.git_host import (
    Expected,
    attack,
    commit_on_host,
    host_git,
    make_repository,
    markers,
    payload,
    ran,
)
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

OK = 0
EROFS, EBUSY, EEXIST, ENOENT = errno.EROFS, errno.EBUSY, errno.EEXIST, errno.ENOENT
EISDIR = errno.EISDIR
EISDIR, EXDEV, ENOTDIR = errno.EISDIR, errno.EXDEV, errno.ENOTDIR


# --- hooks -----------------------------------------------------------------------------------


def test_hooks_written_from_inside_never_run(sandbox: Sandbox) -> None:
    make_repository(sandbox)
    hooks = ".git/hooks"
    before = sorted(os.listdir(sandbox.project / hooks))
    evil = payload(sandbox, "hook")
    attack(sandbox, {
        ("make", "evil.sh", evil): OK,  # the project is writable: the payload is there
        ("write", f"{hooks}/pre-commit", evil): EROFS,
        ("write", f"{hooks}/post-checkout", evil): EROFS,
        ("append", f"{hooks}/post-commit", "\nsh ./evil.sh\n"): EROFS,
        ("replace", f"{hooks}/post-commit", evil): EROFS,
        ("symlink", "../../evil.sh", f"{hooks}/pre-push"): EROFS,
        ("rename", "evil.sh", f"{hooks}/post-merge"): EXDEV,  # from another mount
        ("unlink", f"{hooks}/post-commit"): EROFS,
        ("rename", hooks, ".git/hooks-old"): EROFS,
        ("mkdir", ".git/hooks2"): EROFS,
        ("git", "commit", "-qam", "from inside"): (
            "exit 128: fatal: Unable to create '"
            f"{sandbox.project}/.git/index.lock': Read-only file system"),
    })
    assert sorted(os.listdir(sandbox.project / hooks)) == before
    commit_on_host(sandbox)
    host_git(sandbox, "checkout", "-q", "-b", "side")
    host_git(sandbox, "checkout", "-q", "main")
    assert ran(sandbox) == ["person-post-commit"]  # the person's hook ran; none planted


# --- git's settings: through git itself and by writing the file ------------------------------


def _config_attack(box: Sandbox, which: str) -> tuple[dict[str, str], dict[str, str]]:
    """What `which` plants: {key: value} for .git/config, and {path: text} payloads."""
    evil = str(box.project / "evil")
    if which == "core.fsmonitor":
        return {"core.fsmonitor": f"{evil}/fsmonitor"}, {
            "evil/fsmonitor": payload(box, "fsmonitor")}
    if which == "core.hooksPath":
        return {"core.hooksPath": evil}, {
            "evil/pre-commit": payload(box, "hookspath-pre-commit"),
            "evil/post-checkout": payload(box, "hookspath-post-checkout")}
    if which == "diff.external":
        return {"diff.external": f"{evil}/diff"}, {"evil/diff": payload(box, "diff")}
    if which == "filter":
        return {"filter.x.clean": f"{evil}/clean", "filter.x.smudge": f"{evil}/smudge"}, {
            "evil/clean": payload(box, "filter-clean", filter_=True),
            "evil/smudge": payload(box, "filter-smudge", filter_=True)}
    if which == "core.pager":
        return {"core.pager": f"{evil}/pager"}, {
            "evil/pager": payload(box, "pager", filter_=True)}
    assert which == "core.sshCommand"
    return {"core.sshCommand": f"{evil}/ssh"}, {"evil/ssh": payload(box, "ssh")}


def _trigger(box: Sandbox, which: str) -> None:
    """What the person runs on the host that would run the planted command."""
    if which == "core.fsmonitor":
        host_git(box, "status", "--short")
    elif which == "core.hooksPath":
        commit_on_host(box)
        host_git(box, "checkout", "-q", "-b", "side")
    elif which == "diff.external":
        (box.project / "README").write_text("changed\n")
        host_git(box, "diff")
        host_git(box, "checkout", "-q", "--", "README")
    elif which == "filter":
        (box.project / "README").write_text("changed\n")
        host_git(box, "add", "README")  # clean
        (box.project / "README").unlink()
        host_git(box, "checkout", "-q", "HEAD", "--", "README")  # smudge
    elif which == "core.pager":
        host_git(box, "log", "--oneline", tty=True)
    else:
        host_git(box, "ls-remote", "ssh://git@example.invalid/repo.git", check=False)


CONFIG_ATTACKS = ["core.fsmonitor", "core.hooksPath", "diff.external", "filter",
                  "core.pager", "core.sshCommand"]
MARKERS = {"core.fsmonitor": ["fsmonitor"],
           "core.hooksPath": ["hookspath-post-checkout", "hookspath-pre-commit"],
           "diff.external": ["diff"], "filter": ["filter-clean", "filter-smudge"],
           "core.pager": ["pager"], "core.sshCommand": ["ssh"]}


def config_text(settings: dict[str, str]) -> str:
    """The settings as lines of a git config file."""
    lines = []
    for setting, value in settings.items():
        section, _, variable = setting.rpartition(".")
        head, _, sub = section.partition(".")
        lines.append(f'[{head} "{sub}"]' if sub else f"[{head}]")
        lines.append(f"\t{variable} = {value}")
    return "\n".join(lines) + "\n"


def _lock_refused(box: Sandbox, path: str) -> str:
    return f"exit 255: error: could not lock config file {path}: Read-only file system"


@pytest.mark.parametrize("which", CONFIG_ATTACKS)
def test_settings_that_run_programs_cannot_be_set(sandbox: Sandbox, which: str) -> None:
    make_repository(sandbox)
    config = sandbox.project / ".git" / "config"
    before = config.read_bytes()
    settings, payloads = _config_attack(sandbox, which)
    text = config_text(settings)
    actions: dict[Action, int | str] = {("mkdir", "evil"): OK}
    actions.update({("make", path, body): OK for path, body in payloads.items()})
    if which == "filter":  # which files the driver filters: a project file, writable
        actions[("write", ".gitattributes", "* filter=x\n")] = OK
    for k, v in settings.items():  # writing .git/config through git itself
        actions[("git", "config", k, v)] = _lock_refused(sandbox, ".git/config")
        actions[("git", "config", "--worktree", k, v)] = _lock_refused(
            sandbox, ".git/config")
    # ...and by writing the file directly, or any file git reads its settings from.
    actions[("append", ".git/config", text)] = EROFS
    actions[("replace", ".git/config", before.decode() + text)] = EROFS
    actions[("write", ".git/config.worktree", text)] = EROFS
    actions[("write", ".git/info/attributes", "* filter=x\n")] = EROFS
    attack(sandbox, actions)
    assert config.read_bytes() == before
    assert not (sandbox.project / ".git" / "config.worktree").exists()
    _trigger(sandbox, which)
    assert ran(sandbox) == (["person-post-commit"] if which == "core.hooksPath" else [])


def test_the_global_settings_are_out_of_reach(sandbox: Sandbox) -> None:
    """`git config --global` inside: the home folder is not granted, so its settings
    file cannot even be made (the folder is not there inside)."""
    make_repository(sandbox)
    gitconfig = sandbox.home / ".gitconfig"
    attack(sandbox, {
        ("git", "config", "--global", "core.fsmonitor", "/bin/true"): (
            f"exit 255: error: could not lock config file {gitconfig}: "
            "No such file or directory"),
        ("write", str(gitconfig), "[core]\n\tfsmonitor = /bin/true\n"): ENOENT,
    })
    assert not gitconfig.exists()


# --- included settings files and the hooks folder git's settings name --------------------------


@pytest.mark.parametrize("included", ["shared.gitconfig", "config/git/extra.cfg"])
def test_an_included_settings_file_cannot_be_rewritten(sandbox: Sandbox, included: str
                                                        ) -> None:
    make_repository(sandbox)
    project = sandbox.project
    (project / included).parent.mkdir(parents=True, exist_ok=True)
    (project / included).write_text("[user]\n\tname = Person\n")
    # A second include the person named, missing (git ignores it): held for the run.
    missing = included.replace("extra", "local").replace("shared", "local")
    for path in (included, missing):
        host_git(sandbox, "config", "--add", "include.path", f"../{path}")
    sandbox.chown()
    evil = payload(sandbox, "included-fsmonitor")
    planted = f"[core]\n\tfsmonitor = {project}/evil.sh\n"
    actions: dict[Action, int | str] = {
        ("make", "evil.sh", evil): OK,
        ("append", included, planted): EROFS,
        ("write", included, planted): EROFS,
        ("replace", included, planted): EBUSY,  # a mount point: nothing renames over it
        ("unlink", included): EBUSY,
        ("write", missing, planted): EISDIR,  # held by an empty folder: in no status
        ("unlink", missing): EISDIR,
    }
    if "/" in included:  # below the top: the folders above it cannot be renamed
        actions[("rename", "config", "config-old")] = EBUSY
        actions[("rename", "config/git", "config/git-old")] = EBUSY
        actions[("write", "config/notes.txt", "still writable\n")] = OK
    attack(sandbox, actions)
    assert (project / included).read_text() == "[user]\n\tname = Person\n"
    assert not (project / missing).exists()  # the placeholder went with the run
    host_git(sandbox, "status", "--short")
    commit_on_host(sandbox)
    assert ran(sandbox) == ["person-post-commit"]


@pytest.mark.parametrize("hooks", ["githooks", "tools/git/hooks"])
@pytest.mark.parametrize("present", [True, False], ids=["present", "missing"])
def test_the_hooks_folder_git_names_cannot_be_filled(sandbox: Sandbox, hooks: str,
                                                     present: bool) -> None:
    make_repository(sandbox)
    project = sandbox.project
    (project / "tools").mkdir()  # for the folder below the top, there whether or not
    if present:
        (project / hooks).mkdir(parents=True, exist_ok=True)
    host_git(sandbox, "config", "core.hooksPath", hooks)
    sandbox.chown()
    before = sandbox.tree()
    evil = payload(sandbox, "hookspath")
    first = hooks.partition("/")[0]
    actions: dict[Action, int | str] = {("make", "evil.sh", evil): OK}
    if present:
        actions[("write", f"{hooks}/pre-commit", evil)] = EROFS
        actions[("rename", hooks, f"{hooks}-old")] = EBUSY
    else:
        held = "githooks" if hooks == "githooks" else "tools/git"  # its first missing part
        actions[("mkdir", held)] = EEXIST
        actions[("makedirs", hooks)] = EROFS if held != hooks else EEXIST
        actions[("write", f"{held}/pre-commit", evil)] = EROFS
        actions[("rename", held, f"{held}-old")] = EBUSY
        actions[("symlink", "/tmp", held)] = EEXIST
    if first != hooks:  # a folder above it: renamed, a new one could be made in its place
        actions[("rename", "tools", "tools-old")] = EBUSY
        actions[("write", "tools/notes.txt", "still writable\n")] = OK
        if present:
            actions[("rename", "tools/git", "tools/git-old")] = EBUSY
    attack(sandbox, actions)
    after = sandbox.tree()
    extra = ["evil.sh"] + (["tools/notes.txt"] if first != hooks else [])
    assert after == sorted([*before, *extra])
    commit_on_host(sandbox)
    host_git(sandbox, "checkout", "-q", "-b", "side")
    assert ran(sandbox) == []  # the person's post-commit is not in the hooks path


# --- gitdir: and commondir ---------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["separate-git-dir", "worktree"])
def test_a_gitdir_file_and_its_commondir_cannot_be_written_or_redirected(
        sandbox: Sandbox, layout: str) -> None:
    """`.git` is a `gitdir:` file naming a git directory outside the project; for a
    linked worktree that directory's `commondir` names the repository's own (with its
    settings and hooks). The spec writes the folder holding them too: still read-only."""
    store, project = sandbox.base / "store", sandbox.project
    store.mkdir()
    markers(sandbox)
    if layout == "separate-git-dir":
        git_dir = common = store / "project.git"
        sandbox.chown()
        host_git(sandbox, "init", "-q", "-b", "main", f"--separate-git-dir={git_dir}")
        (project / "README").write_text("hello\n")
        sandbox.chown()
        host_git(sandbox, "add", "README")
        host_git(sandbox, "commit", "-qm", "first")
    else:
        common = store / "common.git"
        seed = sandbox.base / "seed"
        seed.mkdir()
        (seed / "README").write_text("hello\n")
        sandbox.chown()
        for args in (("init", "-q", "-b", "main"), ("add", "README"),
                     ("commit", "-qm", "first"), ("clone", "-q", "--bare", ".", str(common))):
            host_git(sandbox, *args, cwd=seed)
        host_git(sandbox, "worktree", "add", "-q", "-b", "work", str(project), cwd=common)
        git_dir = common / "worktrees" / "project"
        assert (git_dir / "commondir").read_text() == "../..\n"
    hook = common / "hooks" / "post-commit"
    hook.write_text(payload(sandbox, "person-post-commit"))
    hook.chmod(0o755)
    sandbox.chown()
    dot_git = (project / ".git").read_text()
    assert dot_git == f"gitdir: {git_dir}\n"
    config_before = (common / "config").read_bytes()

    evil = payload(sandbox, "gitdir")
    own = "evil.git"  # the attacker's own git directory, in the project: its work
    g, c = str(git_dir), str(common)
    spec = f'files.write = [".", "{store}"]\n'
    actions: dict[Action, int | str] = {
        ("make", "evil.sh", evil): OK,
        ("mkdir", own): OK,
        ("mkdir", f"{own}/hooks"): OK,
        ("make", f"{own}/hooks/pre-commit", evil): OK,
        # the git directory the gitdir: file names, and its commondir
        ("write", f"{g}/config", "[core]\n\tfsmonitor = ./evil.sh\n"): EROFS,
        ("write", f"{g}/hooks/pre-commit" if g == c else f"{g}/HEAD", evil): EROFS,
        ("write", f"{g}/commondir", f"{project}/{own}\n"): EROFS,
        # its own mount (EBUSY), or inside the commondir's (EROFS)
        ("rename", g, f"{g}-old"): EBUSY if g == c else EROFS,
        ("write", f"{c}/config", "[core]\n\tfsmonitor = ./evil.sh\n"): EROFS,
        ("write", f"{c}/hooks/pre-commit", evil): EROFS,
        ("append", f"{c}/hooks/post-commit", "\nsh ./evil.sh\n"): EROFS,
        ("rename", c, f"{store}/moved.git"): EBUSY,
        # the .git file itself: rewritten, replaced or removed to point elsewhere
        ("write", ".git", f"gitdir: {own}\n"): EROFS,
        ("replace", ".git", f"gitdir: {own}\n"): EBUSY,
        ("unlink", ".git"): EBUSY,
        ("rename", own, ".git"): ENOTDIR,  # a folder over a file: refused before EBUSY
        ("git", "config", "core.hooksPath", f"{project}/{own}/hooks"): _lock_refused(
            sandbox, f"{c}/config"),
    }
    if layout == "worktree":
        actions[("write", f"{c}/worktrees/project/commondir", f"{project}/{own}\n")] = EROFS
    else:  # a commondir the git directory does not have yet
        actions[("mkdir", f"{g}/worktrees")] = EROFS
    attack(sandbox, actions, spec=spec)
    # The default spec does not even show the folder holding them.
    attack(sandbox, {("stat", g): ENOENT, ("write", f"{c}/config", ""): ENOENT})
    assert (project / ".git").read_text() == dot_git
    assert (common / "config").read_bytes() == config_before
    assert not (git_dir / "commondir").exists() or layout == "worktree"
    host_git(sandbox, "status", "--short")
    commit_on_host(sandbox)
    assert ran(sandbox) == ["person-post-commit"]  # the repository's own hook, only


# --- submodules: git at the top runs git in each -------------------------------------------------


def add_submodule(box: Sandbox, *, embedded: bool = False) -> None:
    """The person's submodule `sub`: its git directory in .git/modules (`sub/.git` a
    gitdir: file), or `embedded`: a repository added as it is (`sub/.git` a folder)."""
    seed = box.base / "seed"
    seed.mkdir()
    box.chown(seed)
    host_git(box, "init", "-q", "-b", "main", cwd=seed)
    (seed / "f").write_text("in the submodule\n")
    box.chown(seed)
    host_git(box, "add", "f", cwd=seed)
    host_git(box, "commit", "-qm", "sub", cwd=seed)
    if embedded:
        host_git(box, "clone", "-q", str(seed), "sub")
        host_git(box, "add", "sub")
    else:
        host_git(box, "-c", "protocol.file.allow=always", "submodule", "add", "-q",
                 str(seed), "sub")
    host_git(box, "commit", "-qm", "a submodule")
    for marker in os.listdir(markers(box)):
        (box.base / "markers" / marker).unlink()


def _redirect_submodule(box: Sandbox, marker: str, source: str = ".git/modules/sub",
                        *, worktree: bool = True) -> dict[Action, int | str]:
    """The attacker's own git directory for `sub`, a copy of the real one (`source`,
    readable) with a core.fsmonitor of its own: all in the project, its work, so all
    allowed. `worktree`: the copy names the submodule's folder (core.worktree), which
    goes, since it would point the copy back at the git directory git keeps."""
    evil = str(box.project / "evil-sub.git")
    return {
        ("copy", source, "evil-sub.git"): OK,
        ("git", "config", "-f", "evil-sub.git/config", "--unset", "core.worktree"): (
            "exit 0" if worktree else "exit 5: "),  # 5: there was none
        ("git", "config", "-f", "evil-sub.git/config", "core.fsmonitor",
         f"{evil}/fsmonitor"): "exit 0",
        ("make", "evil-sub.git/fsmonitor", payload(box, marker)): OK,
    }


@pytest.mark.parametrize("kind", ["gitdir-file", "embedded", "not-checked-out"])
def test_a_submodules_git_cannot_be_redirected(sandbox: Sandbox, kind: str) -> None:
    """`git status` at the top runs `git status` in every checked-out submodule, with
    that repository's settings. A `sub/.git` the sandbox could point at a git directory
    of its making (or make, where the submodule is not checked out) would run its
    core.fsmonitor on the person's next `git status`."""
    make_repository(sandbox)
    add_submodule(sandbox, embedded=kind == "embedded")
    project = sandbox.project
    if kind == "not-checked-out":
        host_git(sandbox, "submodule", "deinit", "-q", "sub")
        assert os.listdir(project / "sub") == []
    before = sorted(os.listdir(project / "sub"))
    source = "sub/.git" if kind == "embedded" else ".git/modules/sub"
    actions = _redirect_submodule(sandbox, "submodule-fsmonitor", source,
                                  worktree=kind == "gitdir-file")
    if kind == "not-checked-out":
        actions.update({
            ("write", "sub/.git", "gitdir: ../evil-sub.git\n"): EISDIR,  # held: a folder
            ("mkdir", "sub/.git"): EEXIST,
            ("rmdir", "sub/.git"): EBUSY,
            ("replace", "sub/.git", "gitdir: ../evil-sub.git\n"): EISDIR,
        })
    elif kind == "embedded":
        actions.update({
            ("append", "sub/.git/config", "[core]\n\tfsmonitor = ../evil-sub.git/fsmonitor\n"):
                EROFS,
            ("git", "-C", "sub", "config", "core.fsmonitor", "../evil-sub.git/fsmonitor"):
                _lock_refused(sandbox, ".git/config"),
            ("rename", "sub/.git", "sub/.git-old"): EBUSY,
        })
    else:
        actions.update({
            ("write", "sub/.git", "gitdir: ../evil-sub.git\n"): EROFS,
            ("replace", "sub/.git", "gitdir: ../evil-sub.git\n"): EBUSY,
            ("unlink", "sub/.git"): EBUSY,
            ("write", ".git/modules/sub/config", "[core]\n\tfsmonitor = /bin/true\n"): EROFS,
        })
    actions[("rename", "sub", "sub-old")] = EBUSY  # and a new sub made in its place
    actions[("write", "sub/notes.txt", "the submodule's files stay writable\n")] = OK
    attack(sandbox, actions)
    assert sorted(os.listdir(project / "sub")) == sorted([*before, "notes.txt"])
    host_git(sandbox, "status", "--short")
    host_git(sandbox, "diff")
    assert ran(sandbox) == []


@pytest.mark.parametrize("present", [True, False], ids=["present", "missing"])
def test_a_relative_hooks_path_in_the_persons_own_settings(sandbox: Sandbox,
                                                           present: bool) -> None:
    """The person's global settings name `core.hooksPath = .githooks` (a common
    convention): a folder in every repository, this one's too, though the project's
    .git/config does not name it."""
    make_repository(sandbox)
    project = sandbox.project
    (sandbox.home / ".gitconfig").write_text("[core]\n\thooksPath = .githooks\n")
    if present:
        (project / ".githooks").mkdir()
        (project / ".githooks" / "post-commit").write_text(
            payload(sandbox, "person-githooks-post-commit"))
        (project / ".githooks" / "post-commit").chmod(0o755)
    sandbox.chown()
    evil = payload(sandbox, "githooks")
    actions: dict[Action, int | str] = {
        ("make", "evil.sh", evil): OK,
        ("mkdir", ".githooks"): EEXIST,  # there, or held for the run
        ("write", ".githooks/pre-commit", evil): EROFS,
        ("rename", ".githooks", "githooks-old"): EBUSY,
        ("git", "config", "--global", "core.hooksPath", "/dev/null"): (
            f"exit 255: error: could not lock config file {sandbox.home}/.gitconfig: "
            "No such file or directory"),
    }
    attack(sandbox, actions)
    assert sandbox.listing() == sorted(
        [".git", "README", "evil.sh", *([".githooks"] if present else [])])
    commit_on_host(sandbox)
    assert ran(sandbox) == (["person-githooks-post-commit"] if present else [])


def name_programs(box: Sandbox) -> None:
    """The project ships programs its settings name: a textconv and a merge driver
    there (the person's, writing a marker each), and a clean filter not made yet."""
    project = box.project
    (project / "tools").mkdir()
    (project / "tools" / "textconv").write_text(
        payload(box, "person-textconv").replace("exit 0", 'cat "$1"'))
    (project / "tools" / "textconv").chmod(0o755)
    (project / ".gitattributes").write_text("*.txt diff=mine merge=mine filter=mine\n")
    (project / "notes.txt").write_text("notes\n")
    box.chown()
    host_git(box, "add", ".gitattributes", "notes.txt", "tools/textconv")
    host_git(box, "commit", "-qm", "programs")
    host_git(box, "config", "diff.mine.textconv", "tools/textconv")
    host_git(box, "config", "merge.mine.driver", "sh scripts/merge.sh %O %A %B")
    host_git(box, "config", "filter.mine.clean", "./bin/clean")
    (project / "scripts").mkdir()
    (project / "scripts" / "merge.sh").write_text("exit 1\n")
    box.chown()


def test_a_program_the_settings_name_in_the_project_cannot_be_rewritten(
        sandbox: Sandbox) -> None:
    """The repository's settings are read-only, but a program they run that lies in
    the project (a textconv, a merge driver, a filter) would run whatever the sandbox
    wrote there on the person's next `git diff`, `merge` or `add`."""
    make_repository(sandbox)
    name_programs(sandbox)
    evil = payload(sandbox, "named-program", filter_=True)
    attack(sandbox, {
        ("write", "tools/textconv", evil): EROFS,
        ("replace", "tools/textconv", evil): EBUSY,
        ("rename", "tools", "tools-old"): EBUSY,
        ("write", "scripts/merge.sh", evil): EROFS,
        ("mkdir", "bin"): EEXIST,  # ./bin/clean is missing: its folder is held
        ("write", "bin/clean", evil): EROFS,
        ("write", "tools/other", "the folder stays writable\n"): OK,
    })
    assert not (sandbox.project / "bin").exists()
    (sandbox.project / "notes.txt").write_text("changed\n")
    assert "+changed" in host_git(sandbox, "diff").stdout  # runs tools/textconv
    host_git(sandbox, "add", "notes.txt", check=False)
    assert ran(sandbox) == ["person-post-commit", "person-textconv"]


def test_a_gitdir_file_naming_a_missing_git_directory(sandbox: Sandbox) -> None:
    """`.git` names a git directory not made yet, in a folder the sandbox writes: made
    from inside and filled with hooks, it would be the repository git uses next. The
    first missing folder is held for the run."""
    store = sandbox.base / "store"
    store.mkdir()
    (sandbox.project / ".git").write_text(f"gitdir: {store}/gone/repo.git\n")
    markers(sandbox)
    sandbox.chown()
    evil = payload(sandbox, "missing-gitdir")
    spec = f'files.write = [".", "{store}"]\n'
    attack(sandbox, {
        ("mkdir", f"{store}/gone"): EEXIST,
        ("makedirs", f"{store}/gone/repo.git/hooks"): EROFS,
        ("write", f"{store}/gone/HEAD", "ref: refs/heads/main\n"): EROFS,
        ("rename", f"{store}/gone", f"{store}/went"): EBUSY,
        ("git", "init", "-q", "--bare", f"{store}/gone/repo.git"): (
            f"exit 128: fatal: cannot mkdir {store}/gone/repo.git: Read-only file system"),
        ("write", f"{store}/other", evil): OK,  # the folder stays writable
    }, spec=spec)
    assert sandbox.listing(store) == ["other"]
    done = host_git(sandbox, "status", check=False)
    assert done.returncode == 128
    assert f"not a git repository: {store}/gone/repo.git" in done.stderr
    assert ran(sandbox) == []


# --- dot files made before they exist -----------------------------------------------------------


def test_missing_dot_files_cannot_be_made_first(sandbox: Sandbox) -> None:
    """A missing .git, .vscode, .idea, .husky is held by an empty folder for the run:
    not made, not replaced, not linked. .envrc is deliberately not held on Linux
    (direnv runs a new one only after `direnv allow`): it is made, as the record says."""
    project, p = sandbox.project, str(sandbox.project)
    (project / "src").mkdir()
    (project / "README").write_text("hello\n")
    markers(sandbox)
    sandbox.chown()
    evil = payload(sandbox, "made-first")
    actions: dict[Action, Expected] = {
        ("make", "evil.sh", evil): OK,
        ("mkdir", "evil.git"): OK,
        # git copies its templates in the file system's readdir order, which a fresh
        # ext4 hashes: the first it cannot write may be any of them; git 2.39 (Debian
        # 12) meeting hooks/ first says so through safe_create_dir and exits 1.
        ("git", "init", "-q"): re.compile(
            r"exit 128: fatal: cannot (copy '/usr/share/git-core/templates/(?P<t>[^']+)' to "
            rf"'{re.escape(p)}/\.git/(?P=t)'|mkdir {re.escape(p)}/\.git/[^:]+): "
            "Read-only file system"
            rf"|exit 1: {re.escape(p)}/\.git/[^:]+/: Read-only file system"),
        # git moves the .git there to the new place: a mount point, it stays
        ("git", "init", "-q", "--separate-git-dir", f"{p}/src/git", "."): (
            f"exit 128: fatal: unable to move {p}/.git to {p}/src/git: "
            "Device or resource busy"),
    }
    for dot in (".git", ".vscode", ".idea", ".husky"):
        actions[("mkdir", dot)] = EEXIST
        actions[("write", dot, "gitdir: evil.git\n")] = EISDIR
        actions[("write", f"{dot}/config", evil)] = EROFS
        actions[("makedirs", f"{dot}/hooks")] = EROFS
        actions[("symlink", "evil.git", dot)] = EEXIST
        actions[("rename", "evil.git", dot)] = EBUSY
        actions[("rmdir", dot)] = EBUSY
    actions[("write", ".husky/pre-commit", evil)] = EROFS
    actions[("write", ".vscode/tasks.json", "{}")] = EROFS
    actions[("write", ".envrc", "sh ./evil.sh\n")] = OK  # not held: made, as stated
    actions[("rename", p, f"{p}-old")] = EBUSY  # the folder above: the grant's own mount
    attack(sandbox, actions)
    assert sandbox.listing() == [".envrc", "README", "evil.git", "evil.sh", "src"]
    assert host_git(sandbox, "status", check=False).returncode == 128  # no repository
    assert ran(sandbox) == []
    # One that is there now is read-only in the next run.
    attack(sandbox, {("append", ".envrc", "\n./evil.sh\n"): EROFS})


# --- links ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", [".git", ".vscode", ".envrc", "tools", "shared.gitconfig"])
def test_a_link_planted_where_a_dot_file_goes_refuses_the_launch(
        sandbox: Sandbox, where: str) -> None:
    """A link is planted where a dot file of `inner` goes: by a sandbox writing the
    folder above with its dot files opened (a repository that was there at launch is
    held like the top's otherwise: below, the plant itself is refused), or, for .envrc,
    which nothing holds, from inside inner's own sandbox. The next launch in `inner`
    refuses, naming the link."""
    inner, elsewhere = sandbox.project / "inner", sandbox.base / "elsewhere"
    inner.mkdir()
    (elsewhere / "hooks").mkdir(parents=True)
    if where != ".git":
        make_repository(sandbox, inner)
    named = {"tools": "tools/hooks"}.get(where, where)
    if where == "tools":
        host_git(sandbox, "config", "core.hooksPath", "tools/hooks", cwd=inner)
    elif where == "shared.gitconfig":
        host_git(sandbox, "config", "include.path", "../shared.gitconfig", cwd=inner)
    sandbox.chown()
    target = str(elsewhere / ("cfg" if where == "shared.gitconfig" else ""))
    if where in ("tools", "shared.gitconfig"):  # inner is a repository there at launch
        results, _ = run_actions(sandbox, [("symlink", target, f"{inner}/{where}")])
        assert results == {f"symlink {target} {inner}/{where}": "EEXIST"}  # held
    results, _ = run_actions(sandbox, [("symlink", target, f"{inner}/{where}")],
                             cwd=inner if where == ".envrc" else sandbox.project,
                             spec=None if where == ".envrc" else
                             'files.write = ["."]\nfiles.write_dot_files = ["."]\n')
    assert results == {f"symlink {target} {inner}/{where}": "OK"}
    assert (inner / where).is_symlink()

    result = sandbox.probe("write", f"{elsewhere}/hooks/pre-commit", cwd=inner)
    assert not result.started
    assert result.code == 125
    assert f"{inner}/{where} is a link in the path of {inner}/{named}" in result.stderr
    assert "files.write_dot_files" in result.stderr
    assert os.listdir(elsewhere) == ["hooks"]
    assert os.listdir(elsewhere / "hooks") == []


# --- hook managers -------------------------------------------------------------------------------

PRE_COMMIT_STUB = """#!/usr/bin/env bash
# File generated by pre-commit: https://pre-commit.com
# ID: 138fd403232d2ddd5efb44317e38bf03
# a stand-in: runs each `entry:` of the settings, as pre-commit runs a local system hook
ARGS=(hook-impl --config=.pre-commit-config.yaml --hook-type=pre-commit)
sed -n 's/^ *entry: *//p' .pre-commit-config.yaml | while read -r entry; do sh -c "$entry"; done
"""

LEFTHOOK_STUB = """#!/bin/sh
# a stand-in for lefthook's stub: runs each `run:` of its settings and its scripts
call_lefthook()
{
  for file in lefthook.yml lefthook-local.yml; do
    [ -f "$file" ] && sed -n 's/^ *run: *//p' "$file" | while read -r run; do sh -c "$run"; done
  done
  for script in .lefthook/"$2"/* .lefthook-local/"$2"/*; do
    [ -f "$script" ] && sh "$script"
  done
  return 0
}
call_lefthook run "pre-push" "$@"
"""


def test_hook_managers_settings_cannot_be_rewritten(sandbox: Sandbox) -> None:
    make_repository(sandbox)
    project = sandbox.project
    hooks = project / ".git" / "hooks"
    (hooks / "pre-commit").write_text(PRE_COMMIT_STUB)
    (hooks / "post-merge").write_text(LEFTHOOK_STUB.replace("pre-push", "post-merge"))
    for stub in ("pre-commit", "post-merge"):
        (hooks / stub).chmod(0o755)
    person = f"echo ran >> {sandbox.base}/markers/person-"
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: local\n  hooks:\n  - id: mine\n    entry: {person}pre-commit\n"
        "    language: system\n")
    (project / "lefthook.yml").write_text(f"post-merge:\n  commands:\n    mine:\n"
                                          f"      run: {person}lefthook\n")
    host_git(sandbox, "add", ".pre-commit-config.yaml", "lefthook.yml")
    host_git(sandbox, "commit", "-qm", "hook managers")
    for marker in ("person-pre-commit", "person-post-commit"):
        (sandbox.base / "markers" / marker).unlink()
    sandbox.chown()
    evil = f"{project}/evil.sh"
    planted_pc = ("repos:\n- repo: local\n  hooks:\n  - id: evil\n"
                  f"    entry: {evil}\n    language: system\n")
    planted_lh = f"post-merge:\n  commands:\n    evil:\n      run: {evil}\n"
    attack(sandbox, {
        ("make", "evil.sh", payload(sandbox, "hook-manager")): OK,
        ("write", ".pre-commit-config.yaml", planted_pc): EROFS,
        ("replace", ".pre-commit-config.yaml", planted_pc): EBUSY,
        ("write", "lefthook.yml", planted_lh): EROFS,
        ("replace", "lefthook.yml", planted_lh): EBUSY,
        ("write", "lefthook-local.yml", planted_lh): EISDIR,  # missing: held, a folder
        ("mkdir", ".lefthook"): EEXIST,  # missing: held
        ("makedirs", ".lefthook/post-merge"): EROFS,
        ("mkdir", ".lefthook-local"): EEXIST,
        ("write", ".lefthook-local/post-merge", evil): EROFS,
    })
    commit_on_host(sandbox)  # runs pre-commit's stub
    host_git(sandbox, "checkout", "-q", "-b", "side")
    host_git(sandbox, "commit", "-q", "--allow-empty", "-m", "on side")
    host_git(sandbox, "checkout", "-q", "main")
    host_git(sandbox, "merge", "-q", "--no-edit", "side")  # runs lefthook's stub
    assert ran(sandbox) == ["person-lefthook", "person-post-commit", "person-pre-commit"]
    assert "evil" not in (project / ".pre-commit-config.yaml").read_text()
    assert not (project / "lefthook-local.yml").exists()
    assert ".lefthook" not in sandbox.listing()  # held, and may stay for the next run


# --- the control: write_dot_files is the person's choice ------------------------------------------


def test_with_write_dot_files_the_same_attacks_run_on_the_host(sandbox: Sandbox) -> None:
    """With `write_dot_files = ["."]` a commit works inside, and every attack above
    succeeds: the host's git then runs each planted command. The markers and triggers
    work; the other tests pass because the sandbox refused."""
    make_repository(sandbox)
    add_submodule(sandbox)
    name_programs(sandbox)
    for marker in os.listdir(sandbox.base / "markers"):
        (sandbox.base / "markers" / marker).unlink()
    spec = 'files.write = ["."]\nfiles.write_dot_files = ["."]\n'
    actions: dict[Action, int | str] = {("mkdir", "evil"): OK}
    for which in CONFIG_ATTACKS:
        settings, payloads = _config_attack(sandbox, which)
        actions.update({("make", path, body): OK for path, body in payloads.items()})
        actions.update({("git", "config", k, v): "exit 0" for k, v in settings.items()})
    actions[("write", ".gitattributes", "* filter=x\n*.txt diff=mine\n")] = OK
    actions.update(_redirect_submodule(sandbox, "submodule-fsmonitor"))
    actions[("write", "sub/.git", "gitdir: ../evil-sub.git\n")] = OK
    actions[("write", "tools/textconv", payload(sandbox, "named-program"))] = OK
    (sandbox.project / "README").write_text("hello\nagain\n")
    actions[("git", "-c", "core.hooksPath=/dev/null", "-c", "user.name=Box", "-c",
             "user.email=box@example.com", "commit", "-qm", "from inside",
             "README")] = "exit 0"
    attack(sandbox, actions, spec=spec)
    log = host_git(sandbox, "log", "--format=%s").stdout.splitlines()
    assert log == ["from inside", "programs", "a submodule", "first"]
    for which in CONFIG_ATTACKS:
        _trigger(sandbox, which)
    (sandbox.project / "notes.txt").write_text("changed\n")
    host_git(sandbox, "diff", "--no-ext-diff", "--", "notes.txt")
    expected = [m for which in CONFIG_ATTACKS for m in MARKERS[which]]
    assert ran(sandbox) == sorted([*expected, "submodule-fsmonitor", "named-program"])
