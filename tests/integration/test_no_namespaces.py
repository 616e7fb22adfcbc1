"""The run without namespaces (linux/direct.py), forced here with LNK_NAMESPACES=off, as
root and as the test user, with each inner confiner (the compiled one and its Python
fallback: both read the same record and apply step 0, Landlock's switches and the
network rights): each promise held by the kernel (the probe started inside first, then
watched failing with the exact errno), or refused at launch with its key.
tests/integration/test_container.py runs the same in a real unprivileged container."""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from support.capabilities import userns_problem
from support.processes import alive, wait_gone
from support.sandbox import LNK, Sandbox

pytestmark = [pytest.mark.requires_landlock(abi=6), pytest.mark.requires_seccomp_notify,
              pytest.mark.usefixtures("inner")]
OFF = {"LNK_NAMESPACES": "off"}
WRITE_TOP = '[files]\nwrite = ["."]\nwrite_dot_files = ["."]\n'


def git(box: Sandbox, *args: str) -> subprocess.CompletedProcess[str]:
    """The person's git, run outside as the sandbox's user."""
    return subprocess.run([*box.who.prefix, "git", "-C", str(box.project), *args],
                          capture_output=True, text=True, env=box.env())


def test_the_default_spec_runs_and_says_the_mode(sandbox: Sandbox) -> None:
    done = sandbox.run("sh", "-c", "echo hi", env=OFF)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hi\n"
    assert "lnk-sandbox: LNK_NAMESPACES=off: this sandbox runs without namespaces" \
        in done.stderr
    assert "nothing new can be made at the top of . in this mode" in done.stderr


def test_the_inner_chosen_runs_without_namespaces(sandbox: Sandbox, inner: str) -> None:
    """The process the supervisor starts becomes the target, and keeps its count of
    minor page faults across the exec: the Python inner's interpreter and imports make
    about 1500 before it, the static inner a few dozen (test_inner.py says the same of
    a run with bwrap)."""
    done = sandbox.run("/bin/cat", "/proc/self/stat", env=OFF)
    assert done.returncode == 0, done.stderr
    faults = int(done.stdout.rsplit(")", 1)[1].split()[7])  # minflt, the 10th field
    assert (faults < 600) == (inner == "compiled"), faults


def test_the_question_asked_says_what_holds(sandbox: Sandbox) -> None:
    """describe (the question a person is asked, and its JSON, schema 5) lists what
    holds without namespaces where the run would have none, and nothing where it has
    them: the doors ask the OS's backend (api.description_of)."""
    spec = '[files]\nwrite = ["."]\n'
    off = json.loads(sandbox.lnk("describe", "--json", spec=spec, env=OFF).stdout)
    assert off["version"] == 5 and "home_configuration" in off and "unwalked" in off
    assert any(line.startswith("narrower: nothing new can be made at the top of ")
               for line in off["namespaces"]), off["namespaces"]
    text = sandbox.lnk("describe", spec=spec, env=OFF).stdout
    assert "without namespaces (none can be made here, or LNK_NAMESPACES=off):" in text
    if userns_problem() is None:  # the control: with namespaces, nothing of the mode
        assert json.loads(sandbox.lnk("describe", "--json", spec=spec).stdout)[
            "namespaces"] is None
        assert "without namespaces" not in sandbox.lnk("describe", spec=spec).stdout


def test_the_exit_status_is_the_commands(sandbox: Sandbox) -> None:
    assert sandbox.run("sh", "-c", "exit 3", env=OFF).returncode == 3
    assert sandbox.run("sh", "-c", "kill -TERM $$", env=OFF).returncode == 128 + 15
    assert sandbox.run("no-such-program-here", env=OFF).returncode == 127


def test_every_capability_is_gone(sandbox: Sandbox) -> None:
    result = sandbox.probe("caps", env=OFF).expect(0)
    fields = dict(line.split(":\t", 1) for line in result.stdout.splitlines() if ":\t" in line)
    for name in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert int(fields[name], 16) == 0, fields
    if sandbox.who.is_root:
        assert int(fields["CapBnd"], 16) == 0, fields  # it held CAP_SETPCAP to drop them
    assert fields["NoNewPrivs"].strip() == "1"


def test_a_file_outside_the_grants_is_not_read(sandbox: Sandbox) -> None:
    secret = sandbox.home / "secret.txt"
    secret.write_text("not for the sandbox\n")
    sandbox.chown()
    sandbox.probe("read", str(sandbox.project / "missing"), env=OFF).expect(errno.ENOENT)
    sandbox.probe("read", str(secret), env=OFF).expect(errno.EACCES)


def test_a_protected_dot_file_is_not_written_and_nothing_is_made_at_the_top(
        sandbox: Sandbox) -> None:
    assert git(sandbox, "init", "-q").returncode == 0
    sandbox.chown()
    config = sandbox.project / ".git" / "config"
    before = config.read_text()
    sandbox.probe("write", str(config), env=OFF).expect(errno.EACCES)
    sandbox.probe("write", str(sandbox.project / ".envrc"), env=OFF).expect(errno.EACCES)
    sandbox.probe("mkdir", str(sandbox.project / ".vscode"), env=OFF).expect(errno.EACCES)
    sandbox.probe("rename", str(sandbox.project / ".git"), str(sandbox.project / "g"),
                  env=OFF).expect(errno.EACCES)
    # What is below the top is the grant's: made, written, removed.
    (sandbox.project / "src").mkdir()
    sandbox.chown()
    sandbox.probe("write", str(sandbox.project / "src" / "a.c"), env=OFF).expect(0)
    sandbox.probe("mkdir", str(sandbox.project / "src" / "deep"), env=OFF).expect(0)
    assert config.read_text() == before
    assert git(sandbox, "config", "--list", "--local").returncode == 0  # git reads it
    assert not (sandbox.project / ".envrc").exists()
    assert not (sandbox.project / ".vscode").exists()


def test_write_dot_files_opens_the_top(sandbox: Sandbox) -> None:
    spec = '[files]\nwrite = ["."]\nwrite_dot_files = ["."]\n'
    sandbox.probe("write", str(sandbox.project / "new.txt"), spec=spec, env=OFF).expect(0)
    assert (sandbox.project / "new.txt").exists()


def test_a_hidden_folder_inside_a_read_grant(sandbox: Sandbox) -> None:
    ssh = sandbox.home / ".ssh"
    ssh.mkdir()
    (ssh / "id_ed25519").write_text("PRIVATE\n")
    (sandbox.home / "notes.txt").write_text("mine\n")
    sandbox.chown()
    spec = '[files]\nread = ["~"]\nwrite = ["."]\n'
    sandbox.probe("read", str(sandbox.home / "notes.txt"), spec=spec, env=OFF).expect(0)
    sandbox.probe("read", str(ssh / "id_ed25519"), spec=spec, env=OFF).expect(errno.EACCES)
    sandbox.probe("list", str(ssh), spec=spec, env=OFF).expect(errno.EACCES)
    # Home itself cannot be listed: READ_DIR would be inherited by .ssh.
    sandbox.probe("list", str(sandbox.home), spec=spec, env=OFF).expect(errno.EACCES)
    sandbox.probe("read", str(sandbox.home / ".lnk" / "cache" / "checks.json"), spec=spec,
                  env=OFF).expect(errno.EACCES)


def test_network_none_makes_no_socket(sandbox: Sandbox) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = str(server.getsockname()[1])
        # The control: with the host's network the same probe connects.
        sandbox.probe("connect", "127.0.0.1", port, spec='[network]\nmode = "host"\n',
                      env=OFF).expect(0)
        sandbox.probe("connect", "127.0.0.1", port, env=OFF).expect(errno.EACCES)


def test_no_unix_socket_is_made_below_abi_9(sandbox: Sandbox) -> None:
    path = sandbox.base / "listening.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        os.chmod(path, 0o777)
        server.listen()
        outside = subprocess.run([*sandbox.who.prefix, "/usr/bin/python3", "-c",
                                  "import socket,sys; socket.socket(socket.AF_UNIX)"
                                  ".connect(sys.argv[1])", str(path)], capture_output=True)
        assert outside.returncode == 0, outside.stderr  # the control: it can be reached
        sandbox.probe("connect-unix", str(path), env=OFF).expect(errno.EACCES)
        sandbox.probe("abstract", "lnk-test-none", env=OFF).expect(errno.EACCES)


def test_other_processes_are_not_reached(sandbox: Sandbox) -> None:
    other = subprocess.Popen([*sandbox.who.prefix, "sleep", "60"])
    try:
        # setpriv (root) becomes the user's sleep only at its exec: wait for it.
        end = time.monotonic() + 10
        while Path(f"/proc/{other.pid}/comm").read_text().strip() != "sleep" \
                and time.monotonic() < end:
            time.sleep(0.01)
        # The control: its environment is readable to its user outside.
        outside = subprocess.run([*sandbox.who.prefix, "cat", f"/proc/{other.pid}/environ"],
                                 capture_output=True)
        assert outside.returncode == 0
        sandbox.probe("read", f"/proc/{other.pid}/environ", env=OFF).expect(errno.EACCES)
        sandbox.probe("read", f"/proc/{other.pid}/cmdline", env=OFF).expect(0)  # seen
        # kill(pid, SIGTERM): Landlock's signal scope.
        killed = sandbox.probe("syscall", "62", str(other.pid), "15", env=OFF)
        assert "RESULT errno=1" in killed.expect(errno.EPERM).stdout
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_system_v_ipc_is_refused(sandbox: Sandbox) -> None:
    # shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600)
    sandbox.probe("syscall", "29", "0", "4096", str(0o1000 | 0o600), env=OFF).expect(
        errno.ENOSYS)


@pytest.mark.requires_root
def test_root_is_held_to_what_an_unprivileged_user_reads_and_writes(
        root_sandbox: Sandbox) -> None:
    box = root_sandbox
    box.probe("read", "/etc/shadow", env=OFF).expect(errno.EACCES)
    # Written, it would be EINVAL: drop_caches takes 1, 2 or 3.
    box.probe("write", "/proc/sys/vm/drop_caches", env=OFF).expect(errno.EACCES)
    box.probe("write", "/etc/lnk-test-never", env=OFF).expect(errno.EACCES)
    assert not Path("/etc/lnk-test-never").exists()
    # A file another user owns, in a folder granted: only DAC_OVERRIDE would read it.
    private = box.project / "theirs.txt"
    private.write_text("someone else's\n")
    os.chown(private, 65534, 65534)
    private.chmod(0o600)
    assert private.read_text()  # the control: root reads it outside
    box.probe("read", str(private), env=OFF).expect(errno.EACCES)
    # chown needs CAP_CHOWN; mknod of a device CAP_MKNOD (root does both outside).
    (box.project / "sub").mkdir()
    done = box.run("sh", "-c", "chown 65534 sub; mknod sub/disk b 8 0", spec=WRITE_TOP,
                   env=OFF)
    assert "chown: changing ownership of 'sub': Operation not permitted" in done.stderr
    assert "mknod: sub/disk: Operation not permitted" in done.stderr
    assert not (box.project / "sub" / "disk").exists()
    assert (box.project / "sub").stat().st_uid == 0


def test_a_refused_promise_refuses_the_launch(sandbox: Sandbox) -> None:
    done = sandbox.run("true", spec='[network]\nmode = "proxy"\nallow = ["example.org"]\n',
                       env=OFF)
    assert done.returncode == 125
    assert "network.mode: proxy mode needs a network namespace" in done.stderr
    done = sandbox.run("true", spec='[files]\nwrite = ["."]\ncommit = ["."]\n', env=OFF)
    assert done.returncode == 125
    assert "files.commit: committing makes files at the top of .git" in done.stderr
    # check says it beforehand, as data: the key, its line, the fix (check --json).
    asked = sandbox.lnk("check", "--json", spec='[files]\nwrite = ["."]\ncommit = ["."]\n',
                        env=OFF)
    assert asked.returncode == 1, asked.stderr
    (problem,) = json.loads(asked.stdout)["problems"]
    assert (problem["key"], problem["line"]) == ("files.commit", 3)
    assert problem["file"].endswith(".toml")
    assert problem["message"].startswith("committing makes files at the top of .git")
    assert problem["message"].endswith("(this sandbox runs without namespaces)")
    assert problem["hint"].endswith("or remove files.commit")


def test_a_memory_limit_no_cgroup_holds_refuses_the_launch(sandbox: Sandbox) -> None:
    """As with bwrap: a memory limit the spec writes is held by a cgroup of the run's
    own (root makes one; a person, where their cgroup is delegated), or the launch is
    refused naming the key, never run without it. check says beforehand which it is;
    the control: the same command without the limit runs."""
    spec = '[limits]\nmemory = "256M"\n'
    asked = sandbox.lnk("check", "--json", spec=spec, env=OFF)
    held = "by a cgroup" in next(line for line in json.loads(asked.stdout)["layers"]
                                 if line.startswith("limit: memory"))
    done = sandbox.run("echo", "ran", spec=spec, env=OFF)
    if held:
        assert (done.returncode, done.stdout) == (0, "ran\n"), done.stderr
    else:
        assert (done.returncode, done.stdout) == (125, ""), done.stderr
        assert "limits.memory: the spec sets a memory limit, and no cgroup" in done.stderr
    assert sandbox.run("echo", "ran", env=OFF).stdout == "ran\n"


def test_a_program_list_holds(sandbox: Sandbox) -> None:
    spec = '[files]\nwrite = ["."]\n[commands]\nprograms = ["python3"]\n'
    done = sandbox.probe("exec", "/usr/bin/id", spec=spec, env=OFF)
    done.expect(errno.EACCES)
    assert "lnk-sandbox: refused /usr/bin/id (not in [commands])" in done.stderr


def test_tmp_is_a_private_folder_removed_after(sandbox: Sandbox) -> None:
    done = sandbox.run("sh", "-c", 'echo x > "$TMPDIR/f" && echo "$TMPDIR" && echo y > /tmp/'
                       'lnk-test-f', env=OFF)
    assert done.returncode == 2, done.stderr  # /tmp itself is not the sandbox's
    folder = Path(done.stdout.strip())
    assert folder.is_relative_to(sandbox.lnk_home)
    assert not folder.exists()
    assert not Path("/tmp/lnk-test-f").exists()


def test_nothing_the_sandbox_started_outlives_the_run(sandbox: Sandbox) -> None:
    script = ("setsid sh -c 'sleep 300 & echo $! > daemon.pid; wait' >/dev/null 2>&1 & "
              "sleep 0.5; cat daemon.pid")
    spec = '[files]\nwrite = ["."]\nwrite_dot_files = ["."]\n'
    done = sandbox.run("sh", "-c", script, spec=spec, env=OFF)
    assert done.returncode == 0, done.stderr
    daemon = int(done.stdout.split()[-1])
    assert not wait_gone({daemon}, timeout=5), "the sandbox's daemon outlived its run"


def test_a_killed_supervisor_takes_its_sandbox_with_it(sandbox: Sandbox) -> None:
    spec = '[files]\nwrite = ["."]\nwrite_dot_files = ["."]\n'
    run = subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run",
         "--spec", str(sandbox.write_spec(spec)), "--yes", "--", "sh", "-c",
         "sleep 300 & echo $! > child.pid; wait"],
        cwd=sandbox.project, env=sandbox.env(OFF), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    pid_file = sandbox.project / "child.pid"
    end = time.monotonic() + 20
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < end:
        time.sleep(0.05)
    child = int(pid_file.read_text())
    assert alive({child})
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert not wait_gone({child}, timeout=10), "the sandbox outlived its killed lnk-sandbox"


def test_a_cpu_limits_kill_is_said(sandbox: Sandbox) -> None:
    """As with bwrap (test_everyday_refusals): a busy loop killed by `[limits] cpu` is
    said, surely where the run's cgroup counts its CPU time (root's)."""
    spec = '[files]\nwrite = ["."]\n[limits]\ncpu = "1s"\n'
    done = sandbox.run("python3", "-c", "print('busy', flush=True)\nwhile True: pass",
                       spec=spec, env=OFF)
    assert (done.returncode, done.stdout) == (137, "busy\n"), done.stderr
    said = [line for line in done.stderr.splitlines() if "[limits] cpu" in line]
    counted = ("lnk-sandbox: the run reached its CPU time limit ([limits] cpu = 1 s of CPU "
               "time per process; `lnk sandbox describe` shows the limits)")
    if sandbox.who.is_root:
        assert said == [counted]
    else:
        assert len(said) == 1 and said[0] in (counted, (
            "lnk-sandbox: the command was killed (signal 9) with [limits] cpu = 1 s of CPU "
            "time per process set, which is how that limit ends a process (this machine "
            "gives lnk-sandbox no count of the run's CPU time to be sure)"))
    # The control: without the limit the same kind of kill says nothing of one.
    killed = sandbox.run("sh", "-c", "kill -9 $$", env=OFF)
    assert killed.returncode == 137
    assert "[limits] cpu" not in killed.stderr
