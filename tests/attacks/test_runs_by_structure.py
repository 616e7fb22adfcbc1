"""What runs as the person, found by structure rather than by a table of names (issue 26,
item 2): what a link in home leads to, what the person's own settings name, other
version-control systems' metadata, repositories and virtual environments that were
there before the run.

Each attack plants from inside a real sandbox (root mode and the unprivileged user),
then runs the person's real tool outside as the same user (less through Debian's
lesspipe, bash at a terminal pressing Enter, git in an unrelated repository, hg, bash
sourcing an activation script) and shows nothing planted ran; its control runs the same
plants where the spec opens the folder's protections (files.write_dot_files), and the
same tool then runs them, so each test passes because the sandbox refused, not because
the plant or the trigger was broken.
"""

from __future__ import annotations

import errno
import secrets
import subprocess
from pathlib import Path

import pytest

from support.git_host import attack, git_env, markers, ran
from support.processes import at_terminal
from support.sandbox import PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

OK, EROFS, EBUSY, EEXIST = 0, errno.EROFS, errno.EBUSY, errno.EEXIST
# A missing path that is held is an empty folder for the run (issue 27: no placeholder
# git lists), so a write there meets a folder, read-only.
EISDIR = errno.EISDIR
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
WRITE_DOTFILES = 'files.write = ["~/dotfiles"]\n'
OPEN_DOTFILES = WRITE_DOTFILES + 'files.write_dot_files = ["~/dotfiles"]\n'


def mark(box: Sandbox, name: str) -> str:
    return f"{box.base}/markers/{name}"


def host(box: Sandbox, *command: str, cwd: Path | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A real program on the host, as the sandbox's user, in its home."""
    environment = {"PATH": SYSTEM_PATH, "HOME": str(box.home), "LANG": "C.UTF-8",
                   "TERM": "dumb", **(env or {})}
    return subprocess.run([*box.who.prefix, *command], cwd=cwd or box.home, env=environment,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)


def _dotfiles(box: Sandbox) -> Path:
    folder = box.home / "dotfiles"
    folder.mkdir(exist_ok=True)
    markers(box)
    return folder


# -- a link in home: less's ~/.lessfilter, readline's ~/.inputrc -----------------------------

def _lessfilter(box: Sandbox) -> Path:
    """~/.lessfilter -> dotfiles/lessfilter (GNU Stow's layout), the person's own filter,
    which lets lesspipe go on (its status is false's); and a file to read."""
    dotfiles = _dotfiles(box)
    (dotfiles / "lessfilter").write_text("#!/bin/sh\nfalse\n")
    (dotfiles / "lessfilter").chmod(0o755)
    (box.home / ".lessfilter").symlink_to("dotfiles/lessfilter")
    (box.home / "notes.txt").write_text("the person's notes\n")
    box.chown()
    return dotfiles


def _less(box: Sandbox) -> None:
    # Debian's ~/.bashrc runs `eval "$(lesspipe)"`, which sets this LESSOPEN.
    done = host(box, "less", "notes.txt", env={"LESSOPEN": "| /usr/bin/lesspipe %s"})
    assert done.returncode == 0 and "the person's notes" in done.stdout, done


@pytest.mark.requires_person_tools
@pytest.mark.parametrize("opened", [False, True], ids=["held", "control"])
def test_a_linked_lessfilter_is_read_only(sandbox: Sandbox, opened: bool) -> None:
    dotfiles = _lessfilter(sandbox)
    plant = f"echo less >> {mark(sandbox, 'lessfilter')}\nfalse\n"
    plants: dict[tuple[str, ...], int] = {
        ("write", "notes.md", "the repository's own files stay writable\n"): OK,
        ("append", "lessfilter", plant): OK if opened else EROFS,
    }
    if not opened:  # (a file renamed over it would lose its x bit: the append is the plant)
        plants[("replace", "lessfilter", f"#!/bin/sh\n{plant}")] = EBUSY
    attack(sandbox, plants, spec=OPEN_DOTFILES if opened else WRITE_DOTFILES, cwd=dotfiles)
    _less(sandbox)
    assert ran(sandbox) == (["lessfilter"] if opened else [])


def _bash_at_a_terminal(box: Sandbox) -> bytes:
    """The person's bash, interactive at a terminal, readline reading ~/.inputrc: types
    a command and presses Enter, then exits."""
    env = {"PATH": SYSTEM_PATH, "HOME": str(box.home), "LANG": "C.UTF-8", "TERM": "xterm",
           "PS1": "$ "}
    status, output = at_terminal([*box.who.prefix, "bash", "--norc", "--noprofile", "-i"],
                                 cwd=box.home, env=env,
                                 typed=((b"$ ", b"echo FIRST\r"), (b"FIRST", b"exit\r")))
    assert status == 0 and b"FIRST" in output, output
    return output


@pytest.mark.parametrize("opened", [False, True], ids=["held", "control"])
def test_a_linked_inputrc_is_read_only(sandbox: Sandbox, opened: bool) -> None:
    """A readline macro bound to Return that types a command and ends in accept-line
    (C-j): the person's next Enter in bash runs it. docs/runs-as-you.md once said
    .inputrc runs no command."""
    dotfiles = _dotfiles(sandbox)
    (dotfiles / "inputrc").write_text("set bell-style none\n")
    (sandbox.home / ".inputrc").symlink_to("dotfiles/inputrc")
    sandbox.chown()
    macro = f'"\\C-m": "\\C-e; echo readline >> {mark(sandbox, "inputrc")}\\C-j"\n'
    attack(sandbox, {("append", "inputrc", macro): OK if opened else EROFS},
           spec=OPEN_DOTFILES if opened else WRITE_DOTFILES, cwd=dotfiles)
    _bash_at_a_terminal(sandbox)
    assert ran(sandbox) == (["inputrc"] if opened else [])


def test_any_link_in_home_into_a_grant_is_read_only(sandbox: Sandbox) -> None:
    """The class: links of random names, at home's top and in a dot folder (a file and a
    folder), lead into the grant: their targets are read-only, whatever the names;
    a link without a dot at home's top is the person's files and stays writable."""
    dotfiles = _dotfiles(sandbox)
    top, inner, folder, plain = (secrets.token_hex(4) for _ in range(4))
    (dotfiles / top).write_text("a\n")
    (dotfiles / inner).write_text("b\n")
    (dotfiles / folder).mkdir()
    (dotfiles / folder / "settings").write_text("c\n")
    (dotfiles / plain).write_text("d\n")
    (sandbox.home / f".{top}").symlink_to(f"dotfiles/{top}")
    (sandbox.home / f".cfg{inner}").mkdir()
    (sandbox.home / f".cfg{inner}" / inner).symlink_to(f"../dotfiles/{inner}")
    (sandbox.home / ".config").mkdir()
    (sandbox.home / ".config" / folder).symlink_to(f"../dotfiles/{folder}")
    (sandbox.home / plain).symlink_to(f"dotfiles/{plain}")
    sandbox.chown()
    for spec, closed in ((WRITE_DOTFILES, EROFS), (OPEN_DOTFILES, OK)):
        attack(sandbox, {
            ("append", top, "x\n"): closed,
            ("append", inner, "x\n"): closed,
            ("append", f"{folder}/settings", "x\n"): closed,
            ("write", f"{folder}/new", "x\n"): closed,
            ("append", plain, "x\n"): OK,
        }, spec=spec, cwd=dotfiles)


# -- what the person's git settings name, in a folder that is no repository -----------------

def _work(box: Sandbox) -> Path:
    """~/.gitconfig including ~/work/team.gitconfig and naming ~/work/hooks as its hooks
    folder; ~/work is a folder of the person's, not a repository."""
    work = box.home / "work"
    (work / "hooks").mkdir(parents=True)
    (work / "team.gitconfig").write_text("[user]\n\tname = Person\n")
    (box.home / ".gitconfig").write_text(
        "[include]\n\tpath = ~/work/team.gitconfig\n[core]\n\thooksPath = ~/work/hooks\n")
    markers(box)
    box.chown()
    return work


def _git_elsewhere(box: Sandbox) -> None:
    """The person's git in an unrelated repository: status, and a checkout (hooks)."""
    other = box.base / "other"
    other.mkdir()
    box.chown(other)
    for args in (("init", "-q", "-b", "main"), ("commit", "-q", "--allow-empty", "-m", "x"),
                 ("status",), ("checkout", "-q", "-b", "side")):
        done = subprocess.run([*box.who.prefix, "git", *args], cwd=other, env=git_env(box),
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("opened", [False, True], ids=["held", "control"])
def test_what_the_persons_git_settings_name_is_read_only(sandbox: Sandbox,
                                                        opened: bool) -> None:
    work = _work(sandbox)
    monitor = f"#!/bin/sh\necho \"$0\" >> {mark(sandbox, 'fsmonitor')}\nexit 0\n"
    hook = f"#!/bin/sh\necho \"$0\" >> {mark(sandbox, 'post-checkout')}\nexit 0\n"
    spec = 'files.write = ["~/work"]\n' + (
        'files.write_dot_files = ["~/work"]\n' if opened else "")
    attack(sandbox, {
        ("make", "monitor.sh", monitor): OK,
        ("append", "team.gitconfig", f"[core]\n\tfsmonitor = {work}/monitor.sh\n"):
            OK if opened else EROFS,
        ("make", "hooks/post-checkout", hook): OK if opened else EROFS,
    }, spec=spec, cwd=work)
    _git_elsewhere(sandbox)
    assert ran(sandbox) == (["fsmonitor", "post-checkout"] if opened else [])


def test_any_git_key_naming_a_path_is_judged(sandbox: Sandbox) -> None:
    """The class: a key of a random name in the person's settings whose value is a path
    in the grant (a file there, one missing, a program with an argument) keeps it."""
    work = _work(sandbox)
    section, key, there, missing, tool = (secrets.token_hex(4) for _ in range(5))
    (work / there).write_text("the person's\n")
    (work / tool).write_text("#!/bin/sh\n")
    with (sandbox.home / ".gitconfig").open("a") as config:
        config.write(f'[x{section} "sub"]\n\tk{key} = ~/work/{there}\n'
                     f"\tother = {work}/{missing}\n\tprogram = ~/work/{tool} --flag\n")
    sandbox.chown()
    attack(sandbox, {
        ("append", there, "x\n"): EROFS,
        ("write", missing, "x\n"): EISDIR,
        ("append", tool, "x\n"): EROFS,
        ("write", "unnamed.txt", "the folder stays writable\n"): OK,
    }, spec='files.write = ["~/work"]\n', cwd=work)


# -- what the person's shell sources by a literal path ----------------------------------------

@pytest.mark.parametrize("opened", [False, True], ids=["held", "control"])
def test_what_the_persons_shell_sources_is_read_only(sandbox: Sandbox, opened: bool) -> None:
    work = sandbox.home / "work"
    work.mkdir()
    (work / "aliases").write_text("alias ll='ls -l'\n")
    (sandbox.home / ".bashrc").write_text(
        "[ -f ~/work/aliases ] && . ~/work/aliases\nsource \"$HOME/work/later\"\n")
    markers(sandbox)
    sandbox.chown()
    spec = 'files.write = ["~/work"]\n' + (
        'files.write_dot_files = ["~/work"]\n' if opened else "")
    attack(sandbox, {
        ("append", "aliases", f"echo aliases >> {mark(sandbox, 'aliases')}\n"):
            OK if opened else EROFS,
        ("write", "later", f"echo later >> {mark(sandbox, 'later')}\n"):
            OK if opened else EISDIR,
    }, spec=spec, cwd=work)
    host(sandbox, "bash", "-ic", "true")
    assert ran(sandbox) == (["aliases", "later"] if opened else [])


# -- other version control at the top ---------------------------------------------------------

def _hg(box: Sandbox, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = host(box, "hg", *args, cwd=box.project, env={"HGRCPATH": "", "HGUSER": "p"})
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.mark.requires_person_tools
@pytest.mark.parametrize("opened", [False, True], ids=["held", "control"])
def test_a_mercurial_repository_at_the_top_keeps_its_hgrc(sandbox: Sandbox,
                                                         opened: bool) -> None:
    markers(sandbox)
    sandbox.chown()
    _hg(sandbox, "init")
    hook = f"[hooks]\npre-status = echo hg >> {mark(sandbox, 'hg')}\n"
    spec = 'files.write = ["."]\n' + ('files.write_dot_files = ["."]\n' if opened else "")
    attack(sandbox, {
        ("write", "work.txt", "the project stays writable\n"): OK,
        ("write", ".hg/hgrc", hook): OK if opened else EROFS,
    }, spec=spec)
    _hg(sandbox, "status")
    assert ran(sandbox) == (["hg"] if opened else [])


@pytest.mark.requires_person_tools
def test_a_missing_hg_jj_or_sl_cannot_be_made_at_the_top(sandbox: Sandbox) -> None:
    markers(sandbox)
    hook = f"[hooks]\npre-status = echo hg >> {mark(sandbox, 'hg')}\n"
    attack(sandbox, {
        ("mkdir", ".hg"): EEXIST,  # held for the run by an empty folder
        ("write", ".hg/hgrc", hook): EROFS,
        ("write", ".hg/requires", "store\n"): EROFS,
        ("mkdir", ".jj"): EEXIST,
        ("makedirs", ".jj/repo"): EROFS,
        ("mkdir", ".sl"): EEXIST,
        ("write", ".sl/config", hook): EROFS,
    }, spec='files.write = ["."]\n')
    assert not (sandbox.project / ".hg").exists()  # the placeholder went with the run
    done = _hg(sandbox, "status", check=False)
    assert "no repository found" in done.stderr, done
    assert ran(sandbox) == []


def test_other_version_controls_metadata_is_read_only_where_it_is(sandbox: Sandbox) -> None:
    """jj, Sapling, Breezy, darcs, Pijul and Fossil cannot be installed from Debian here
    (or are checked by their files alone): what each reads to run is held read-only."""
    layout = {".jj/repo/config.toml": "[ui]\n", ".sl/config": "[ui]\n",
              ".bzr/branch/branch.conf": "\n", "_darcs/prefs/defaults": "\n",
              ".pijul/config": "\n", ".fslckout": ""}
    for name, text in layout.items():
        (sandbox.project / name).parent.mkdir(parents=True, exist_ok=True)
        (sandbox.project / name).write_text(text)
    sandbox.chown()
    plants: dict[tuple[str, ...], int] = {("append", name, "x\n"): EROFS for name in layout}
    plants[("rename", ".jj", "moved")] = EBUSY
    plants[("write", "work.txt", "the project stays writable\n")] = OK
    attack(sandbox, plants, spec='files.write = ["."]\n')


# -- repositories below the top, there at launch ------------------------------------------------

def _src(box: Sandbox) -> Path:
    """~/src holding app, a repository of the person's with a commit (as the person's
    `cd ~/src && lnk sandbox run ...` finds it)."""
    src = box.home / "src"
    app = src / "app"
    app.mkdir(parents=True)
    markers(box)
    box.chown()
    env = git_env(box)
    for args in (("init", "-q", "-b", "main"), ("commit", "-q", "--allow-empty", "-m", "x")):
        subprocess.run([*box.who.prefix, "git", *args], cwd=app, env=env, check=True,
                       capture_output=True, timeout=60)
    return src


@pytest.mark.parametrize("opened", [False, True], ids=["held", "control"])
def test_a_repository_below_the_top_is_held_like_the_tops(sandbox: Sandbox,
                                                          opened: bool) -> None:
    src = _src(sandbox)
    evil = f"#!/bin/sh\necho \"$0\" >> {mark(sandbox, 'below')}\nexit 0\n"
    closed = OK if opened else EROFS
    attack(sandbox, {
        ("make", "app/.git/hooks/post-checkout", evil): closed,
        ("append", "app/.git/config", f"[core]\n\tfsmonitor = {src}/app/evil.sh\n"): closed,
        ("make", "app/evil.sh", evil): OK,  # its files stay the sandbox's to write
        ("rename", "app", "moved"): OK if opened else EBUSY,
        # a repository the sandbox makes in the run is its work, as the record says
        ("git", "init", "-q", "new"): "exit 0",
        ("make", "new/.git/hooks/post-checkout", evil): OK,
    }, spec=None if not opened else 'files.write = ["."]\nfiles.write_dot_files = ["."]\n',
        cwd=src)
    app = src / ("moved" if opened else "app")
    for args in (("status",), ("checkout", "-q", "-b", "side")):
        subprocess.run([*sandbox.who.prefix, "git", *args], cwd=app, env=git_env(sandbox),
                       capture_output=True, timeout=60)
    assert ran(sandbox) == (["below"] if opened else [])


def test_where_the_walk_stops_describe_says_so(sandbox: Sandbox) -> None:
    for index in range(300):
        (sandbox.project / f"d{index:03}").mkdir()
    sandbox.chown()
    done = sandbox.lnk("describe", spec='files.write = ["."]\n')
    assert done.returncode == 0, done.stderr
    assert "not looked at (the walks at launch stopped at their bound" in done.stdout
    assert f"{sandbox.project}/d255    (not walked below ." in done.stdout
    assert "and 40 more folders" in done.stdout


# -- a project's virtual environment ---------------------------------------------------------

def _venv(box: Sandbox) -> Path:
    venv = box.project / ".venv"
    subprocess.run([PYTHON_INSIDE, "-m", "venv", "--without-pip", str(venv)], check=True,
                   capture_output=True, timeout=60)
    (venv / "bin" / "activate_this.py").write_text("# virtualenv's, run with exec()\n")
    markers(box)
    box.chown()
    return venv


@pytest.mark.parametrize("opened", [False, True], ids=["held", "control"])
def test_a_virtual_environments_activation_scripts_are_read_only(sandbox: Sandbox,
                                                                 opened: bool) -> None:
    venv = _venv(sandbox)
    site = next((venv / "lib").glob("python*/site-packages")).relative_to(sandbox.project)
    closed = OK if opened else EROFS
    spec = 'files.write = ["."]\n' + ('files.write_dot_files = ["."]\n' if opened else "")
    attack(sandbox, {
        ("append", ".venv/bin/activate", f"echo bash >> {mark(sandbox, 'activate')}\n"):
            closed,
        ("append", ".venv/bin/activate_this.py",
         f"open({mark(sandbox, 'activate_this')!r}, 'w')\n"): closed,
        # installing into it is the common work: what pip writes stays writable
        ("write", f"{site}/zz.pth", "\n"): OK,
        ("write", ".venv/bin/newtool", "#!/bin/sh\n"): OK,
    }, spec=spec)
    host(sandbox, "bash", "-c", ". .venv/bin/activate && true", cwd=sandbox.project)
    host(sandbox, PYTHON_INSIDE, "-c", "exec(open('.venv/bin/activate_this.py').read())",
         cwd=sandbox.project)
    assert ran(sandbox) == (["activate", "activate_this"] if opened else [])
