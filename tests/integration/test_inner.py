"""Both inner confiners, run directly: the compiled one (inner/confine.c) and its Python
fallback (inner/main.py), each given a configuration built from the supervisor's record
and watched doing each step for real, with the same outcome and the same bytes on the
status socket. No bwrap: the steps are the inner's own, and a test sees them from
outside (what the target could do, what arrived on the socket, the exit status). Step 0
and the Landlock switches are a run without namespaces' (supervisor/linux/direct.py),
where the supervisor starts the inner itself, as this test does.

The target is a shell or cat run by the inner after the go; Landlock rules give it the
system folders (read, run) and what each test grants.
"""

from __future__ import annotations

import array
import errno
import os
import resource
import shlex
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inner import landlock
from inner.config import Config, FileOp, Landlock, Rlimit, Seccomp, decode
from supervisor.installation import inner_source, interpreter
from supervisor.linux.bwrap import inner_boot
from supervisor.linux.confine import Layers, filters
from supervisor.linux.direct_rules import filter_rules
from supervisor.linux.elf import interpreter_of
from supervisor.linux.inner_program import compiled_path, compiled_problem
from support.capabilities import as_test_user, missing, test_user_problem
from support.processes import alive, wait_gone
from support.sandbox import Sandbox

pytestmark = pytest.mark.kernel_matrix

SUPPORT = Path(__file__).resolve().parents[1] / "support"
NO_LANDLOCK = [sys.executable, str(SUPPORT / "no_landlock.py")]
OTHER_LISTENER = [sys.executable, str(SUPPORT / "other_listener.py")]
READ = landlock.rights_mask(["read_file", "read_dir"])
RUN = READ | landlock.rights_mask(["execute"])
WRITE = landlock.rights_mask(["read_file", "read_dir", "write_file", "make_reg", "truncate"])
SYSTEM = [("/usr", RUN), ("/etc", READ), ("/proc", READ), ("/dev", READ | WRITE)]
PLAIN = filters(Layers(landlock_abi=0))  # the filter of a run without a program list
PROJECT = os.path.dirname(inner_source())


@pytest.fixture(params=["compiled", "python"])
def confiner(request: pytest.FixtureRequest) -> list[str]:
    """The command that starts each inner, as bwrap starts it but for the config fd."""
    if request.param == "compiled":
        path = compiled_path()
        if path is None:
            missing(f"the compiled inner cannot run: {compiled_problem()}")
        return [path]
    return [interpreter()[0], "-I", "-S", "-c", inner_boot(os.path.dirname(inner_source()))]


@dataclass
class Ran:
    """What one inner did: its exit status, each status message in order, the fds it
    handed over (by message kind), and its (the target's) output."""

    status: int
    messages: list[bytes]
    fds: dict[bytes, list[int]]
    stdout: str
    stderr: str
    closing: list[int] = field(default_factory=list)

    def close(self) -> None:
        for fds in self.fds.values():
            for fd in fds:
                os.close(fd)


def start(confiner: list[str], config: Config | None, *, raw: bytes | None = None,
          go: bool = True, wrapper: Sequence[str] = (), env: dict[str, str] | None = None,
          pass_fds: Sequence[int] = (), status_fd: int | None = None) -> Ran:
    """Run the inner on `config` (its status socket's fd filled in) or on `raw` bytes,
    through `wrapper` if any; answer its `W` with the go, or (`go` False) with closing
    the supervisor's end."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    data = raw if raw is not None else config.replace(  # type: ignore[union-attr]
        status_fd=child.fileno() if status_fd is None else status_fd).encode()
    memory = os.memfd_create("config", 0)
    os.write(memory, data)
    os.lseek(memory, 0, os.SEEK_SET)
    process = subprocess.Popen(
        [*wrapper, *confiner, str(memory)],
        pass_fds=(memory, child.fileno(), *pass_fds),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env if env is not None else {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    os.close(memory)
    child.close()
    messages: list[bytes] = []
    fds: dict[bytes, list[int]] = {}
    parent.settimeout(30)
    while True:
        message, ancillary, _, _ = parent.recvmsg(8192, socket.CMSG_SPACE(16))
        if not message:
            break
        messages.append(message)
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                received = array.array("i")
                received.frombytes(payload[:len(payload) - len(payload) % 4])
                fds.setdefault(message[:1], []).extend(received)
        if message == b"W":
            if not go:
                break
            parent.send(b"G")
    parent.close()
    stdout, stderr = process.communicate(timeout=30)
    return Ran(process.returncode, messages, fds, stdout, stderr)


def then_exec(code: str) -> list[str]:
    """A wrapper that runs `code`, then execs the rest of its arguments (the inner)."""
    return [sys.executable, "-S", "-c",
            f"import os, resource, signal, sys\n{code}\nos.execv(sys.argv[1], sys.argv[1:])"]


def confined(*argv: str, rules: Sequence[tuple[str, int]] = (), **rest: object) -> Config:
    """A run's configuration: the plain filter, Landlock on the system folders and
    `rules`, and `rest` (rlimits, watch_mounts...)."""
    table = Landlock(False, landlock.abi_table(), landlock.FILE_MASK, [*SYSTEM, *rules])
    base = Config(-1, argv, seccomp=PLAIN, landlock=table)
    return base.replace(**rest)


# -- the binary ---------------------------------------------------------------------


def test_the_compiled_inner_is_static_and_built_warning_free(tmp_path: Path) -> None:
    """Static: it runs where the sandbox shows no C library and no loader. The build's
    warnings are errors here, with more of them on than setup.py asks for."""
    path = compiled_path()
    if path is None:
        missing(f"the compiled inner cannot run: {compiled_problem()}")
    assert interpreter_of(path) is None
    source = os.path.join(inner_source(), "confine.c")
    built = subprocess.run(
        ["cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Wconversion",
         "-Werror", "-static", "-o", str(tmp_path / "confine"), source],
        capture_output=True, text=True)
    assert built.returncode == 0, built.stderr


def test_the_compiled_inner_is_built_from_this_source() -> None:
    """setup.py writes the source's digest into the program: an inner built from an
    older source (an editable install not built again) is found here, not in a run."""
    import hashlib

    path = compiled_path()
    if path is None:
        missing(f"the compiled inner cannot run: {compiled_problem()}")
    source = Path(inner_source(), "confine.c").read_bytes()
    marker = b"lnk-confine-source-sha256:" + hashlib.sha256(source).hexdigest().encode()
    assert marker in Path(path).read_bytes(), (
        f"{path} was built from another confine.c: install lnk-sandbox again "
        "(ci/setup.sh)")


@pytest.mark.requires_bwrap
@pytest.mark.requires_userns
def test_a_run_starts_the_inner_chosen(sandbox: Sandbox, inner: str) -> None:
    """What the `inner` fixture's two runs of the sandbox tests rest on. The process
    bwrap starts becomes the target, and keeps its count of minor page faults across the
    exec: the Python inner's interpreter and imports make about 1500 before it, the
    static inner a few dozen (cat's own start about 100). `plan` shows the same choice."""
    # With `/` granted the inner's package is bound under the sandbox's own /dev instead;
    # as the person only: run by root, a daemon's socket anywhere refuses that grant
    # (test_root_mode.py), which is the host's, not the inner's.
    whole_root = '[files]\nread = ["/"]\nwrite = ["."]\n'
    for spec in (None, *(() if sandbox.who.is_root else (whole_root,))):
        done = sandbox.run("/bin/cat", "/proc/self/stat", spec=spec)
        assert done.returncode == 0, done.stderr
        faults = int(done.stdout.rsplit(")", 1)[1].split()[7])  # minflt, the 10th field
        assert (faults < 600) == (inner == "compiled"), (spec, faults)
    plan = sandbox.lnk("plan", "--", "true").stdout
    compiled = "/run/lnk-sandbox/inner/confine FD\n" in plan
    assert compiled == (inner == "compiled"), plan.splitlines()[-3:]


@pytest.mark.requires_root
def test_on_a_noexec_file_system_the_python_inner_runs(tmp_path: Path) -> None:
    """The kernel would refuse to run it there (bwrap's exec: EACCES): judged by the
    mount's own flag, in a mount namespace of the test's own."""
    path = compiled_path()
    if path is None:
        missing(f"the compiled inner cannot run: {compiled_problem()}")
    folder = tmp_path / "noexec"
    folder.mkdir()
    judge = ("from supervisor.linux.inner_program import compiled_problem;"
             f"print(compiled_problem({str(folder)!r}))")
    script = (f"mount -t tmpfs -o noexec lnk-noexec {folder} && cp {path} {folder}/ && "
              f"{folder}/confine; echo exec=$?; {sys.executable} -c {shlex.quote(judge)}")
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           script], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == [
        "exec=126", f"{folder}/confine is on a file system mounted noexec"], done.stderr


# -- step 0: without namespaces, the parent and the capabilities ----------------------


def direct(*argv: str, **rest: object) -> Config:
    """A run without namespaces' configuration: step 0 naming this process, which
    starts the inner (subprocess forks from here, and a wrapper execs in its place), as
    the parent; the plain filter; and `rest`."""
    return Config(-1, argv, parent=os.getpid(), seccomp=PLAIN).replace(**rest)


@pytest.fixture(params=["root", "user"])
def runner(request: pytest.FixtureRequest) -> list[str]:
    """The wrapper the inner runs through: none (root, as the tests run), or the
    unprivileged test user's setpriv, which execs in its place (the parent stays)."""
    if os.geteuid() != 0:
        if request.param == "root":
            missing("the tests do not run as root")
        return []
    if request.param == "root":
        return []
    problem = test_user_problem()
    if problem is not None:
        missing(problem)
    return as_test_user()


# What the target reads of itself: its capability sets, no_new_privs, and (by prctl)
# its secure bits and parent-death signal, each a line.
SHOW_SELF = ["/usr/bin/python3", "-S", "-c", (
    "import ctypes\n"
    "for line in open('/proc/self/status'):\n"
    "    if line.startswith(('Cap', 'NoNewPrivs')): print(line.split()[0], line.split()[1])\n"
    "libc = ctypes.CDLL(None)\n"
    "signal = ctypes.c_int(-1)\n"
    "libc.prctl(2, ctypes.byref(signal), 0, 0, 0)\n"  # PR_GET_PDEATHSIG
    "print('securebits:', hex(libc.prctl(27, 0, 0, 0, 0)))\n"
    "print('pdeathsig:', signal.value)")]


def shown(ran: Ran) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in ran.stdout.splitlines())


def test_without_namespaces_every_capability_is_dropped(confiner: list[str],
                                                       runner: list[str]) -> None:
    """Step 0: no user namespace holds what root holds (a container's root keeps its
    runtime's capabilities), so the inner drops every set for good: effective,
    permitted, inheritable, ambient and, with CAP_SETPCAP, the bounding set, the secure
    bits locked so that no execve gives uid 0 any back; no_new_privs; SIGKILL when its
    parent ends. The control: the same target without step 0 keeps root's sets."""
    ran = start(confiner, direct(*SHOW_SELF), wrapper=runner)
    assert (ran.status, ran.messages) == (0, [b"W"]), ran.stderr
    got = shown(ran)
    zero = "0" * 16
    assert [got[f"{name}:"] for name in ("CapInh", "CapPrm", "CapEff", "CapAmb")] == [zero] * 4
    assert (got["NoNewPrivs:"], got["pdeathsig:"]) == ("1", "9")
    if not runner:  # root, with CAP_SETPCAP: the bounding set and the secure bits too
        assert (got["CapBnd:"], got["securebits:"]) == (zero, "0xef")
        control = start(confiner, Config(-1, SHOW_SELF, seccomp=PLAIN))
        assert control.status == 0, control.stderr
        assert shown(control)["CapEff:"] != zero and shown(control)["pdeathsig:"] == "0"
    else:  # nothing to drop but the bounding set, which needs CAP_SETPCAP: kept, inert
        assert got["securebits:"] == "0x0"


def test_without_its_parent_nothing_runs(confiner: list[str], tmp_path: Path) -> None:
    """Step 0 looks that the supervisor it names is its parent still: one gone before
    the parent-death signal was asked for would never send it. Exit 125, nothing said,
    nothing run."""
    marker = tmp_path / "ran"
    other = 1 if os.getpid() != 1 else 2
    ran = start(confiner, direct("touch", str(marker)).replace(parent=other))
    assert (ran.status, ran.messages) == (125, [])
    assert not marker.exists()
    ran = start(confiner, direct("touch", str(marker)))
    assert (ran.status, ran.messages) == (0, [b"W"]), ran.stderr
    assert marker.exists()


_PARENT = r"""
import os, socket, subprocess, sys
sys.path.insert(0, sys.argv[1])
from inner.config import Config
parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
config = Config(child.fileno(), ["sleep", "1000"],
                parent=os.getpid() if sys.argv[2] == "direct" else None)
memory = os.memfd_create("config", 0)
os.write(memory, config.encode())
os.lseek(memory, 0, os.SEEK_SET)
inner = subprocess.Popen([*sys.argv[3:], str(memory)], pass_fds=(memory, child.fileno()))
assert parent.recv(16) == b"W"
parent.send(b"G")
print(inner.pid, flush=True)
sys.stdin.read()
"""


def test_the_target_ends_with_the_supervisor(confiner: list[str]) -> None:
    """The parent-death signal, asked for in step 0, is kept across the exec: the
    target (a sleep) dies with the process that started the inner, as bwrap's sandbox
    dies with its parent. The control: without step 0 the sleep outlives it."""
    for mode in ("direct", "bwrap's"):
        with subprocess.Popen([sys.executable, "-S", "-c", _PARENT, PROJECT, mode,
                               *confiner], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True) as parent:
            assert parent.stdout is not None
            target = int(parent.stdout.readline())
            try:
                assert alive({target}), mode  # it runs
                parent.kill()
                parent.wait()
                left = wait_gone({target}, timeout=10)
                assert (left == set()) == (mode == "direct"), mode
            finally:
                try:
                    os.kill(target, 9)
                except ProcessLookupError:
                    pass


def test_a_capability_that_cannot_be_dropped_fails_closed(confiner: list[str],
                                                          runner: list[str],
                                                          tmp_path: Path) -> None:
    """capset refused (here by a filter of the wrapper's): the same message from both,
    exit 125, the target never run."""
    refuse_capset = then_exec(
        f"sys.path.insert(0, {PROJECT!r})\n"
        "from inner import prctl, seccomp, syscalls\n"
        "prctl.set_no_new_privs()\n"
        "seccomp.install(seccomp.build_program(syscalls.native_arch(), memfd='allow',"
        " exec_notify=False, extra=(('capset', 1, ()),)), listener=False)")
    marker = tmp_path / "ran"
    ran = start(confiner, direct("touch", str(marker)), wrapper=[*runner, *refuse_capset])
    assert (ran.status, ran.messages) == (125, [
        b"Cthe capabilities could not be dropped: [Errno 1] capset: Operation not "
        b"permitted"]), ran.stderr
    assert not marker.exists()


def test_the_filter_without_namespaces_holds_sockets_and_ipc(confiner: list[str]) -> None:
    """The supervisor's own rules for a run without namespaces (direct_rules.py), in the
    program both inners install: in network "none" below Landlock ABI 9, no socket of
    any family but a connected unix pair, no System V IPC."""
    probe = ["/usr/bin/python3", "-S", "-c", (
        "import ctypes, socket\n"
        "def tried(make):\n"
        "    try: make(); return 'ok'\n"
        "    except OSError as err: return str(err.errno)\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def shm():\n"
        "    if libc.shmget(0, 4096, 0o1600) < 0: raise OSError(ctypes.get_errno(), 'shmget')\n"
        "print(tried(lambda: socket.socket(socket.AF_INET)),"
        " tried(lambda: socket.socket(socket.AF_UNIX)),"
        " tried(lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)),"
        " tried(lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)),"
        " tried(shm))")]
    closed = filters(Layers(landlock_abi=0), filter_rules(network_mode="none", unix=False))
    ran = start(confiner, direct(*probe, seccomp=closed))
    assert (ran.status, ran.stdout.split()) == (0, [
        str(errno.EACCES), str(errno.EACCES), "ok", str(errno.EACCES),
        str(errno.ENOSYS)]), ran.stderr
    control = start(confiner, direct(*probe))
    assert control.stdout.split()[:4] == ["ok"] * 4, control.stderr


# -- steps 1 and 2: the filter and its listener -------------------------------------


def test_the_filter_and_no_new_privs_are_in_place(confiner: list[str]) -> None:
    show = ["grep", "-E", "^(NoNewPrivs|Seccomp):", "/proc/self/status"]
    ran = start(confiner, Config(-1, show, seccomp=PLAIN))
    assert (ran.status, ran.messages) == (0, [b"W"]), ran.stderr
    assert ran.stdout.split() == ["NoNewPrivs:", "1", "Seccomp:", "2"]
    refused = start(confiner, Config(-1, ["unshare", "--user", "true"], seccomp=PLAIN))
    assert refused.status != 0 and "Operation not permitted" in refused.stderr


def test_the_listener_is_handed_over_before_the_wait(confiner: list[str]) -> None:
    watched = filters(Layers(landlock_abi=0, memfd="notify", listener=True))
    ran = start(confiner, Config(-1, ["true"], seccomp=watched))
    try:
        assert (ran.status, ran.messages) == (0, [b"L", b"W"]), ran.stderr
        assert len(ran.fds[b"L"]) == 1
        assert os.readlink(f"/proc/self/fd/{ran.fds[b'L'][0]}") == "anon_inode:seccomp notify"
    finally:
        ran.close()


def test_another_listener_falls_back_to_the_filter_without_one(confiner: list[str]) -> None:
    """EBUSY: said once, memory files refused with ENOSYS; learn (no fallback) fails."""
    watched = filters(Layers(landlock_abi=0, memfd="notify", listener=True))
    memfd = [sys.executable, "-S", "-c", "import os\ntry: os.memfd_create('m')\n"
             "except OSError as e: print(e.errno)"]
    ran = start(confiner, Config(-1, memfd, seccomp=watched), wrapper=OTHER_LISTENER)
    assert (ran.status, ran.messages) == (0, [b"Nno-listener", b"W"]), ran.stderr
    assert ran.stdout.strip() == str(errno.ENOSYS)
    learn = filters(Layers(landlock_abi=0, exec_notify=True, listener=True,
                           listener_required=True))
    failed = start(confiner, Config(-1, ["true"], seccomp=learn), wrapper=OTHER_LISTENER)
    assert (failed.status, failed.messages) == (125, [
        b"Cthe seccomp filter could not be installed: [Errno 16] seccomp: Device or "
        b"resource busy"])


def test_a_filter_for_another_architecture_is_refused(confiner: list[str]) -> None:
    foreign = Seccomp(0x40000003, PLAIN.program)  # i386's
    ran = start(confiner, Config(-1, ["touch", "/tmp/never"], seccomp=foreign))
    native = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}[os.uname().machine]
    assert (ran.status, ran.messages) == (125, [
        f"Cthe seccomp filter could not be installed: the filter checks the architecture "
        f"0x40000003, and this inner runs as {native:#x}".encode()])


def test_a_program_the_kernel_refuses_fails_closed(confiner: list[str], tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    bad = Seccomp(PLAIN.arch, bytes(8))  # one instruction, a load with no return
    ran = start(confiner, Config(-1, ["touch", str(marker)], seccomp=bad))
    assert (ran.status, ran.messages) == (125, [
        b"Cthe seccomp filter could not be installed: [Errno 22] seccomp: Invalid argument"]
    ), ran.stderr
    assert not marker.exists()


# -- step 4: Landlock ---------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for folder in ("granted", "other", "closed"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "f").write_text(folder)
    (tmp_path / "closed" / "secret").write_text("secret")
    (tmp_path / "closed" / "link").symlink_to(tmp_path / "other" / "f")
    return tmp_path


def reads(tree: Path, *names: str) -> list[str]:
    script = "; ".join(f"cat {tree / n} >/dev/null 2>&1 && echo {n}=ok || echo {n}=no"
                       for n in names)
    return ["sh", "-c", script]


@pytest.mark.requires_landlock(abi=1)
def test_landlock_holds_the_rules_given(confiner: list[str], tree: Path) -> None:
    config = confined(*reads(tree, "granted/f", "other/f"),
                      rules=[(str(tree / "granted"), READ)])
    ran = start(confiner, config)
    assert (ran.status, ran.messages) == (0, [b"W"]), ran.stderr
    assert ran.stdout.split() == ["granted/f=ok", "other/f=no"]


@pytest.mark.requires_landlock(abi=1)
def test_a_closed_folder_grants_its_entries_but_the_hidden_ones(confiner: list[str],
                                                                tree: Path) -> None:
    """close_hidden in both: the folder listed inside, the hidden path and a link (whose
    target is elsewhere) in no rule, the other entries read."""
    closed = str(tree / "closed")
    config = confined(*reads(tree, "closed/f", "closed/secret", "closed/link"),
                      rules=[(closed, READ)])
    config = config.replace(landlock=Landlock(
        False, landlock.abi_table(), landlock.FILE_MASK, config.landlock.rules,  # type: ignore[union-attr]
        [(closed, [f"{closed}/secret"])]))
    ran = start(confiner, config)
    assert (ran.status, ran.messages) == (0, [b"W"]), ran.stderr
    assert ran.stdout.split() == ["closed/f=ok", "closed/secret=no", "closed/link=no"]


@pytest.mark.requires_landlock(abi=1)
def test_a_missing_rule_path_fails_closed_with_one_message(confiner: list[str],
                                                           tree: Path) -> None:
    gone = tree / "gone"
    config = confined("touch", str(tree / "granted" / "ran"),
                      rules=[(str(tree / "granted"), WRITE), (str(gone), READ)])
    ran = start(confiner, config)
    assert (ran.status, ran.messages) == (125, [
        f"CLandlock could not be applied: [Errno 2] landlock rule path: No such file or "
        f"directory: '{gone}'".encode()])
    assert not (tree / "granted" / "ran").exists()


@pytest.mark.requires_landlock(abi=1)
def test_a_file_rule_keeps_what_a_file_can_hold(confiner: list[str], tree: Path) -> None:
    """READ_DIR on a file is EINVAL in the kernel: both inners drop it, not fail."""
    config = confined(*reads(tree, "granted/f", "other/f"),
                      rules=[(str(tree / "granted" / "f"), READ)])
    ran = start(confiner, config)
    assert (ran.status, ran.stdout.split()) == (0, ["granted/f=ok", "other/f=no"])


@pytest.fixture
def linked(tree: Path) -> Path:
    """`tree/via`: a link to `tree/granted`, as one the host (or another sandbox)
    planted where a grant's folder was."""
    (tree / "via").symlink_to(tree / "granted")
    return tree


def host_rules(rules: Sequence[tuple[str, int]], *, nofollow: bool = True,
               optional: bool = False) -> Landlock:
    return Landlock(True, landlock.abi_table(), landlock.FILE_MASK, [*SYSTEM, *rules],
                    nofollow=nofollow, optional=optional)


@pytest.mark.requires_landlock(abi=1)
def test_without_namespaces_a_link_on_a_rules_way_fails_closed(confiner: list[str],
                                                               linked: Path) -> None:
    """The paths are the host's own: each opened from `/` one component at a time, no
    link followed. One on the way refuses the launch, with one message from both; the
    control: followed, the same rule grants the link's target."""
    via = str(linked / "via" / "f")
    config = direct(*reads(linked, "granted/f"), landlock=host_rules([(via, READ)]))
    ran = start(confiner, config)
    assert (ran.status, ran.messages) == (125, [
        f"CLandlock could not be applied: [Errno 40] landlock open(O_PATH), no link "
        f"followed: Too many levels of symbolic links: '{via}'".encode()])
    followed = start(confiner, config.replace(landlock=host_rules([(via, READ)],
                                                                  nofollow=False)))
    assert (followed.status, followed.stdout.split()) == (0, ["granted/f=ok"])


@pytest.mark.requires_landlock(abi=1)
def test_without_namespaces_a_listed_path_gone_or_linked_is_in_no_rule(
        confiner: list[str], linked: Path) -> None:
    """`optional`: every path the supervisor listed may be gone, or a link, by the time
    the inner opens it: the run goes on and that path grants nothing. A link at a rule's
    end grants nothing either (its target has the rights of where it is)."""
    rules = [(str(linked / "via" / "f"), READ), (str(linked / "gone"), READ),
             (str(linked / "closed" / "link"), READ), (str(linked / "closed" / "f"), READ)]
    config = direct(*reads(linked, "granted/f", "other/f", "closed/f"),
                    landlock=host_rules(rules, optional=True))
    ran = start(confiner, config)
    assert (ran.status, ran.messages) == (0, [b"W"]), ran.stderr
    assert ran.stdout.split() == ["granted/f=no", "other/f=no", "closed/f=ok"]
    missing_path = start(confiner, config.replace(landlock=host_rules(rules[1:2])))
    assert (missing_path.status, missing_path.messages) == (125, [
        f"CLandlock could not be applied: [Errno 2] landlock rule path: No such file or "
        f"directory: '{linked / 'gone'}'".encode()])


@pytest.mark.requires_landlock(abi=4)
def test_without_namespaces_network_none_binds_and_connects_no_tcp(confiner: list[str]
                                                                   ) -> None:
    """The table's network rights (ABI 4 on), handled with no rule: no TCP socket binds
    or connects, the host's loopback included. The control: the same run without them
    reaches the test's listener."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        probe = ["/usr/bin/python3", "-S", "-c", (
            "import socket\n"
            "def tried(call, address):\n"
            "    try: call(socket.socket(), address); return 'ok'\n"
            "    except OSError as err: return str(err.errno)\n"
            f"print(tried(socket.socket.connect, ('127.0.0.1', {port})),"
            " tried(socket.socket.bind, ('127.0.0.1', 0)))")]
        closed = Landlock(True, landlock.abi_table(net=True), landlock.FILE_MASK, SYSTEM,
                          nofollow=True, optional=True)
        ran = start(confiner, direct(*probe, landlock=closed))
        assert (ran.status, ran.stdout.split()) == (
            0, [str(errno.EACCES), str(errno.EACCES)]), ran.stderr
        control = start(confiner, direct(*probe, landlock=host_rules([], optional=True)))
        assert (control.status, control.stdout.split()) == (0, ["ok", "ok"]), control.stderr


def test_without_landlock_a_list_fails_closed_and_no_list_is_said(confiner: list[str],
                                                                 tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    config = confined("touch", str(marker))
    said = start(confiner, config, wrapper=NO_LANDLOCK)
    assert (said.status, said.messages) == (0, [b"Nno-landlock", b"W"]), said.stderr
    assert marker.exists()
    marker.unlink()
    required = config.replace(landlock=Landlock(True, landlock.abi_table(),
                                                landlock.FILE_MASK, SYSTEM))
    refused = start(confiner, required, wrapper=NO_LANDLOCK)
    assert (refused.status, refused.messages) == (125, [
        b"Cthis kernel has no Landlock (its calls answer ENOSYS), which the spec needs: "
        b"its program list is enforced by Landlock alone"])
    assert not marker.exists()


# -- step 5: limits and signals -----------------------------------------------------


def test_the_limits_are_set_soft_and_hard_never_above_the_hard(confiner: list[str]) -> None:
    limits = [Rlimit("NOFILE", resource.RLIMIT_NOFILE, 77), Rlimit("CORE",
                                                                    resource.RLIMIT_CORE, 0),
              Rlimit("CPU", resource.RLIMIT_CPU, 1000)]
    show = ["sh", "-c", "ulimit -Sn; ulimit -Hn; ulimit -Sc; ulimit -Ht"]
    ran = start(confiner, Config(-1, show, seccomp=PLAIN, rlimits=limits))
    assert (ran.status, ran.stdout.split()) == (0, ["77", "77", "0", "1000"]), ran.stderr

    lower = then_exec("resource.setrlimit(resource.RLIMIT_CPU, (500, 500))")
    capped = start(confiner, Config(-1, show, seccomp=PLAIN, rlimits=limits),
                   wrapper=lower)
    assert capped.stdout.split()[-1] == "500"


def test_signals_are_back_to_their_defaults_and_unblocked(confiner: list[str]) -> None:
    """bwrap is started with the terminal's signals ignored, and exec keeps them so."""
    ignore_and_block = then_exec(
        "for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT,"
        " signal.SIGPIPE, signal.SIGUSR1):\n    signal.signal(sig, signal.SIG_IGN)\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2, signal.SIGCHLD})")
    show = ["grep", "-E", "^Sig(Blk|Ign):", "/proc/self/status"]
    control = subprocess.run([*ignore_and_block, "/usr/bin/grep", *show[1:]],
                             capture_output=True, text=True)
    assert control.stdout.split()[::2] == ["SigBlk:", "SigIgn:"]
    assert control.stdout.split() != ["SigBlk:", "0" * 16, "SigIgn:", "0" * 16]
    ran = start(confiner, Config(-1, show, seccomp=PLAIN), wrapper=ignore_and_block)
    assert (ran.status, ran.stdout.split()) == (0, ["SigBlk:", "0" * 16, "SigIgn:", "0" * 16])


# -- step 6: fds and the mount table ------------------------------------------------


def test_every_fd_but_the_standard_ones_is_closed(confiner: list[str]) -> None:
    read_end, write_end = os.pipe()
    os.set_inheritable(read_end, True)
    try:
        ran = start(confiner, Config(-1, ["ls", "/proc/self/fd"], seccomp=PLAIN),
                    pass_fds=(read_end,))
    finally:
        os.close(read_end)
        os.close(write_end)
    assert (ran.status, ran.stdout.split()) == (0, ["0", "1", "2", "3"])  # 3: ls's own


def test_the_mount_table_is_handed_over_before_the_wait(confiner: list[str]) -> None:
    ran = start(confiner, Config(-1, ["true"], seccomp=PLAIN, watch_mounts=True))
    try:
        assert (ran.status, ran.messages) == (0, [b"M", b"W"]), ran.stderr
        table = os.read(ran.fds[b"M"][0], 1 << 16).decode()
        assert " / / " in table  # mountinfo: the root's line
    finally:
        ran.close()


# -- step 7: the go -----------------------------------------------------------------


def test_nothing_runs_without_the_go(confiner: list[str], tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    ran = start(confiner, Config(-1, ["touch", str(marker)], seccomp=PLAIN), go=False)
    assert (ran.status, ran.messages) == (125, [b"W"])
    assert not marker.exists()


# -- step 8: exec -------------------------------------------------------------------


def test_exec_failures_are_reported_as_a_shell_would(confiner: list[str], tmp_path: Path) -> None:
    script = tmp_path / "script"
    script.write_text("#!/nonexistent/interp -x\necho hi\n")
    script.chmod(0o755)
    cases = {
        "lnk-no-such-program": (127, b"E2 lnk-no-such-program"),
        str(tmp_path): (126, f"E13 {tmp_path}".encode()),  # a folder
        str(script): (126, f"E2 {script}\0/nonexistent/interp".encode()),
    }
    for program, (status, message) in cases.items():
        ran = start(confiner, Config(-1, [program], seccomp=PLAIN))
        assert (ran.status, ran.messages) == (status, [b"W", message]), program
    through_path = start(confiner, Config(-1, ["script"], seccomp=PLAIN),
                         env={"PATH": f"/nonexistent:{tmp_path}"})
    assert (through_path.status, through_path.messages[1]) == (
        126, b"E2 script\0/nonexistent/interp")


def test_path_is_searched_as_pythons_execvpe_searches_it(confiner: list[str],
                                                         tmp_path: Path) -> None:
    """The first error but ENOENT and ENOTDIR is kept and the search goes on; a file
    without `#!` is not run as a shell script (glibc's execvpe would)."""
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (first / "prog").write_text("#!/bin/sh\necho first\n")  # not executable: EACCES
    (second / "prog").write_text("#!/bin/sh\necho second\n")
    (second / "prog").chmod(0o755)
    (second / "bare").write_text("echo as a shell script\n")
    (second / "bare").chmod(0o755)
    path = f"/nonexistent::{first}:{second}"
    found = start(confiner, Config(-1, ["prog"], seccomp=PLAIN), env={"PATH": path})
    assert (found.status, found.stdout) == (0, "second\n")
    kept = start(confiner, Config(-1, ["prog"], seccomp=PLAIN), env={"PATH": f"{first}:/x"})
    assert (kept.status, kept.messages[1]) == (126, b"E13 prog")
    bare = start(confiner, Config(-1, ["bare"], seccomp=PLAIN), env={"PATH": str(second)})
    assert (bare.status, bare.messages[1], bare.stdout) == (126, b"E8 bare", "")


def test_the_target_gets_the_environment_and_its_arguments(confiner: list[str]) -> None:
    argv = ["sh", "-c", 'printf "%s|" "$0" "$1" "$LNK_X"', "zero", "", ]
    ran = start(confiner, Config(-1, argv, seccomp=PLAIN),
                env={"PATH": "/usr/bin:/bin", "LNK_X": "é x"})
    assert (ran.status, ran.stdout) == (0, "zero||é x|")


# -- what only one of them does -----------------------------------------------------


def test_a_file_operation_is_the_python_inners(confiner: list[str], tmp_path: Path) -> None:
    (tmp_path / "f").write_text("data")
    config = Config(-1, ["unused"], seccomp=PLAIN, file=FileOp("read", str(tmp_path / "f")))
    ran = start(confiner, config)
    if confiner[0].endswith("confine"):
        assert (ran.status, ran.messages) == (125, [
            b"Ca file operation is the Python inner's: this compiled one runs commands only"])
    else:
        assert (ran.status, ran.stdout, ran.messages) == (0, "data", [b"W"])


# -- reading the configuration -------------------------------------------------------


@pytest.mark.parametrize(("change", "said"), [
    (lambda d: d[:-1], "unreadable: "),
    (lambda d: d + b"\0", "unreadable: "),
    (lambda d: d[:8] + (1).to_bytes(4, "little") + d[12:],
     "unreadable: it is of version 1, this inner reads 2"),
    (lambda d: b"", "unreadable: "),
])
def test_a_malformed_configuration_exits_125_before_any_step(
        confiner: list[str], tmp_path: Path, change: Callable[[bytes], bytes], said: str) -> None:
    marker = tmp_path / "ran"
    good = Config(5, ["touch", str(marker)], seccomp=PLAIN).encode()
    ran = start(confiner, None, raw=change(good))
    assert (ran.status, ran.messages) == (125, [])
    assert ran.stderr.startswith("lnk-sandbox: the inner confiner's configuration is "
                                 + said), ran.stderr
    assert not marker.exists()


def test_a_status_socket_that_is_no_socket_exits_125(confiner: list[str]) -> None:
    read_end, write_end = os.pipe()
    os.set_inheritable(read_end, True)
    try:
        ran = start(confiner, Config(-1, ["true"]), pass_fds=(read_end,), status_fd=read_end)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert (ran.status, ran.stderr) == (125, "lnk-sandbox: the inner confiner's status "
                                              "socket: [Errno 88] Socket operation on non-socket\n")


@pytest.fixture(scope="module")
def compiled() -> Iterator[str]:
    path = compiled_path()
    if path is None:
        missing(f"the compiled inner cannot run: {compiled_problem()}")
    yield path


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_both_readers_refuse_the_same_forms(compiled: str, data: st.DataObject) -> None:
    """Bytes of a configuration changed at random: the compiled reader refuses exactly
    what inner/config.py refuses. (One that both take asks for a file operation, which
    the compiled inner then refuses, or fails at a step: no go is ever given.) Each
    field is there: step 0's parent, each ABI's network rights, the Landlock switches."""
    allow = (0x06).to_bytes(2, "little") + bytes(2) + (0x7FFF0000).to_bytes(4, "little")
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with parent, child:
        # A one-instruction filter, so that a change lands in the form's structure mostly.
        config = Config(child.fileno(), ["touch", "/nonexistent/never"],
                        seccomp=Seccomp(PLAIN.arch, allow),
                        landlock=Landlock(False, landlock.abi_table(net=True),
                                          landlock.FILE_MASK, [("/nonexistent", READ)],
                                          [("/", ["/x"])], nofollow=True, optional=True),
                        rlimits=[Rlimit("CORE", resource.RLIMIT_CORE, 0)],
                        file=FileOp("write", "f", 9), parent=os.getpid())
        mutated = bytearray(config.encode())
        for _ in range(data.draw(st.integers(1, 3))):
            at = data.draw(st.integers(0, len(mutated) - 1))
            mutated[at] = data.draw(st.integers(0, 255))
        try:
            decode(bytes(mutated))
            refused = False
        except ValueError:
            refused = True
        parent.close()  # no go, ever
        ran = start([compiled], None, raw=bytes(mutated), pass_fds=(child.fileno(),),
                    go=False)
        child.close()
    assert ("configuration is unreadable" in ran.stderr) == refused, (ran.stderr, refused)
    assert ran.status != 0
