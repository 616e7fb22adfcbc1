"""Everyday use (issue 15), each as a newcomer's transcript of the real command: what was
typed, exactly what it printed, and its exit status; as root (root mode) and as the
unprivileged test user.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
import uuid
from pathlib import Path

import pytest

from support import capabilities as caps
from support.sandbox import LNK, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]


def transcript(done: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    """(status, stdout, stderr): what a person saw."""
    return done.returncode, done.stdout, done.stderr


def interleaved(stderr: str, line: str) -> str:
    """stderr without lnk-sandbox's `line`, which must be there once. The exec watch names
    a refusal while the kernel refuses it, so its line (written whole) may fall anywhere
    in the shell's own message, which the shell writes in pieces."""
    assert stderr.count(line) == 1, stderr
    return stderr.replace(line, "")


# -- /dev/shm: each sandbox's own ------------------------------------------------------------

POOL_AND_SHARED_MEMORY = """
import multiprocessing
from multiprocessing import shared_memory
with multiprocessing.Pool(2) as pool:
    print("pool:", pool.map(abs, [-1, -2, -3]))
made = shared_memory.SharedMemory(create=True, size=64)
made.buf[:5] = b"hello"
seen = shared_memory.SharedMemory(name=made.name)
print("shared memory:", bytes(seen.buf[:5]).decode())
seen.close()
made.close()
made.unlink()
"""


def test_multiprocessing_and_posix_shared_memory_work(sandbox: Sandbox) -> None:
    done = sandbox.run(PYTHON_INSIDE, "-c", POOL_AND_SHARED_MEMORY)
    assert transcript(done) == (0, "pool: [1, 2, 3]\nshared memory: hello\n", "")


@pytest.mark.requires_landlock
def test_shared_memory_works_under_a_program_list_and_runs_nothing(sandbox: Sandbox) -> None:
    spec = '[files]\nwrite = ["."]\n[commands]\nprograms = ["python3", "sh"]\n'
    done = sandbox.run(PYTHON_INSIDE, "-c", POOL_AND_SHARED_MEMORY, spec=spec)
    assert transcript(done) == (0, "pool: [1, 2, 3]\nshared memory: hello\n", "")
    # Written there, never run from there: a list holds /dev/shm as it holds /tmp.
    copy = "import shutil; shutil.copy('/usr/bin/true', '/dev/shm/t')"
    done = sandbox.run("sh", "-c", f'python3 -c "{copy}" && /dev/shm/t', spec=spec)
    assert (done.returncode, done.stdout) == (126, "")
    said = ("lnk-sandbox: refused /dev/shm/t (not in [commands]): built inside a folder the "
            "sandbox writes, so never listed by learn; run it outside or list it by path\n")
    assert interleaved(done.stderr, said) == "sh: 1: /dev/shm/t: Permission denied\n"


def test_dev_shm_is_the_sandboxs_own_and_sized(sandbox: Sandbox) -> None:
    host = Path("/dev/shm") / f"lnk-host-{uuid.uuid4().hex}"
    host.write_text("the host's")
    inside = f"lnk-inside-{uuid.uuid4().hex}"
    try:
        done = sandbox.run("sh", "-c", f"ls -A /dev/shm; echo made > /dev/shm/{inside}; "
                           "stat -f -c '%T' /dev/shm; stat -c '%a' /dev/shm")
        assert transcript(done) == (0, "tmpfs\n1777\n", "")
        assert not (Path("/dev/shm") / inside).exists()
    finally:
        host.unlink()
    from supervisor.limits import Limits, resolve

    done = sandbox.run("df", "-B1", "--output=size", "/dev/shm")
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == resolve(Limits()).shm  # the default
    done = sandbox.run("df", "-B1", "--output=size", "/dev/shm", spec='[limits]\nshm = "64M"\n')
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == 64 << 20  # as the spec asks


# -- a working directory the spec does not grant ---------------------------------------------


def test_a_working_directory_the_spec_does_not_grant_is_refused_naming_the_fix(
        sandbox: Sandbox) -> None:
    spec = '[network]\nmode = "none"\n'
    done = sandbox.lnk("run", "--", "pwd", spec=spec, cwd=sandbox.project)
    assert transcript(done) == (125, "", (
        f"lnk-sandbox: {sandbox.base}/spec.toml: key files: the working directory "
        f"{sandbox.project} is in no folder the spec grants, so the command would start "
        "elsewhere\n"
        '  hint: add "." to files.read (or files.write) to let the sandbox see it, or start '
        "lnk-sandbox in a folder the spec grants\n"))
    described = sandbox.lnk("describe", spec=spec, cwd=sandbox.project)
    assert described.stdout.splitlines()[1] == (
        f"working directory: {sandbox.project}    (the sandbox would not see it: a run from "
        "here is refused)")
    checked = sandbox.lnk("check", spec=spec, cwd=sandbox.project)
    assert checked.returncode == 1
    assert (f"  problem: {sandbox.base}/spec.toml: key files: the working directory "
            f"{sandbox.project} is in no folder") in checked.stdout
    # The fix the message names: the folder read-only, and the command starts there.
    done = sandbox.lnk("run", "--", "pwd", spec='[files]\nread = ["."]\n', cwd=sandbox.project)
    assert transcript(done) == (0, f"{sandbox.project}\n", "")
    # A system folder, or the root itself, is seen by every sandbox.
    assert transcript(sandbox.lnk("run", "--", "pwd", spec=spec, cwd=Path("/usr/share"))) \
        == (0, "/usr/share\n", "")
    assert transcript(sandbox.lnk("run", "--", "pwd", spec=spec, cwd=Path("/"))) == (0, "/\n", "")


def test_a_hidden_working_directory_is_refused(sandbox: Sandbox) -> None:
    secret = sandbox.project / "secret"
    secret.mkdir()
    sandbox.chown()
    spec = f'[files]\nwrite = ["{sandbox.project}"]\nhide = ["{secret}"]\n'
    done = sandbox.lnk("run", "--", "pwd", spec=spec, cwd=secret)
    assert transcript(done) == (125, "", (
        f"lnk-sandbox: {sandbox.base}/spec.toml:3: key files.hide[0]: the working directory "
        f"{secret} is hidden from the sandbox (files.hide[0]: {secret}), so the command would "
        "start elsewhere\n"
        "  hint: start lnk-sandbox in a folder the spec grants, or grant this one by its own "
        "path\n"))


# -- --report to a path it cannot open -------------------------------------------------------


def test_a_report_path_that_cannot_be_opened_is_a_clear_error(sandbox: Sandbox) -> None:
    missing = sandbox.base / "missing" / "report.jsonl"
    done = sandbox.lnk("run", "--report", str(missing), "--", "true")
    assert transcript(done) == (125, "", (
        f"lnk-sandbox: cannot write the report to {missing}: {sandbox.base}/missing cannot "
        "be opened: No such file or directory\n"
        "  hint: make the folder first, or name a file in a folder that exists\n"))
    done = sandbox.lnk("run", "--report", str(sandbox.base), "--", "true")
    assert transcript(done) == (125, "", (
        f"lnk-sandbox: cannot write the report to {sandbox.base}: it is a folder\n"
        "  hint: name a file, as in --report /tmp/report.jsonl\n"))
    done = sandbox.lnk("run", "--report", "", "--", "true")
    assert transcript(done) == (125, "", "lnk-sandbox: --report names no file\n"
                                "  hint: give it a path, as in --report /tmp/refusals.jsonl\n")
    if not sandbox.who.is_root:
        closed = sandbox.base / "closed"
        closed.mkdir(mode=0o700)  # root's: the test user may not write in it
        done = sandbox.lnk("run", "--report", f"{closed}/report.jsonl", "--", "true")
        assert transcript(done) == (125, "", (
            f"lnk-sandbox: cannot write the report to {closed}/report.jsonl: {closed}/"
            "report.jsonl: Permission denied\n"
            "  hint: name a file in a folder you may write, such as /tmp/report.jsonl\n"))


# -- learn: TOML that check accepts, apart from the command's output ----------------------

SCRIPT = "echo out\ngit --version >/dev/null\nprintf x | sed s/x/y/; echo"


def test_learns_table_is_valid_toml_on_stderr_even_for_a_command_of_several_lines(
        sandbox: Sandbox) -> None:
    spec = '[files]\nwrite = ["."]\n'
    done = sandbox.lnk("learn", "--", "sh", "-c", SCRIPT, spec=spec)
    assert transcript(done) == (0, "out\ny\n", (
        "# lnk sandbox learn: the programs `sh -c 'echo out\\ngit --version >/dev/null\\n"
        "printf x | sed s/x/y/; echo'` ran.\n"
        "# Put this [commands] table in the spec (in place of one it has):\n"
        "[commands]\n"
        "programs = [\n"
        '    "git",\n'
        '    "sed",\n'
        '    "sh",   # an interpreter: it runs any code it is given\n'
        "]\n"))
    learned = spec + done.stderr
    assert tomllib.loads(learned)["commands"]["programs"] == ["git", "sed", "sh"]
    checked = sandbox.lnk("check", spec=learned)
    assert checked.returncode == 0, checked.stdout
    assert "can launch here" in checked.stdout
    # ...and the list it wrote runs the command.
    assert transcript(sandbox.lnk("run", "--", "sh", "-c", SCRIPT, spec=learned)) == (
        0, "out\ny\n", "")


def test_learn_writes_its_table_to_the_file_named(sandbox: Sandbox) -> None:
    spec = '[files]\nwrite = ["."]\n'
    out = sandbox.base / "learned.toml"
    done = sandbox.lnk("learn", "--output", str(out), "--", "sh", "-c", "echo out", spec=spec)
    assert transcript(done) == (0, "out\n", "lnk-sandbox: the [commands] table for what ran "
                                f"is in {out}\n")
    assert tomllib.loads(out.read_text())["commands"]["programs"] == ["sh"]
    # Never through a link the sandbox could have planted where it writes.
    (sandbox.project / "planted.toml").symlink_to(sandbox.home / "victim")
    done = sandbox.lnk("learn", "--output", str(sandbox.project / "planted.toml"), "--",
                       "true", spec=spec)
    assert done.returncode == 125
    assert done.stderr.endswith(
        f"lnk-sandbox: cannot write what learn found to {sandbox.project}/planted.toml: "
        f"{sandbox.project}/planted.toml is a link (to {sandbox.home}/victim)\n"
        "  hint: lnk-sandbox follows no link on the way to a file it writes (a sandbox may "
        f"have planted it): name the file by its real path ({sandbox.home}/victim now), "
        "outside the folders sandboxes write, or remove what is there\n")
    assert not (sandbox.home / "victim").exists()



# -- messages ------------------------------------------------------------------------------


def test_a_url_in_allow_says_a_host_name_is_wanted_and_which(sandbox: Sandbox) -> None:
    spec = '[network]\nmode = "proxy"\nallow = ["https://packages.example.org/simple"]\n'
    done = sandbox.lnk("run", "--", "true", spec=spec)
    assert transcript(done) == (125, "", (
        f"lnk-sandbox: {sandbox.base}/spec.toml:3: key network.allow[0]: "
        "'https://packages.example.org/simple': is a URL, and a host name is wanted here: "
        "write 'packages.example.org' (the proxy decides on the host a connection is for, "
        "never on a path)\n"))


def test_one_path_where_a_list_is_wanted_hints_the_list(sandbox: Sandbox) -> None:
    done = sandbox.lnk("run", "--", "true", spec='[files]\nwrite = "."\n')
    assert transcript(done) == (125, "", (
        f"lnk-sandbox: {sandbox.base}/spec.toml:2: key files.write: must be a list of paths, "
        "not a string\n"
        '  hint: write a list, even of one: write = ["."]\n'))


def test_a_script_whose_interpreter_is_missing_is_named_so(sandbox: Sandbox) -> None:
    script = sandbox.project / "build.py"
    script.write_text("#!/usr/bin/python9\nprint('built')\n")
    script.chmod(0o755)
    sandbox.chown()
    done = sandbox.run("./build.py")
    assert transcript(done) == (126, "", "lnk-sandbox: cannot run ./build.py: its interpreter "
                                "/usr/bin/python9 (its #! line) is not found in the sandbox\n")
    assert transcript(sandbox.run("./missing.py")) == (
        127, "", "lnk-sandbox: cannot run ./missing.py: not found in the sandbox\n")


@pytest.mark.requires_landlock
@pytest.mark.requires_seccomp_notify
def test_a_listed_program_rebuilt_during_the_run_says_it_changed(sandbox: Sandbox) -> None:
    tool = sandbox.project / "tool"
    tool.write_bytes(Path("/usr/bin/true").read_bytes())
    tool.chmod(0o755)
    sandbox.chown()
    report = sandbox.base / "report.jsonl"
    spec = f'[files]\nwrite = ["."]\n[commands]\nprograms = ["sh", "cp", "mv", "{tool}"]\n'
    done = sandbox.lnk("run", "--report", str(report), "--", "sh", "-c",
                       "./tool && echo first; cp /usr/bin/true tool.new && mv tool.new tool "
                       "&& ./tool", spec=spec)
    why = ("listed in [commands], but changed since the sandbox started: the list holds the "
           "file that was there then, since one rebuilt or replaced during the run could hold "
           "anything the sandbox wrote")
    assert (done.returncode, done.stdout) == (126, "first\n")
    assert interleaved(done.stderr, f"lnk-sandbox: refused {tool} ({why})\n") \
        == "sh: 1: ./tool: Permission denied\n"
    (line,) = report.read_text().splitlines()
    assert {k: v for k, v in json.loads(line).items() if k not in ("pid", "time")} == {
        "kind": "program", "subject": "./tool", "resolved": str(tool),
        "rule": "commands.programs", "reason": why}


@pytest.mark.requires_landlock
@pytest.mark.requires_seccomp_notify
def test_one_refusal_is_one_report_line(sandbox: Sandbox) -> None:
    """sh tries each folder of PATH (/usr/bin/curl, then /bin/curl): one refusal."""
    report = sandbox.base / "report.jsonl"
    spec = '[files]\nwrite = ["."]\n[commands]\nprograms = ["sh"]\n'
    done = sandbox.lnk("run", "--report", str(report), "--", "sh", "-c", "curl; exit 0",
                       spec=spec, env={"PATH": "/usr/local/bin:/usr/bin:/bin"})
    assert done.returncode == 0
    # The two tries are judged by the watch's receivers while the kernel refuses them,
    # so either name of the one file may be the one said: once on stderr, once in the
    # report.
    (line,) = report.read_text().splitlines()
    assert json.loads(line)["subject"] in ("/usr/bin/curl", "/bin/curl")
    said = [name for name in ("/usr/bin/curl", "/bin/curl")
            if f"lnk-sandbox: refused {name} (not in [commands])\n" in done.stderr]
    assert len(said) == 1, done.stderr
    assert interleaved(done.stderr, f"lnk-sandbox: refused {said[0]} (not in [commands])\n") \
        == "sh: 1: curl: Permission denied\n"


ASK_AND_WAIT = """
import socket, sys
for name in ("refused.example.com", "refused.example.com"):  # asked twice: A and AAAA each
    try:
        socket.getaddrinfo(name, 443)
    except OSError:
        pass
print("ASKED", flush=True)
sys.stdin.readline()
"""


def test_a_network_refusal_names_the_real_pid(sandbox: Sandbox) -> None:
    report = sandbox.base / "report.jsonl"
    spec = sandbox.write_spec('[network]\nmode = "proxy"\nallow = ["example.org"]\n')
    marker = f"lnk-asker-{uuid.uuid4().hex}"
    process = subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--yes", "--spec", str(spec),
         "--report", str(report), "--", PYTHON_INSIDE, "-c", ASK_AND_WAIT, marker],
        cwd="/", env=sandbox.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "ASKED\n"
        (line,) = report.read_text().splitlines()
        pid = json.loads(line)["pid"]
        # The asker, still waiting: its own command line, in the sandbox's namespaces.
        assert marker in Path(f"/proc/{pid}/cmdline").read_text()
        assert os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
    finally:
        out, err = process.communicate("\n", timeout=30)
    assert (process.returncode, out) == (0, ""), err
    assert err == "lnk-sandbox: refused refused.example.com (not in [network] allow)\n"


# -- git ---------------------------------------------------------------------------------


def repository(sandbox: Sandbox) -> None:
    """The project as a repository with one commit, and a person's git settings in home:
    an identity, a program git would run (a pager), and a work identity for this folder."""
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(sandbox.project), "-c", "safe.directory=*",
                        "-c", "user.name=Setup",
                        "-c", "user.email=setup@example.org", *args], check=True,
                       capture_output=True)

    git("init", "-q", "-b", "main")
    (sandbox.project / "README").write_text("hello\n")
    git("add", "README")
    git("commit", "-qm", "first")
    (sandbox.home / ".gitconfig").write_text(
        "[user]\n\tname = Ann Example\n\temail = ann@example.org\n"
        "[core]\n\tpager = /bin/false-pager\n[alias]\n\tboom = !touch /tmp/boom\n"
        f'[includeIf "gitdir:{sandbox.project}/"]\n\tpath = ~/.gitconfig-work\n')
    (sandbox.home / ".gitconfig-work").write_text("[user]\n\temail = ann@work.example\n")
    sandbox.chown()


def test_git_add_in_a_read_only_repository_says_once_which_key_opens_committing(
        sandbox: Sandbox) -> None:
    repository(sandbox)
    (sandbox.project / "new").write_text("new\n")
    sandbox.chown()
    done = sandbox.run("sh", "-c", "git add new; git commit -qam again; git status --short")
    assert (done.returncode, done.stdout) == (0, "?? new\n")
    assert done.stderr == (
        f"fatal: Unable to create '{sandbox.project}/.git/index.lock': Read-only file system"
        "\n"
        f"fatal: Unable to create '{sandbox.project}/.git/index.lock': Read-only file system"
        "\n"
        f"lnk-sandbox: git add failed in {sandbox.project}: its .git is read-only in this "
        "sandbox, which reads the repository but does not commit. files.commit = [\".\"] in "
        "the spec lets it commit, with what git runs still read-only (README: Committing)\n")
    # Reading works, and says nothing.
    done = sandbox.run("sh", "-c", "git log --format=%s HEAD; git diff HEAD --stat")
    assert transcript(done) == (0, "first\n", "")


def test_git_inside_commits_as_the_person_and_runs_none_of_their_settings(
        sandbox: Sandbox) -> None:
    repository(sandbox)
    before = (sandbox.home / ".gitconfig").read_text()
    spec = '[files]\nwrite = ["."]\ncommit = ["."]\n'
    done = sandbox.run("sh", "-c", "git config core.pager; git config alias.boom; "
                       "git config --global user.name; git config user.email", spec=spec)
    # Their name, and the work email their includeIf names for this folder; no program.
    assert transcript(done) == (0, "Ann Example\nann@work.example\n", "")
    (sandbox.project / "new").write_text("new\n")
    sandbox.chown()
    done = sandbox.run("sh", "-c", "git add -A && git commit -qm 'from the sandbox' && "
                       "git log -1 --format='%an <%ae> %s' && git show --stat --format= HEAD",
                       spec=spec)
    assert transcript(done) == (0, "Ann Example <ann@work.example> from the sandbox\n"
                                " new | 1 +\n 1 file changed, 1 insertion(+)\n", "")
    assert (sandbox.home / ".gitconfig").read_text() == before
    described = sandbox.lnk("describe", spec=spec).stdout
    assert ("git identity: Ann Example <ann@example.org>; <ann@work.example> where includeIf "
            f"'gitdir:{sandbox.project}/' (your user.name and user.email, and nothing else "
            "of your git settings)\n") in described
    # Where the sandbox reads the person's settings (named: under a read grant of home
    # its dot entries are hidden), git reads them there itself.
    done = sandbox.run("sh", "-c", 'echo "${GIT_CONFIG_GLOBAL-unset}"; git config core.pager',
                       spec='[files]\nread = ["~", "~/.gitconfig"]\nwrite = ["."]\n')
    assert transcript(done) == (0, "unset\n/bin/false-pager\n", "")
    # Reading home alone, git is given the identity of lnk-sandbox's own, and no program.
    done = sandbox.run("sh", "-c", "git config --global user.name; git config core.pager",
                       spec='[files]\nread = ["~"]\nwrite = ["."]\n')
    assert transcript(done) == (1, "Ann Example\n", "")


def test_placeholders_never_show_in_git_status_nor_in_a_commit(sandbox: Sandbox) -> None:
    repository(sandbox)
    spec = '[files]\nwrite = ["."]\ncommit = ["."]\n'
    done = sandbox.run("sh", "-c", "ls -A; git status --short; git add -A; "
                       "git commit -qm none; echo commit=$?", spec=spec)
    listed = done.stdout.splitlines()
    assert {".mcp.json", "refs", ".vscode"} <= set(listed)  # held for the run...
    assert listed[-1] == "commit=1"  # ...and nothing to commit: git sees none of them
    assert not any(line.startswith("??") for line in listed)
    assert (sandbox.project / ".git" / "info" / "exclude").read_text().count("lnk-sandbox") == 0


def test_git_gc_under_files_commit_says_nothing_and_packs(sandbox: Sandbox) -> None:
    """`git gc` under files.commit succeeded but printed "error: unable to update
    .git/info/refs: Read-only file system" (.git/info stays read-only: its exclude and
    attributes are settings). Not asked to update that dumb-HTTP list, it prints nothing,
    packs, and .git/info is untouched; the control: asked to, it meets the same wall."""
    repository(sandbox)
    for number in range(3):
        (sandbox.project / f"f{number}").write_text(f"{number}\n")
    sandbox.chown()
    spec = '[files]\nwrite = ["."]\ncommit = ["."]\n'
    done = sandbox.run("sh", "-c", "git add -A && git commit -qm three && git gc -q && "
                       "ls .git/objects/pack | grep -c 'pack$'", spec=spec)
    assert transcript(done) == (0, "1\n", "")
    assert not (sandbox.project / ".git" / "info" / "refs").exists()
    done = sandbox.run("git", "-c", "repack.updateServerInfo=true", "gc", "-q", spec=spec)
    assert done.returncode == 0
    assert "unable to update" in done.stderr and "Read-only file system" in done.stderr
    assert not (sandbox.project / ".git" / "info" / "refs").exists()


# -- private caches ---------------------------------------------------------------------

CACHES = '[files]\nread = ["~"]\nwrite = ["."]\ncaches = ["~/.npm", "~/.cache/pip"]\n'
USE_CACHES = ("ls -A ~/.npm ~/.cache/pip; echo run >> ~/.npm/runs; "
              "mkdir -p ~/.cache/pip/http && echo wheel > ~/.cache/pip/http/w")


def test_a_private_cache_is_kept_across_runs_and_the_persons_is_never_written(
        sandbox: Sandbox) -> None:
    own = sandbox.home / ".npm"
    own.mkdir()
    (own / "mine").write_text("the person's own cache\n")
    sandbox.chown()
    first = sandbox.run("sh", "-c", USE_CACHES, spec=CACHES)
    assert transcript(first) == (0, f"{sandbox.home}/.cache/pip:\n\n{sandbox.home}/.npm:\n",
                                 "")
    second = sandbox.run("sh", "-c", USE_CACHES + "; cat ~/.npm/runs", spec=CACHES)
    assert transcript(second) == (0, f"{sandbox.home}/.cache/pip:\nhttp\n\n{sandbox.home}/"
                                  ".npm:\nruns\nrun\nrun\n", "")
    # The person's own: as it was; ~/.cache, missing, was held for the runs and is gone.
    assert sorted(p.name for p in own.iterdir()) == ["mine"]
    assert (own / "mine").read_text() == "the person's own cache\n"
    assert not (sandbox.home / ".cache").exists()
    # Outside the cache, home stays read-only.
    done = sandbox.run("sh", "-c", "echo x > ~/.npm-other", spec=CACHES)
    assert done.returncode != 0 and "Read-only file system" in done.stderr
    described = sandbox.lnk("describe", spec=CACHES).stdout
    store = f"{sandbox.lnk_home}/caches/spec-"
    assert "private caches (lnk-sandbox's own, kept across runs; yours are not opened):\n" \
        f"  ~/.npm -> {store}" in described
    assert f"(files.caches[0]: seen at {sandbox.home}/.npm)" in described
    cleared = sandbox.lnk("cache", "clear", "--spec", str(sandbox.base / "spec.toml"))
    from supervisor.caches import scope

    store = f"{sandbox.lnk_home}/caches/{scope(str(sandbox.base / 'spec.toml'), None)}"
    assert transcript(cleared) == (0, f"emptied the caches of {sandbox.base}/spec.toml: 5 "
                                   f"files and folders removed from {store}\n", "")
    assert transcript(sandbox.run("sh", "-c", "ls -A ~/.npm", spec=CACHES)) == (0, "", "")


def test_caches_without_home_and_shared_by_an_agents_specs(sandbox: Sandbox) -> None:
    first = 'agent = "builder"\n[files]\nwrite = ["."]\ncaches = ["~/.cache/pip"]\n'
    second = 'agent = "builder"\n[files]\ncaches = ["~/.cache/pip"]\n'
    done = sandbox.run("sh", "-c", "echo kept > ~/.cache/pip/k", spec=first)
    assert transcript(done) == (0, "", "")
    done = sandbox.lnk("run", "--", "cat", f"{sandbox.home}/.cache/pip/k", spec=second,
                       cwd=Path("/"))
    assert transcript(done) == (0, "kept\n", "")
    assert not (sandbox.home / ".cache").exists()
    done = sandbox.lnk("cache", "clear", "--all")
    assert done.stdout == (f"emptied every spec's and agent's caches: 3 files and folders "
                           f"removed from {sandbox.lnk_home}/caches\n")


@pytest.mark.parametrize(("cache", "says"), [
    ("~/.config", "{home}/.config is ~/.config: every XDG program's settings, many of which "
                  "name programs to run; what a sandbox kept there would run in the next one"),
    ("~/.cargo", "{home}/.cargo holds ~/.cargo/bin: binaries cargo install and rustup put "
                 "there, on PATH once added; what a sandbox kept there would run in the next "
                 "one"),
    ("~/.claude/x", "{home}/.claude/x is inside ~/.claude: Claude Code's user settings "
                    "(hooks), skills, commands, agents, plugins and credentials; what a "
                    "sandbox kept there would run in the next one"),
    ("~/.gitconfig", "{home}/.gitconfig is ~/.gitconfig: git's global settings: hooksPath, "
                     "fsmonitor, filters, aliases, helpers; what a sandbox kept there would "
                     "run in the next one"),
])
def test_a_cache_is_never_a_place_that_runs_as_you(sandbox: Sandbox, cache: str,
                                                    says: str) -> None:
    done = sandbox.run("true", spec=f'[files]\nwrite = ["."]\ncaches = ["{cache}"]\n')
    assert transcript(done) == (125, "", (
        f"lnk-sandbox: {sandbox.base}/spec.toml:3: key files.caches[0]: '{cache}': "
        + says.format(home=sandbox.home) + "\n"
        "  hint: name the folder the tool keeps its downloads in, such as '~/.cache/NAME'\n"))


# -- Chromium, Electron, Playwright -------------------------------------------------------


def test_check_says_why_a_browsers_own_sandbox_fails_inside_and_the_safe_way(
        sandbox: Sandbox) -> None:
    from supervisor.check import NESTED_BROWSERS

    checked = sandbox.lnk("check")
    assert f"  layer: {NESTED_BROWSERS}\n" in checked.stdout
    # The reason it states: no user namespace can be made inside.
    done = sandbox.run("unshare", "--user", "true")
    assert transcript(done) == (1, "", "unshare: unshare failed: Operation not permitted\n")


PAGE = '<html><body><p id="x">hello from a page</p></body></html>\n'


def test_chromium_runs_inside_with_no_sandbox_and_says_why_without(sandbox: Sandbox) -> None:
    """A real browser (ci/setup.sh --test installs Debian's): its own sandbox cannot
    start inside; with --no-sandbox it renders a page."""
    if shutil.which("chromium") is None:
        caps.missing("Chromium is not installed here (ci/setup.sh --test: apt-get install "
                     "chromium)")
    (sandbox.project / "page.html").write_text(PAGE)
    sandbox.chown()
    browse = ["chromium", "--headless", "--user-data-dir=/tmp/profile", "--dump-dom",
              f"file://{sandbox.project}/page.html"]
    done = sandbox.run(*browse, timeout=120)
    assert (done.returncode, done.stdout) == (1, "")
    assert ("Running as root without --no-sandbox is not supported" if sandbox.who.is_root
            else "No usable sandbox!") in done.stderr
    done = sandbox.run(*browse[:1], "--no-sandbox", *browse[1:], timeout=120)
    assert (done.returncode, done.stdout) == (
        0, '<html><head></head><body><p id="x">hello from a page</p>\n</body></html>\n'), \
        done.stderr


# -- a working directory removed before the start ---------------------------------------------


@pytest.mark.parametrize("command", ["run", "describe"])
def test_a_deleted_working_directory_is_a_clear_error(sandbox: Sandbox, command: str) -> None:
    """A shell still in a folder removed meanwhile (getcwd answers ENOENT): 125 and a
    message, no traceback, nothing started."""
    script = ('mkdir gone && cd gone && rmdir ../gone && exec "$@"')
    argv = [LNK, "sandbox", command, *(["--", "/bin/echo", "RAN"] if command == "run" else [])]
    done = subprocess.run([*sandbox.who.prefix, "sh", "-c", script, "sh", *argv],
                          cwd=sandbox.project, env=sandbox.env(), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 125, done
    assert "RAN" not in done.stdout and "Traceback" not in done.stderr, done
    assert "working directory" in done.stderr, done.stderr
