"""What runs as the person outside, beyond .git's own files: a top that becomes a bare
repository, and committing through files.commit without opening what git runs.

Each attack plants from inside a real sandbox (root mode and the unprivileged user),
then runs the person's real git outside, as the same user, and shows the payload never
ran; a control with files.write_dot_files runs the same plants and they do run, so the
tests pass because the sandbox refused, not because the plants or triggers were broken.
"""

from __future__ import annotations

import errno
import os
import socket
import subprocess
from pathlib import Path

import pytest

from support.git_host import attack, host_git, make_repository, markers, payload, ran
from support.sandbox import PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

OK, EROFS, EBUSY, EEXIST = 0, errno.EROFS, errno.EBUSY, errno.EEXIST
COMMIT = 'files.write = ["."]\nfiles.commit = ["."]\n'
READS = '[files]\nread = ["."]\n'  # the project read, not written


def _bare_plant(box: Sandbox, folder: Path, marker: str) -> dict[tuple[str, ...], int]:
    """What makes `folder` (the working directory inside) a git directory with a
    core.fsmonitor of the attacker's, and itself as its work tree: git status runs it."""
    evil = payload(box, marker)
    return {
        ("make", "evil.sh", evil): OK,
        ("mkdir", "objects"): OK,
        ("mkdir", "refs"): OK,
        ("mkdir", "refs/heads"): OK,
        ("write", "config",
         f"[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
         f"\tworktree = {folder}\n\tfsmonitor = {folder}/evil.sh\n"): OK,
    }


def test_a_top_without_git_cannot_become_a_bare_repository(sandbox: Sandbox) -> None:
    """No repository is found from the top: HEAD is held, by an empty folder git cannot
    read (and checks first); what was planted beside it is no repository once it went."""
    markers(sandbox)
    plant = _bare_plant(sandbox, sandbox.project, "bare-top")
    plant[("write", "HEAD", "ref: refs/heads/main\n")] = errno.EISDIR
    plant[("rmdir", "HEAD")] = EBUSY
    attack(sandbox, plant)
    done = host_git(sandbox, "status", check=False)
    assert "not a git repository" in done.stderr, done
    assert ran(sandbox) == []


def test_a_commondir_cannot_point_the_top_at_a_repository_elsewhere(sandbox: Sandbox) -> None:
    """git looks for objects/ and refs/ where a folder's commondir points: a commondir
    naming x/, a complete repository the sandbox made, would pass git's discovery were
    only refs held. HEAD is held, which git checks before reading commondir."""
    markers(sandbox)
    evil = payload(sandbox, "commondir")
    folder = sandbox.project
    plant: dict[tuple[str, ...], int | str] = {
        ("make", "evil.sh", evil): OK,
        ("mkdir", "x"): OK,
        ("mkdir", "x/objects"): OK,
        ("mkdir", "x/refs"): OK,
        ("mkdir", "x/refs/heads"): OK,
        ("write", "x/config",
         f"[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
         f"\tworktree = {folder}\n\tfsmonitor = {folder}/evil.sh\n"): OK,
        ("write", "HEAD", "ref: refs/heads/main\n"): errno.EISDIR,
        ("write", "commondir", "x\n"): OK,
    }
    attack(sandbox, plant)
    done = host_git(sandbox, "status", check=False)
    assert "not a git repository" in done.stderr, done
    assert ran(sandbox) == []


def test_a_written_folder_inside_a_repository_cannot_shadow_it(sandbox: Sandbox) -> None:
    """write = ["./src"] inside a real repository: a bare repository made in src would
    be the one git finds there first, before the person's own."""
    make_repository(sandbox)
    (sandbox.project / "src").mkdir()
    sandbox.chown()
    src = sandbox.project / "src"
    plant = _bare_plant(sandbox, src, "shadow")
    plant[("write", "HEAD", "ref: refs/heads/main\n")] = OK
    plant[("mkdir", "refs")] = EEXIST
    plant[("mkdir", "refs/heads")] = errno.ENOTDIR
    attack(sandbox, plant, spec='files.write = ["."]\n', cwd=src)
    host_git(sandbox, "status", cwd=src)
    top = host_git(sandbox, "rev-parse", "--show-toplevel", cwd=src).stdout.strip()
    assert top == str(sandbox.project)  # the person's own repository answered
    assert ran(sandbox) == []


def test_files_commit_cannot_turn_the_top_into_a_bare_repository(sandbox: Sandbox) -> None:
    """Under files.commit the sandbox writes HEAD in .git: written wrong, git's discovery
    goes on to the top itself. There (a folder named HEAD would make `git diff HEAD`
    ambiguous) commondir is held as an empty folder and refs as a socket: neither can be
    made, and what is planted beside them is no repository, during the run or after."""
    make_repository(sandbox)
    markers(sandbox)
    plant = _bare_plant(sandbox, sandbox.project, "commit-bare")
    plant[("write", ".git/HEAD", "garbage\n")] = OK
    plant[("write", "HEAD", "ref: refs/heads/main\n")] = OK
    plant[("mkdir", "refs")] = EEXIST
    plant[("mkdir", "refs/heads")] = errno.ENOTDIR
    plant[("write", "commondir", "x\n")] = errno.EISDIR
    attack(sandbox, plant, spec=COMMIT)
    host_git(sandbox, "status", check=False)
    host_git(sandbox, "status", check=False, cwd=sandbox.project / "objects")
    assert ran(sandbox) == []


def test_with_write_dot_files_a_broken_head_lets_the_top_become_bare(sandbox: Sandbox) -> None:
    """The control: the same plant with the folder's dot files opened runs on the host."""
    make_repository(sandbox)
    markers(sandbox)
    plant = _bare_plant(sandbox, sandbox.project, "commit-bare")
    plant[("write", ".git/HEAD", "garbage\n")] = OK
    plant[("write", "HEAD", "ref: refs/heads/main\n")] = OK
    attack(sandbox, plant, spec='files.write = ["."]\nfiles.write_dot_files = ["."]\n')
    host_git(sandbox, "status", check=False)
    assert ran(sandbox) == ["commit-bare"]


def test_with_write_dot_files_the_top_becomes_a_bare_repository(sandbox: Sandbox) -> None:
    """The control: the same plant with the folder's dot files opened runs on the host."""
    markers(sandbox)
    plant = _bare_plant(sandbox, sandbox.project, "bare-top")
    plant[("write", "HEAD", "ref: refs/heads/main\n")] = OK
    attack(sandbox, plant, spec='files.write = ["."]\nfiles.write_dot_files = ["."]\n')
    host_git(sandbox, "status", check=False)
    assert ran(sandbox) == ["bare-top"]


# -- committing, with what git runs closed ---------------------------------------------------

GIT_WORK = [
    ("write", "work.txt", "one\n"),
    ("git", "add", "work.txt"),
    ("git", "commit", "-qm", "from inside"),
    ("write", "work.txt", "two\n"),
    ("git", "stash", "-q"),
    ("git", "stash", "pop", "-q"),
    ("git", "branch", "side"),
    ("git", "commit", "-qam", "second"),
    ("git", "rebase", "-q", "side"),
    ("git", "worktree", "add", "-q", "wt"),
]


def _committer(box: Sandbox) -> str:
    return ("[env]\nset = { GIT_AUTHOR_NAME = \"A\", GIT_AUTHOR_EMAIL = \"a@example.com\", "
            "GIT_COMMITTER_NAME = \"A\", GIT_COMMITTER_EMAIL = \"a@example.com\" }\n")


def test_files_commit_lets_git_work(sandbox: Sandbox) -> None:
    make_repository(sandbox)
    attack(sandbox, {action: "exit 0" if action[0] == "git" else OK for action in GIT_WORK},
           spec=COMMIT + _committer(sandbox))
    log = host_git(sandbox, "log", "--format=%s").stdout.split()
    assert log[:2] == ["second", "inside"] or log[:3] == ["second", "from", "inside"]
    assert (sandbox.project / "wt" / "README").exists()
    assert not (sandbox.project / ".git" / "commondir").exists()  # the placeholder went


def _commit_plants(box: Sandbox) -> dict[tuple[str, ...], int | str]:
    evil = payload(box, "commit-plant")
    fsmonitor = f"[core]\n\tfsmonitor = {box.project}/evil.sh\n"
    return {
        ("make", "evil.sh", evil): OK,
        ("append", ".git/config", fsmonitor): EROFS,
        ("replace", ".git/config", fsmonitor): EBUSY,
        ("write", ".git/hooks/post-commit", evil): EROFS,
        ("write", ".git/hooks/pre-commit", evil): EROFS,
        ("write", ".git/commondir", f"{box.project}/evil-git\n"): EROFS,
        ("write", ".git/config.worktree", fsmonitor): EROFS,
        ("write", ".git/info/attributes", "* filter=evil\n"): EROFS,
        ("mkdir", ".git/modules/x"): EROFS,
        ("rename", ".git", "moved-git"): EBUSY,
        ("write", ".git/worktrees/other/commondir", f"{box.project}/evil-git\n"): EROFS,
        ("write", ".git/worktrees/other/config.worktree", fsmonitor): EROFS,
    }


def test_files_commit_keeps_what_git_runs_closed(sandbox: Sandbox) -> None:
    """Each place git reads to decide what to run, written from inside under
    files.commit; then the person's git outside, in the repository and in a linked
    worktree of theirs, runs status, commit and diff: nothing planted runs."""
    make_repository(sandbox)
    host_git(sandbox, "worktree", "add", "-q", str(sandbox.base / "other"))
    markers(sandbox)
    attack(sandbox, _commit_plants(sandbox), spec=COMMIT + _committer(sandbox))
    host_git(sandbox, "status")
    (sandbox.project / "README").write_text("changed\n")
    host_git(sandbox, "commit", "-qam", "by the person")
    host_git(sandbox, "status", cwd=sandbox.base / "other")
    host_git(sandbox, "diff", cwd=sandbox.base / "other")
    assert ran(sandbox) == ["person-post-commit"]  # the person's own hook: the host runs hooks


def test_with_write_dot_files_the_commit_plants_run(sandbox: Sandbox) -> None:
    """The control: the same plants with .git opened whole run on the host."""
    make_repository(sandbox)
    markers(sandbox)
    evil = payload(sandbox, "commit-plant")
    attack(sandbox, {("make", "evil.sh", evil): OK,
                     ("append", ".git/config",
                      f"[core]\n\tfsmonitor = {sandbox.project}/evil.sh\n"): OK},
           spec='files.write = ["."]\nfiles.write_dot_files = ["."]\n')
    host_git(sandbox, "status")
    assert "commit-plant" in ran(sandbox)


def test_a_placeholder_commondir_reads_as_the_git_directory_itself(sandbox: Sandbox) -> None:
    """While a run holds `.git/commondir` (missing), the person's own git outside goes
    on working: it holds `.`, which names the git directory, where an empty file would
    make git die."""
    make_repository(sandbox)
    lnk = subprocess.Popen(
        [*sandbox.who.prefix, *sandbox_command(sandbox, COMMIT)],
        cwd=sandbox.project, env=sandbox.env(), stdout=subprocess.PIPE, text=True)
    try:
        assert lnk.stdout is not None
        assert lnk.stdout.readline().strip() == "READY"
        assert (sandbox.project / ".git" / "commondir").read_text() == "."
        done = host_git(sandbox, "status", "--short")
        assert done.returncode == 0
        assert host_git(sandbox, "rev-parse", "--git-common-dir").stdout.strip() in (
            ".git", str(sandbox.project / ".git"))
    finally:
        lnk.kill()
        lnk.wait()
        if lnk.stdout is not None:
            lnk.stdout.close()


def sandbox_command(box: Sandbox, spec: str) -> list[str]:
    from support.sandbox import LNK

    path = box.write_spec(spec)
    return [LNK, "sandbox", "run", "--spec", str(path), "--yes", "--", "/bin/sh", "-c",
            "echo READY; sleep 30"]


def test_the_person_commits_in_a_linked_worktree_after_files_commit(sandbox: Sandbox) -> None:
    """A linked worktree of the person's, elsewhere: its own git directory's files are
    held too, and its status and commit run nothing planted."""
    make_repository(sandbox)
    other = sandbox.base / "other"
    host_git(sandbox, "worktree", "add", "-q", str(other))
    markers(sandbox)
    before = sorted(os.listdir(sandbox.project / ".git" / "worktrees" / "other"))
    attack(sandbox, _commit_plants(sandbox), spec=COMMIT)
    assert sorted(os.listdir(sandbox.project / ".git" / "worktrees" / "other")) == before
    (other / "README").write_text("in the worktree\n")
    host_git(sandbox, "commit", "-qam", "worktree", cwd=other)
    assert ran(sandbox) == ["person-post-commit"]


# -- coding agents' and editors' project settings --------------------------------------------

def test_agent_settings_cannot_be_planted(sandbox: Sandbox) -> None:
    """Each harness's project settings, made from inside where missing (held for the run)
    and rewritten where there (read-only); afterwards the host shows none of them made
    and the existing one unchanged."""
    from supervisor.runs_as_you import AGENT_SETTINGS

    claude = sandbox.project / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text('{"permissions": {}}\n')
    # OpenCode used by this person (its settings folder in home): its names without a dot
    # are held too (where it is not found, test_unseen_placeholders shows they are not).
    (sandbox.home / ".config" / "opencode").mkdir(parents=True, exist_ok=True)
    sandbox.chown()
    expected: dict[tuple[str, ...], int | str] = {
        ("write", ".claude/settings.json",
         '{"hooks": {"SessionStart": [{"hooks": [{"type": "command", '
         '"command": "touch PWNED"}]}]}}'): EROFS,
        ("write", ".claude/settings.local.json", "{}"): EROFS,
    }
    for setting in AGENT_SETTINGS:
        if "*" in setting.name or "/" in setting.name or setting.name == ".claude" or \
                not setting.hold:  # held below the top, or only when there: their own tests
            continue
        if setting.kind == "folder":
            expected[("mkdir", setting.name)] = EEXIST  # held: the placeholder is there
            expected[("write", f"{setting.name}/config.toml", "[mcp_servers.x]\n")] = EROFS
        else:  # held by an empty folder: in no `git status`
            expected[("write", setting.name, '{"mcpServers": {"x": {}}}')] = errno.EISDIR
    attack(sandbox, expected)
    assert (claude / "settings.json").read_text() == '{"permissions": {}}\n'
    left = sandbox.listing()
    assert left == [".claude"], left  # every placeholder went with the run, or lingers
    assert all(not p.name.startswith("opencode") and p.name not in (".env", ".mcp.json")
               for p in sandbox.lingering())  # what stands for a file never lingers


def test_a_workspace_file_at_the_top_cannot_be_rewritten(sandbox: Sandbox) -> None:
    workspace = sandbox.project / "team.code-workspace"
    workspace.write_text('{"folders": [{"path": "."}]}\n')
    sandbox.chown()
    attack(sandbox, {("write", "team.code-workspace", '{"tasks": {}}'): EROFS,
                     ("write", "other.code-workspace", "{}"): OK})  # a new one: opened by choice
    assert workspace.read_text() == '{"folders": [{"path": "."}]}\n'


# -- home's own places -------------------------------------------------------------------------

@pytest.mark.parametrize("grant", ["~/.config", "~/.local/bin", "~/.ssh", "~/.config/git",
                                   "~/.claude", "~/bin-on-path"])
def test_a_write_grant_of_what_runs_as_you_is_refused(sandbox: Sandbox, grant: str) -> None:
    folder = sandbox.home / grant.removeprefix("~/")
    folder.mkdir(parents=True)
    sandbox.chown()
    path = f"{sandbox.home}/bin-on-path:/usr/bin:/bin"
    done = sandbox.run("/bin/true", spec=f'[files]\nwrite = ["{grant}"]\n',
                       env={"PATH": path})
    assert done.returncode == 125, done
    assert "could change what runs as you" in done.stderr
    assert "files.write[0]" in done.stderr  # the key, with the file and line


def test_a_narrower_folder_in_home_is_granted(sandbox: Sandbox) -> None:
    (sandbox.home / ".config" / "mytool").mkdir(parents=True)
    sandbox.chown()
    done = sandbox.run("/bin/sh", "-c", "echo STARTED; echo x > ~/.config/mytool/state",
                       spec='[files]\nwrite = ["~/.config/mytool"]\n')
    assert done.returncode == 0, done.stderr


def test_places_inside_a_write_grant_in_home_stay_read_only(sandbox: Sandbox) -> None:
    """~/.gradle is granted (its caches), its init scripts run in every build: held."""
    gradle = sandbox.home / ".gradle"
    gradle.mkdir()
    (gradle / "gradle.properties").write_text("org.gradle.daemon=false\n")
    sandbox.chown()
    attack(sandbox, {
        ("mkdir", "caches"): OK,
        ("mkdir", "init.d"): EEXIST,
        ("write", "init.d/evil.gradle", "exec 'touch PWNED'"): EROFS,
        ("append", "gradle.properties", "\norg.gradle.jvmargs=-javaagent:/x\n"): EROFS,
    }, spec='[files]\nwrite = ["~/.gradle"]\n', cwd=gradle)
    assert not (gradle / "init.d").exists()
    assert (gradle / "gradle.properties").read_text() == "org.gradle.daemon=false\n"


@pytest.mark.parametrize("where", [".ssh", ".aws", ".config/gh", ".config/git"])
def test_the_default_spec_refuses_a_working_directory_that_runs_as_you(
        sandbox: Sandbox, where: str) -> None:
    folder = sandbox.home / where
    folder.mkdir(parents=True)
    sandbox.chown()
    done = sandbox.run("/bin/sh", "-c", "echo key >> authorized_keys", cwd=folder)
    assert done.returncode == 125, done
    assert not (folder / "authorized_keys").exists()


# -- credentials -------------------------------------------------------------------------------

CREDENTIAL_FILES = {
    ".config/gh/hosts.yml": "github.com:\n    oauth_token: gho_secret\n",
    ".npmrc": "//registry.npmjs.org/:_authToken=npm_secret\n",
    ".pypirc": "[pypi]\npassword = pypi-secret\n",
    ".cargo/credentials.toml": '[registry]\ntoken = "cargo-secret"\n',
    ".codex/auth.json": '{"OPENAI_API_KEY": "sk-secret"}\n',
    ".config/git/credentials": "https://u:secret@example.com\n",
    ".pgpass": "db:5432:*:u:secret\n",
    ".vault-token": "hvs.secret\n",
    ".bash_history": "export TOKEN=secret\n",
    ".mozilla/firefox/profiles.ini": "[Profile0]\n",
    ".password-store/x.gpg": "secret\n",
}


def test_credentials_under_a_read_grant_of_home_are_hidden(sandbox: Sandbox) -> None:
    """read = ["~"], the README's own example: no token of the common tools is read, and
    a spec naming one gets it, which check says."""
    for name, text in CREDENTIAL_FILES.items():
        path = sandbox.home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    sandbox.chown()
    spec = '[files]\nread = ["~"]\nwrite = ["."]\n'
    reader = ("import os, sys\nprint('STARTED', flush=True)\n"
              "for path in sys.argv[1:]:\n"
              "    try:\n        data = open(path).read()\n"
              "    except OSError as err:\n        data = f'errno {err.errno}'\n"
              "    print(path, 'SECRET' if 'secret' in data else 'nothing')\n")
    paths = [str(sandbox.home / n) for n in CREDENTIAL_FILES]
    done = sandbox.run(PYTHON_INSIDE, "-c", reader, *paths, spec=spec)
    lines = done.stdout.splitlines()
    assert lines[0] == "STARTED", done
    # A hidden folder is an empty one, a hidden file an empty one: nothing is read.
    assert lines[1:] == [f"{path} nothing" for path in paths], done.stdout
    named = spec.replace('["~"]', '["~", "~/.npmrc"]')
    done = sandbox.run(PYTHON_INSIDE, "-c", reader, str(sandbox.home / ".npmrc"), spec=named)
    assert done.stdout.splitlines()[1:] == [f"{sandbox.home / '.npmrc'} SECRET"]
    check = sandbox.lnk("check", spec=named)
    assert "~/.npmrc: files.read[1] (~/.npmrc) names it" in check.stdout


def test_an_agent_socket_under_home_is_not_reached(sandbox: Sandbox) -> None:
    agent = sandbox.home / ".1password"
    agent.mkdir()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(agent / "agent.sock"))
    server.listen(1)
    try:
        sandbox.chown()
        sandbox.probe("stat", str(agent / "agent.sock"),
                      spec='[files]\nread = ["~"]\nwrite = ["."]\n').expect(errno.ENOENT)
    finally:
        server.close()


# -- the report file ----------------------------------------------------------------------------

def test_a_link_planted_at_the_report_path_is_not_followed(sandbox: Sandbox) -> None:
    """A first run plants a link where the next run's report goes, at a file of the
    person's that runs at login: the next run refuses the report, the file unchanged.
    The next run only reads the folder: a report in a folder it writes is refused before
    (test_everyday_refusals), so this is the open's own refusal of the link."""
    bashrc = sandbox.home / ".bashrc"
    bashrc.write_text("# the person's\n")
    sandbox.chown()
    first = sandbox.run("/bin/ln", "-s", str(bashrc), "report.jsonl")
    assert first.returncode == 0, first.stderr
    done = sandbox.lnk("run", "--report", "report.jsonl", "--", "/bin/true", spec=READS)
    assert done.returncode == 125
    assert "report.jsonl is a link" in done.stderr
    assert bashrc.read_text() == "# the person's\n"
    folder_link = sandbox.run("/bin/sh", "-c", f"mkdir real; ln -s {sandbox.home} logs")
    assert folder_link.returncode == 0
    done = sandbox.lnk("run", "--report", "logs/.bashrc", "--", "/bin/true", spec=READS)
    assert done.returncode == 125 and "logs is a link" in done.stderr
    assert bashrc.read_text() == "# the person's\n"


@pytest.mark.parametrize("plant", ["fifo", "device-link"])
def test_a_planted_index_neither_hangs_nor_is_followed(sandbox: Sandbox, plant: str) -> None:
    """Under files.commit the index is writable: a pipe or a link to a device there is
    read by the supervisor (for the submodules it lists) after the run and at the next
    start, as the person or as root. Neither blocks, nor opens the device."""
    make_repository(sandbox)
    make = ("rm .git/index && mkfifo .git/index" if plant == "fifo" else
            "rm .git/index && ln -s /dev/zero .git/index")
    first = sandbox.run("/bin/sh", "-c", f"echo STARTED; {make}", spec=COMMIT, timeout=30)
    assert first.returncode == 0 and first.stdout.startswith("STARTED"), first
    second = sandbox.run("/bin/echo", "NEXT", spec=COMMIT, timeout=30)
    assert second.returncode == 0 and second.stdout == "NEXT\n", second


def test_the_folder_lnk_sandbox_is_imported_from_is_read_only(sandbox: Sandbox) -> None:
    """The folder Python imports lnk-sandbox from (the venv's site-packages for a wheel,
    as CI installs it; the checkout for an editable install) is on sys.path, where a
    `sitecustomize.py` or a module an extra needs would run at the person's next `lnk`:
    kept read-only inside a write grant holding it, as the packages in it are (found by a
    red team: with PYTHONPATH, a planted sitecustomize.py ran). Its other files are read
    as they are (the package's own, there in both layouts)."""
    import errno

    import supervisor

    root = Path(supervisor.__file__).resolve().parent.parent
    spec = f'[files]\nwrite = ["{root}"]\n'
    planted = root / "sitecustomize.py"
    if root.stat().st_uid != sandbox.who.uid and not sandbox.who.is_root:
        done = sandbox.probe("write", str(planted), spec=spec)
        assert (done.code, done.started) == (125, False)
        assert "cannot write" in done.stderr and "Traceback" not in done.stderr
        assert not planted.exists()
        return
    try:
        sandbox.probe("write", str(planted), spec=spec).expect(errno.EROFS)
    finally:
        planted.unlink(missing_ok=True)
    assert not planted.exists()
    sandbox.probe("read", str(root / "supervisor" / "__init__.py"), spec=spec).expect(0)


def test_a_folder_between_two_written_folders_cannot_be_moved_away(sandbox: Sandbox) -> None:
    """write = ["./src", "./src/team/proj"], proj a repository: moving src/team away
    would carry proj's mount with it, and a repository planted at src/team/proj would
    run its settings at the person's next `git status` there (found by a red team, as
    the user and as root). The folders between are mount points now (EBUSY); the rest
    of src is written as before."""
    import errno

    proj = sandbox.project / "src" / "team" / "proj"
    proj.mkdir(parents=True)
    make_repository(sandbox, proj)
    sandbox.chown()
    spec = '[files]\nread = ["."]\nwrite = ["./src", "./src/team/proj"]\n'
    src = sandbox.project / "src"
    sandbox.probe("rename", str(src / "team"), str(src / "team.moved"),
                  spec=spec).expect(errno.EBUSY)
    sandbox.probe("write", str(src / "team" / "notes.txt"), spec=spec).expect(0)
    assert (proj / ".git").is_dir() and not (src / "team.moved").exists()
