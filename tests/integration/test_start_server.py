"""The start server (LNK_START_SERVER, opt-in) attacked on each point of its threat
model (docs/design.md, "The start server"), with real processes: it serves its own user
confined as itself and no one else, no sandbox reaches it, a stale one is never used,
killing it or its client mid-run leaves nothing, and what a run is handed (descriptors,
umask, status) is exactly what an in-process run gets.

Each attack has its control: the same hand-made request (support/start_request.py), sent
by the server's own user confined as it is, runs, and leaves the marker the refused one
must not leave.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.processes import descendants, wait_gone, wait_until
from support.sandbox import LNK, PROBE_SOURCE, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

REQUEST = Path(__file__).resolve().parent.parent / "support" / "start_request.py"
REQUIRED = {"LNK_START_SERVER": "required"}


def _server_pids(sandbox: Sandbox) -> set[int]:
    """The start servers of this sandbox's user and home (by their environment)."""
    found: dict[int, int] = {}
    home = f"HOME={sandbox.home}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if b"lnk-start-server" not in (entry / "cmdline").read_bytes():
                continue
            if home in (entry / "environ").read_bytes().split(b"\0"):
                stat = (entry / "stat").read_text()
                found[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
    return {pid for pid, parent in found.items() if parent not in found}  # not its runs


def _socket(sandbox: Sandbox, lnk_home: Path | None = None) -> Path:
    sockets = sorted(((lnk_home or sandbox.lnk_home) / "server").glob("*.sock"))
    assert len(sockets) == 1, sockets
    return sockets[0]


def _leftovers(sandbox: Sandbox, servers: set[int]) -> set[int]:
    """Processes of this sandbox's runs (its folder on their command line, or its home
    in their environment) but its servers."""
    base, home = str(sandbox.base).encode(), f"HOME={sandbox.home}".encode()
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in servers:
            continue
        try:
            if base in (entry / "cmdline").read_bytes() or \
                    home in (entry / "environ").read_bytes().split(b"\0"):
                found.add(int(entry.name))
        except OSError:
            continue
    return {pid for pid in found if wait_gone({pid}, timeout=0) == {pid}}


def _evil(sandbox: Sandbox) -> tuple[Path, list[str]]:
    """A marker outside the project, and the `lnk` argv a served run would need to write
    it: a spec of the attacker's granting its folder, allowed with --yes."""
    outside = sandbox.base / "outside"
    outside.mkdir()
    sandbox.chown(outside)
    spec = sandbox.write_spec(f'[files]\nwrite = [".", "{outside}"]\n', "evil.toml")
    marker = outside / "escaped"
    return marker, [LNK, "sandbox", "run", "--spec", str(spec), "--yes", "--",
                    "/bin/sh", "-c", f"echo escaped > {marker}"]


def _send(sandbox: Sandbox, socket_path: Path, argv: list[str], *, prefix: tuple[str, ...]
          | list[str] | None = None, proof: bool = True) -> str:
    command = [*(sandbox.who.prefix if prefix is None else prefix), sys.executable,
               str(REQUEST), str(socket_path), str(sandbox.project),
               *([] if proof else ["--no-proof"]), "--", *argv]
    done = subprocess.run(command, env=sandbox.env(), capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    return done.stdout + done.stderr


def _start(sandbox: Sandbox, *command: str, env: dict[str, str] | None = None
           ) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--", *command],
        cwd=sandbox.project, env=sandbox.env(env), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    assert process.stdout is not None and process.stderr is not None
    lines = [process.stdout.readline(), process.stdout.readline()]
    assert lines[0].startswith("STARTED") and lines[1] == "READY\n", (
        lines, process.stderr.read() if process.poll() is not None else "")
    return process


def _sleeper(code: int) -> tuple[str, ...]:
    return (PYTHON_INSIDE, "-c", PROBE_SOURCE, "sleep-handle", str(int(signal.SIGTERM)),
            str(code))


# -- what a run is handed ----------------------------------------------------------------


def _both_ways(sandbox: Sandbox, script: str, stdin: str) -> list[tuple[int, str, str]]:
    """`script` run in-process and served, with umask 027, the spec on descriptor 5
    (read by the run as /dev/fd/5) and `stdin`: (status, stdout, stderr) each."""
    spec = sandbox.write_spec('[files]\nwrite = ["."]\n', "fd.toml")
    outcomes = []
    for switch in ("0", "required"):
        done = subprocess.run(
            [*sandbox.who.prefix, "/bin/sh", "-c", f'umask 027; exec "$@" 5<"{spec}"', "sh",
             LNK, "sandbox", "run", "--spec", "/dev/fd/5", "--yes", "--", "/bin/sh", "-c",
             script],
            cwd=sandbox.project, env=sandbox.env({"LNK_START_SERVER": switch}),
            input=stdin, capture_output=True, text=True, timeout=60)
        outcomes.append((done.returncode, done.stdout, done.stderr))
    return outcomes


# The command's descriptors, each with what it is (a pipe's number left out: each run's
# are new); the listing's own is closed by the time each is read, so it is skipped.
FDS = ('import os, re; print([(n, re.sub(r"[[]\\d+[]]", "", os.readlink("/proc/self/fd/" + n)))'
       ' for n in sorted(os.listdir("/proc/self/fd"), key=int)'
       ' if os.path.exists("/proc/self/fd/" + n)])')


@pytest.mark.parametrize("script", [
    "cat; echo out; echo err >&2; umask; : > made; ls -l made | cut -c1-10; exit 7",
    "echo before; kill -TERM $$",
    "exec /no/such/program",
    # No descriptor of the server's or the run's reaches the command (lnk's spawn hands
    # bwrap only its own; the run's connection is also close-on-exec).
    pytest.param(f"exec {PYTHON_INSIDE} -c '{FDS}'", id="descriptors"),
])
def test_a_served_run_is_handed_exactly_what_an_in_process_run_is(
        sandbox: Sandbox, script: str) -> None:
    in_process, served = _both_ways(sandbox, script, "typed in\n")
    assert served == in_process
    assert _server_pids(sandbox), "no server served it"
    if script.endswith(f"'{FDS}'"):
        assert in_process[1] == "[('0', 'pipe:'), ('1', 'pipe:'), ('2', 'pipe:')]\n"
    if script.startswith("cat"):
        assert in_process[0] == 7
        assert in_process[1] == "typed in\nout\n0027\n-rw-r-----\n"


def test_a_served_usage_error_is_the_same_as_in_process(sandbox: Sandbox) -> None:
    runs = [sandbox.lnk("run", "--no-such-flag", "--", "true", env={"LNK_START_SERVER": s})
            for s in ("0", "required")]
    assert runs[0].returncode == runs[1].returncode == 125
    assert runs[0].stderr == runs[1].stderr and "--no-such-flag" in runs[0].stderr


# -- whom it serves ---------------------------------------------------------------------


@pytest.mark.requires_root
def test_another_users_connection_gets_no_run(sandbox: Sandbox) -> None:
    assert sandbox.run("true", env=REQUIRED).returncode == 0
    socket_path = _socket(sandbox)
    marker, argv = _evil(sandbox)
    if sandbox.who.is_root:  # the test user at root's server: its folder is root's, 0700
        from support import capabilities as caps

        answer = _send(sandbox, socket_path, argv, prefix=caps.as_test_user())
        assert "CONNECT errno=13" in answer, answer
    else:  # root, who passes the folder's mode, at the test user's server: SO_PEERCRED
        answer = _send(sandbox, socket_path, argv, prefix=())
        assert "ANSWER" not in answer and "CLOSED" in answer, answer
    assert not marker.exists()
    answer = _send(sandbox, socket_path, argv)  # the control: its own user
    assert "ANSWER status=0" in answer, answer
    assert marker.read_text() == "escaped\n"


@pytest.mark.parametrize("confined", [
    ["setpriv", "--no-new-privs"],
    ["unshare", "--user", "--map-current-user"],
    ["prlimit", "--nofile=256:256"],
], ids=["no_new_privs", "user-namespace", "lower-hard-limit"])
def test_a_process_of_the_same_user_confined_otherwise_gets_no_run(
        sandbox: Sandbox, confined: list[str]) -> None:
    assert sandbox.run("true", env=REQUIRED).returncode == 0
    servers = _server_pids(sandbox)
    socket_path = _socket(sandbox)
    marker, argv = _evil(sandbox)
    answer = _send(sandbox, socket_path, argv, prefix=[*sandbox.who.prefix, *confined])
    assert "ANSWER refused=it is confined otherwise" in answer, answer
    assert not marker.exists()
    assert _server_pids(sandbox) == servers  # it forked nothing, and lives on
    answer = _send(sandbox, socket_path, argv)
    assert "ANSWER status=0" in answer, answer
    assert marker.read_text() == "escaped\n"


def test_a_request_not_sent_by_the_process_that_connected_gets_no_run(
        sandbox: Sandbox) -> None:
    """The pidfd proof: without it (a relay's bytes), nothing runs."""
    assert sandbox.run("true", env=REQUIRED).returncode == 0
    marker, argv = _evil(sandbox)
    answer = _send(sandbox, _socket(sandbox), argv, proof=False)
    assert "ANSWER refused=the request is not sent by the process that connected" in answer
    assert not marker.exists()


@pytest.mark.requires_root
def test_a_sandbox_relayed_to_the_server_gets_no_run(sandbox: Sandbox) -> None:
    """Run by root, `[network] unix` sockets are relayed by the supervisor, whose
    credentials the server sees (socket_relay.py): the sandbox, given a server's socket
    of another $LNK_HOME, sends the request through a process confined as the server."""
    if not sandbox.who.is_root:
        pytest.skip("the relay is root mode's; a person's sandbox connects as itself")
    other = sandbox.base / "other-lnk"
    assert sandbox.run("true", env={**REQUIRED, "LNK_HOME": str(other)}).returncode == 0
    socket_path = _socket(sandbox, other)
    marker, argv = _evil(sandbox)
    inside = sandbox.project / "start_request.py"
    inside.write_text(REQUEST.read_text())
    spec = f'[files]\nwrite = ["."]\n[network]\nunix = ["{socket_path}"]\n'
    done = sandbox.run(PYTHON_INSIDE, str(inside), str(socket_path), str(sandbox.project),
                       "--", *argv, spec=spec)
    assert "ANSWER refused=the request is not sent by the process that connected" in \
        done.stdout, done.stdout + done.stderr
    assert not marker.exists()
    answer = _send(sandbox, socket_path, argv)  # the control: outside, as root
    assert "ANSWER status=0" in answer, answer
    assert marker.read_text() == "escaped\n"


def test_a_sandbox_never_sees_the_servers_socket(sandbox: Sandbox) -> None:
    assert sandbox.run("true", env=REQUIRED).returncode == 0
    socket_path = _socket(sandbox)
    sandbox.probe("connect-unix", str(socket_path), env=REQUIRED).expect(2)  # ENOENT
    sandbox.probe("stat", str(socket_path.parent), env=REQUIRED).expect(2)


# -- when it ends -----------------------------------------------------------------------


def test_a_stale_server_is_never_used(sandbox: Sandbox) -> None:
    assert sandbox.run("true", env=REQUIRED).returncode == 0
    first = _server_pids(sandbox)
    assert sandbox.run("true", env=REQUIRED).returncode == 0
    assert _server_pids(sandbox) == first, "the control: an unchanged server is reused"
    import supervisor

    added = Path(supervisor.__file__).parent / f"zz_start_{random.getrandbits(32):x}.py"
    added.write_text("")  # a module appears in the installation: an upgrade's first file
    try:
        done = sandbox.run("true", env=REQUIRED)
    finally:
        added.unlink()
    assert done.returncode == 0, done.stderr
    assert wait_gone(first) == set(), "the stale server lives on"
    assert _server_pids(sandbox) - first, "no new server served it"


def test_an_idle_server_ends_and_a_removed_socket_ends_it(sandbox: Sandbox) -> None:
    env = {**REQUIRED, "LNK_START_SERVER_IDLE": "1"}
    assert sandbox.run("true", env=env).returncode == 0
    assert wait_gone(_server_pids(sandbox), timeout=10) == set()
    assert sandbox.run("true", env=REQUIRED).returncode == 0
    servers = _server_pids(sandbox)
    _socket(sandbox).unlink()
    assert wait_gone(servers, timeout=10) == set()


def test_a_server_killed_mid_run_leaves_nothing(sandbox: Sandbox) -> None:
    process = _start(sandbox, *_sleeper(43), env=REQUIRED)
    servers = _server_pids(sandbox)
    assert len(servers) == 1
    tree = descendants(next(iter(servers)))
    assert len(tree) >= 4  # the run, bwrap, its pid 1, the target (and the keeper)
    assert descendants(process.pid) == set()  # served: nothing of it below the client
    os.kill(next(iter(servers)), signal.SIGKILL)
    assert wait_gone(servers) == set()
    process.send_signal(signal.SIGTERM)  # the run outlives its server, and is relayed
    process.communicate(timeout=30)
    assert process.returncode == 43
    assert wait_gone(tree) == set()
    assert _leftovers(sandbox, set()) == set()
    assert sandbox.run("true", env=REQUIRED).returncode == 0  # a new one, past the dead
    assert sandbox.listing() == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_the_client_reaches_the_commands_handler(sandbox: Sandbox,
                                                            sig: signal.Signals) -> None:
    process = _start(sandbox, PYTHON_INSIDE, "-c", PROBE_SOURCE, "sleep-handle",
                     str(int(sig)), "42", env=REQUIRED)
    (server,) = _server_pids(sandbox)
    tree = descendants(server)
    process.send_signal(sig)  # a Ctrl-C without a terminal: the harness's SIGINT
    process.communicate(timeout=30)
    assert process.returncode == 42
    assert wait_gone(tree) == set()
    assert _leftovers(sandbox, {server}) == set()


def _bwrap_below(pid: int) -> bool:
    for child in descendants(pid):
        try:
            if Path(f"/proc/{child}/comm").read_text().strip() == "bwrap":
                return True
        except OSError:
            continue
    return False


KILLS = int(os.environ.get("LNK_SERVER_KILLS", "60"))


def test_a_client_sigkilled_mid_run_leaves_nothing(sandbox: Sandbox) -> None:
    """As tests/attacks/test_faults.py kills an in-process lnk: a third at READY, a third
    0 to 4 ms after bwrap appears (before it asked for its parent-death signal), a third
    anywhere in the start; each kill's run (the forked run, bwrap, the command, the
    keeper) gone 2 seconds later, before any other start."""
    assert sandbox.run("true", env=REQUIRED).returncode == 0
    servers = _server_pids(sandbox)
    (server,) = servers
    rng = random.Random(29)
    left_by: list[tuple[int, set[int]]] = []
    for number in range(KILLS):
        process = subprocess.Popen(
            [*sandbox.who.prefix, LNK, "sandbox", "run", "--", *_sleeper(1)],
            cwd=sandbox.project, env=sandbox.env(REQUIRED), stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        assert process.stdout is not None
        if number % 3 == 0:
            process.stdout.readline()
            process.stdout.readline()
        elif number % 3 == 1:
            deadline = time.monotonic() + 5
            while not _bwrap_below(server) and time.monotonic() < deadline:
                time.sleep(0.0005)
            time.sleep(rng.uniform(0, 0.004))
        else:
            time.sleep(rng.uniform(0, 0.3))
        process.kill()
        process.communicate()
        wait_until(lambda: not _leftovers(sandbox, servers), timeout=2)
        if left := _leftovers(sandbox, servers):
            left_by.append((number, left))
            for pid in left:
                os.kill(pid, signal.SIGKILL)
    assert left_by == [], f"{len(left_by)} of {KILLS} kills left processes: {left_by}"
    assert _server_pids(sandbox) == servers  # the server itself lives on, untouched
    assert sandbox.run("true", env=REQUIRED).returncode == 0
    assert sandbox.listing() == []  # no placeholder left in the project
    assert list((sandbox.lnk_home / "runs").iterdir()) == []  # no run still listed


def test_the_server_is_off_unless_turned_on(sandbox: Sandbox) -> None:
    for env in ({}, {"LNK_START_SERVER": "0"}):
        process = _start(sandbox, *_sleeper(43), env=env)
        assert len(descendants(process.pid)) >= 3  # bwrap, its pid 1, the target: here
        process.send_signal(signal.SIGTERM)
        _, said = process.communicate(timeout=30)
        assert process.returncode == 43, said
        assert not (sandbox.lnk_home / "server").exists()
        assert _server_pids(sandbox) == set()
    process = _start(sandbox, *_sleeper(43), env={"LNK_START_SERVER": "1"})
    assert descendants(process.pid) == set()  # served by the server it started
    assert _server_pids(sandbox)
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=30)
    assert process.returncode == 43


def test_check_says_whether_it_runs(sandbox: Sandbox) -> None:
    assert "  start server        off (LNK_START_SERVER=1 turns it on)\n" in \
        sandbox.lnk("check").stdout
    on = {"LNK_START_SERVER": "1"}
    assert "none running: the next run starts one" in sandbox.lnk("check", env=on).stdout
    assert sandbox.run("true", env=on).returncode == 0
    (server,) = _server_pids(sandbox)
    shown = sandbox.lnk("check", env=on).stdout
    assert f"on (LNK_START_SERVER=1), running: pid {server}, since " in shown, shown
    assert sandbox.lnk("check", "--json", env=on).stdout.count(f"running: pid {server}") == 1


# -- the harness API --------------------------------------------------------------------

HARNESS = """
import anyio, lnk_sandbox, sys
async def main():
    done = await lnk_sandbox.run(["sh", "-c", "cat; echo err >&2; exit 3"], stdin=b"in")
    print(done.returncode, done.stdout, done.stderr, flush=True)
    with anyio.move_on_after(2):
        await lnk_sandbox.run(["sh", "-c", "trap '' TERM; sleep 300 & echo STARTED >&2; "
                               "while :; do sleep 1; done"], capture=False)
    print("CANCELLED", flush=True)
    await anyio.sleep(30)
anyio.run(main)
"""


def test_an_api_call_is_served_and_a_cancelled_one_leaves_nothing(sandbox: Sandbox) -> None:
    process = subprocess.Popen(
        [*sandbox.who.prefix, str(Path(LNK).parent / "python"), "-c", HARNESS],
        cwd=sandbox.project, env=sandbox.env(REQUIRED), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None and process.stdout is not None
        assert process.stdout.readline() == "3 b'in' b'err\\n'\n"
        assert process.stderr.readline() == "STARTED\n"
        servers = _server_pids(sandbox)
        assert len(servers) == 1  # the API's (python -I), this harness's only
        tree = descendants(next(iter(servers)))
        assert len(tree) >= 4, tree  # the run, bwrap, its pid 1, sh, sleep
        assert process.stdout.readline() == "CANCELLED\n"
        assert wait_gone(tree, timeout=5) == set()
        assert _server_pids(sandbox) == servers
    finally:
        process.kill()
        process.communicate()
