"""Red team, issue 30, a second and independent one: the mode without namespaces
(LNK_NAMESPACES=off) attacked by class where its last fixes stand: the reaper the inner
leaves in the sandbox's Landlock domain (inner/reaper.py), the listener that does a
file's metadata calls (supervisor/linux/direct_metadata.py), and the filter's rules of
this mode (direct_rules.filter_rules).

Each attack runs inside a real sandbox (root mode and the unprivileged user), proves it
ran, and the harm is judged outside afterwards. Escapes are left failing under `escaped`
(support/red_team.py); what held stays as a regression test.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attacks.test_red_team_nonamespace import ATTACK, OFF, WRITE, attack, victim
from support.red_team import need
from support.sandbox import LNK, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_landlock(abi=6), pytest.mark.requires_seccomp_notify]


# -- the listener: what the run's Landlock rules write is not all the grants write -----------

def test_the_devices_the_run_writes_keep_their_mode(sandbox: Sandbox) -> None:
    """/dev/null, /dev/zero, /dev/tty are the host's own nodes, written by a rule of the
    run's (no bwrap /dev of its own): run by root the sandbox is their owner, and the
    supervisor (root with every capability) would do its chmod, chown and utimensat."""
    nodes = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/urandom"]
    before = {n: os.stat(n) for n in nodes}
    try:
        results = attack(sandbox, {
            **{f"chmod {n}": f"os.chmod({n!r}, 0o600)" for n in nodes},
            "fchmod /dev/null": "os.fchmod(os.open('/dev/null', os.O_WRONLY), 0o600)",
            "utime /dev/null": "os.utime('/dev/null', (0, 0))",
            "chown /dev/null": "os.chown('/dev/null', -1, 0)",
        })
        after = {n: (os.stat(n).st_mode, os.stat(n).st_mtime) for n in nodes}
        assert after == {n: (s.st_mode, s.st_mtime) for n, s in before.items()}, results
        assert set(results.values()) == {"EPERM"}, results
    finally:
        for n, s in before.items():
            os.chmod(n, stat.S_IMODE(s.st_mode))
            os.utime(n, ns=(s.st_atime_ns, s.st_mtime_ns))


# -- a file's flags: neither a mode, nor an extended attribute, nor Landlock's ---------------

FS_IOC_GETFLAGS, FS_IOC_SETFLAGS = 0x80086601, 0x40086602
FS_NODUMP_FL, FS_NOATIME_FL = 0x40, 0x80
FILE_SETATTR = 469  # file_setattr(dirfd, path, struct file_attr *, size, at_flags): 6.17
FS_XFLAG_NODUMP, FS_XFLAG_NOATIME = 0x80, 0x40


def flags_of(path: Path) -> int:
    """A file's chattr flags, read on the host."""
    import array
    import fcntl

    fd = os.open(path, os.O_RDONLY)
    try:
        buffer = array.array("l", [0])
        fcntl.ioctl(fd, FS_IOC_GETFLAGS, buffer, True)
        return buffer[0]
    finally:
        os.close(fd)


def test_a_files_flags_where_the_grants_do_not_write(sandbox: Sandbox) -> None:
    """chattr's flags (FS_IOC_SETFLAGS, on a file opened for reading alone) and
    file_setattr's (Linux 6.17, by path): the owner sets them, Landlock asks no right of
    either, and bwrap's read-only mount said EROFS."""
    ssh = sandbox.home / ".ssh"
    ssh.mkdir()
    files = {"read": sandbox.home / "notes.txt", "hidden": ssh / "id_ed25519",
             "outside": sandbox.base / "outside.txt"}
    for path in files.values():
        path.write_text("the person's\n")
    sandbox.chown()
    before = {name: flags_of(path) for name, path in files.items()}
    attr = f"(ctypes.c_uint64 * 3)({FS_XFLAG_NODUMP | FS_XFLAG_NOATIME}, 0, 0)"
    steps = {}
    for name, path in files.items():
        steps[f"chattr {name}"] = (
            f"__import__('fcntl').ioctl(os.open({str(path)!r}, os.O_RDONLY), "
            f"{FS_IOC_SETFLAGS}, __import__('array').array('l', [{FS_NODUMP_FL}]))")
        steps[f"file_setattr {name}"] = (
            f"sc({FILE_SETATTR}, -100, {str(path).encode()!r}, {attr}, 24, 0)")
    results = attack(sandbox, steps)
    after = {name: flags_of(path) for name, path in files.items()}
    assert after == before, (before, after, results)
    assert set(results.values()) <= {"ENOTTY", "ENOSYS", "EACCES"}, results


# -- signals the kernel sends on the sandbox's behalf -----------------------------------------

F_SETOWN, F_SETSIG = 8, 10


def _sigio(target: str, signal_number: int = 9) -> str:
    """An expression: a pipe whose owner is `target` (a pid, or -pgid), its signal
    `signal_number`, then made ready: the kernel signals the owner (fcntl(2), F_SETSIG)."""
    return (f"(lambda fcntl, r, w: (fcntl.fcntl(r, {F_SETOWN}, {target}), "
            f"fcntl.fcntl(r, {F_SETSIG}, {signal_number}), fcntl.fcntl(r, fcntl.F_SETFL, "
            "fcntl.fcntl(r, fcntl.F_GETFL) | os.O_ASYNC), os.write(w, b'x')))"
            "(__import__('fcntl'), *os.pipe())")


def _siblings() -> str:
    return ("globals().__setitem__('siblings', [int(n) for n in os.listdir('/proc') "
            "if n.isdigit() and int(n) != os.getpid() and open(f'/proc/{n}/stat')"
            ".read().rsplit(')', 1)[1].split()[1] == str(os.getppid())])")


def test_an_owned_file_signals_no_process_outside(sandbox: Sandbox) -> None:
    """F_SETOWN and F_SETSIG: the kernel sends SIGIO (or any signal named, SIGKILL
    included) to a file's owner when it is ready, checked against the uid of who set
    the owner, and against Landlock's scope (its file_send_sigiotask hook): the
    supervisor, the reaper and keeper, a process of the person's, their process group."""
    other = victim(sandbox)
    try:
        pid = other.pid
        done = sandbox.run(PYTHON_INSIDE, "-c", ATTACK, json.dumps({
            "siblings": _siblings(),
            # the control: a child of its own, ended by the same signal
            "own child": "globals().__setitem__('child', __import__('subprocess').Popen("
                         "['sleep', '30']))",
            "signal it": _sigio("child.pid"),
            "it was killed": "ok(-(child.wait() != -9))",
            "the supervisor": _sigio("os.getppid()"),
            "a sibling": _sigio("siblings[0]"),
            "the other sibling": _sigio("siblings[-1]"),
            "a process of the person's": _sigio(str(pid)),
            "its group": _sigio(str(-os.getpgid(pid))),
            "the supervisor's group": _sigio("-os.getpgid(os.getppid())"),
        }), spec=WRITE, env=OFF)
        lines = done.stdout.splitlines()
        need(lines and lines[0].startswith("STARTED"), done.stderr)
        time.sleep(0.5)
        assert other.poll() is None, done.stdout
        assert lines[-1].startswith("RESULTS") and done.returncode == 0, \
            (done.returncode, done.stdout, done.stderr)
        results = json.loads(lines[-1].removeprefix("RESULTS "))
        need(results.pop("it was killed") == "OK", f"the control was not killed: {results}")
    finally:
        other.kill()
        other.wait()


# The person's shell around the run, in a session of its own, so that its autogroup is a
# real one whatever session the tests run in (a service's children share the init
# session's, the root task group, which shows nothing and takes no nice): it writes its
# autogroup before and after the run to argv[1]; a renice ends with the session.
SESSION = r"""
import json, subprocess, sys
def group():
    return open("/proc/self/autogroup").read()
before = group()
status = subprocess.run(sys.argv[2:]).returncode
open(sys.argv[1], "w").write(json.dumps([before, group()]))
sys.exit(status)
"""


@pytest.mark.skipif(not Path("/proc/self/autogroup").exists(),
                    reason="a kernel without CONFIG_SCHED_AUTOGROUP")
def test_the_sessions_autogroup_is_not_reniced(sandbox: Sandbox) -> None:
    """/proc/PID/autogroup sets the nice value of the scheduling group of every process
    of the session (the person's shell and what it runs): raising it asks no
    capability, and the inner's own /proc/PID is written (direct_rules.PROC_SELF)."""
    seen, inside = sandbox.base / "autogroup.json", sandbox.project / "out" / "autogroup"
    inside.parent.mkdir()
    sandbox.chown(inside.parent)
    results = attack(sandbox, {
        "its group": f"open({str(inside)!r}, 'w').write(open('/proc/self/autogroup').read())",
        "renice it": "open('/proc/self/autogroup', 'w').write('19')",
        "by its pid": "open(f'/proc/{os.getpid()}/autogroup', 'w').write('19')",
    }, wrapper=["setsid", "-w", sys.executable, "-c", SESSION, str(seen)])
    before, after = json.loads(seen.read_text())
    need(re.fullmatch(r"/autogroup-\d+ nice 0\n", before), f"the shell's autogroup: {before!r}")
    need(results.pop("its group") == "OK"
         and inside.read_text() == before, "the sandbox is in another autogroup")
    assert after == before, results
    assert results == {"renice it": "EACCES", "by its pid": "EACCES"}  # refused, not lost


# -- the listener's path: a file's name is not the file --------------------------------------

def _elsewhere(box: Sandbox) -> tuple[subprocess.Popen[bytes], Path]:
    """A process of the person's in a mount namespace of its own (a container, a
    devcontainer mounting the project at its own path), where the project's path holds
    another file system (at build/) with a file `secret` (0600): the process, and the file as the
    host reaches it (through the process's root)."""
    prefix = ["unshare", "-m", "--propagation", "private"] if box.who.is_root else [
        "unshare", "-Urm", "--propagation", "private"]
    where = box.project / "build"  # a folder of the written one, there at launch
    where.mkdir()
    box.chown()
    script = (f"mount -t tmpfs none {where} && echo theirs > {where}/secret "
              f"&& chmod 600 {where}/secret && echo ready && exec sleep 120")
    other = subprocess.Popen([*box.who.prefix, *prefix, "sh", "-c", script],
                             stdout=subprocess.PIPE)
    assert other.stdout is not None
    need(other.stdout.readline() == b"ready\n", "no mount namespace could be made")
    return other, Path(f"/proc/{other.pid}/root{where}/secret")


def test_a_file_of_another_mount_namespace_at_a_written_path(sandbox: Sandbox) -> None:
    """The listener opens the path the call names, then judges the path the kernel
    gives back for what it opened: through /proc/PID/root that is another namespace's
    file, named as if it were at the written path. The sandbox cannot walk there itself
    (Landlock refuses /proc/PID/root of a process outside); the supervisor could."""
    other, secret = _elsewhere(sandbox)
    try:
        through = f"/proc/{other.pid}/root{sandbox.project}/build/secret"
        results = attack(sandbox, {
            "reach it itself": f"os.stat({through!r})",
            "chmod": f"os.chmod({through!r}, 0o666)",
            "utime": f"os.utime({through!r}, (0, 0))",
            "chown": f"os.chown({through!r}, -1, os.getgid())",
            "watch": f"sc(254, sc(253), {through.encode()!r}, 0x100)",
            "its folder": f"os.chmod({str(Path(through).parent)!r}, 0o777)",
        })
        need(results.pop("reach it itself") in ("EACCES", "EPERM"), results)
        info = secret.stat()
        assert (stat.S_IMODE(info.st_mode), info.st_mtime != 0) == (0o600, True), results
        assert stat.S_IMODE(secret.parent.stat().st_mode) != 0o777, results
        # ELOOP: another process's /proc/PID/root is no magic link the listener follows
        assert set(results.values()) <= {"EPERM", "EACCES", "ELOOP"}, results
    finally:
        other.kill()
        other.communicate()


RACE = r"""
import ctypes, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
written, hidden = (p.encode() for p in sys.argv[1:3])
size = max(len(written), len(hidden)) + 1
buffer = ctypes.create_string_buffer(size)
stop = False
def flip():
    while not stop:
        ctypes.memmove(buffer, hidden + b"\0", len(hidden) + 1)
        ctypes.memmove(buffer, written + b"\0", len(written) + 1)
threading.Thread(target=flip, daemon=True).start()
print("STARTED", flush=True)
done = 0
for _ in range(3000):
    done += libc.chmod(buffer, 0o777) == 0
    done += libc.syscall(280, -100, buffer, None, 0) == 0  # utimensat(path, now)
stop = True
print("DONE", done, flush=True)
"""


def test_a_path_rewritten_while_the_listener_reads_it(sandbox: Sandbox) -> None:
    """Another thread of the caller rewrites the path between the listener's read and
    its act (the classic seccomp-notify TOCTOU): the listener acts on the file it opened
    and judged, never on the path again, so a written path can be read and a hidden one
    never reached."""
    ssh = sandbox.home / ".ssh"
    ssh.mkdir()
    hidden = ssh / "id_ed25519"
    hidden.write_text("key\n")
    hidden.chmod(0o600)
    os.utime(hidden, (86400, 86400))
    (sandbox.project / "build").mkdir()
    (sandbox.project / "build" / "run.sh").write_text("#!/bin/sh\n")
    sandbox.chown()
    done = sandbox.run(PYTHON_INSIDE, "-c", RACE, str(sandbox.project / "build" / "run.sh"),
                       str(hidden), spec=WRITE, env=OFF, timeout=300)
    need(done.stdout.startswith("STARTED"), done.stderr)
    line = done.stdout.splitlines()[-1]
    need(line.startswith("DONE ") and int(line.split()[1]) > 0,
         f"no call on the written path succeeded: {done.stdout}")
    assert (stat.S_IMODE(hidden.stat().st_mode), hidden.stat().st_mtime) == (0o600, 86400)


def test_the_listeners_other_ways_to_a_file(sandbox: Sandbox) -> None:
    """A folder's fd (O_PATH) on a hidden folder with a name, AT_EMPTY_PATH on an fd of
    a hidden file, the fd's /proc/self/fd and /proc/thread-self/fd links, //proc/self
    (which names the supervisor's own fds when it reads the path as it is), /proc/./self,
    the working directory's link walked up and out, the supervisor's own working
    directory: each ends at a file judged as itself."""
    ssh = sandbox.home / ".ssh"
    ssh.mkdir()
    hidden = ssh / "id_ed25519"
    hidden.write_text("key\n")
    hidden.chmod(0o600)
    outside = sandbox.base / "outside.txt"
    outside.write_text("the person's\n")
    outside.chmod(0o600)
    (sandbox.project / "build").mkdir()
    (sandbox.project / "build" / "run.sh").write_text("#!/bin/sh\n")
    sandbox.chown()
    rel = os.path.relpath(outside, sandbox.project)
    fd = f"os.open({str(hidden)!r}, os.O_PATH)"
    folder = f"os.open({str(ssh)!r}, os.O_PATH)"
    results = attack(sandbox, {
        "fchmodat by a folder fd": f"sc(268, {folder}, b'id_ed25519', 0o777)",
        "fchmodat2 AT_EMPTY_PATH": f"sc(452, {fd}, b'', 0o777, 0x1000)",
        "fchownat AT_EMPTY_PATH": f"sc(260, {fd}, b'', -1, os.getgid(), 0x1000)",
        "futimens of an O_PATH fd": f"sc(280, {fd}, None, None, 0)",
        "utimensat AT_EMPTY_PATH": f"sc(280, {fd}, b'', None, 0x1000)",
        "/proc/self/fd": f"os.chmod('/proc/self/fd/%d' % {fd}, 0o777)",
        "/proc/thread-self/fd": f"os.chmod('/proc/thread-self/fd/%d' % {fd}, 0o777)",
        "//proc/self/fd": f"os.chmod('//proc/self/fd/%d' % {fd}, 0o777)",
        "/proc/./self/fd": f"os.chmod('/proc/./self/fd/%d' % {fd}, 0o777)",
        "//proc//./thread-self": f"os.chmod('//proc//./thread-self/fd/%d' % {fd}, 0o777)",
        # the control: the caller's own fd, however /proc/self is spelt
        "a written file by //proc/./self": "os.chmod('//proc/./self/fd/%d' % os.open("
                                           "'build/run.sh', os.O_PATH), 0o750)",
        "the cwd walked out": f"os.chmod('/proc/self/cwd/{rel}', 0o777)",
        "a watch by fd": f"sc(254, sc(253), b'/proc/self/fd/%d' % {folder}, 0x100)",
        "the supervisor's cwd": "os.chmod(f'/proc/{os.getppid()}/cwd/../home/.ssh/"
                                "id_ed25519', 0o777)",
    })
    assert {n: stat.S_IMODE(p.stat().st_mode) for n, p in
            (("hidden", hidden), ("outside", outside))} == {"hidden": 0o600,
                                                            "outside": 0o600}, results
    assert results.pop("a written file by //proc/./self") == "OK", results
    assert stat.S_IMODE((sandbox.project / "build" / "run.sh").stat().st_mode) == 0o750
    assert set(results.values()) <= {"EPERM", "EACCES", "EBADF", "ENOENT", "ELOOP"}, results


# -- the reaper: the sandbox's processes end with a killed lnk-sandbox, no other does --------

LEAVER = r"""
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
tag = sys.argv[1]
def daemon(body):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for number in (1, 2, 3, 15):
                signal.signal(number, signal.SIG_IGN)
            body()
        os._exit(0)
def subreaper():  # its own subreaper, its own children, a new group each
    libc.prctl(36, 1)  # PR_SET_CHILD_SUBREAPER
    for _ in range(3):
        if os.fork() == 0:
            os.setpgid(0, 0)
            os.execvp("sleep", ["sleep", "300", tag])
    while True:
        time.sleep(1)
def hopper():  # a new pid each turn, its parent gone before anyone looks
    while True:
        try:
            if os.fork():
                os._exit(0)
            os.setsid()
        except OSError:
            time.sleep(0.001)
def stopped():  # stopped: only SIGKILL ends it
    os.kill(os.getpid(), signal.SIGSTOP)
daemon(subreaper)
daemon(hopper)
daemon(stopped)
os.setpgid(0, 0)  # the command itself leaves the group the keeper kills
print("STARTED", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _tagged(tag: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", tag], capture_output=True, text=True)
    return found.stdout.split()


@pytest.mark.usefixtures("inner")
def test_a_killed_lnk_leaves_nothing_and_ends_nothing_else(sandbox: Sandbox) -> None:
    """Daemons that left the sandbox's group and session, one its own subreaper, one
    changing pid in a loop, one stopped, and the command itself out of its group: a
    SIGKILL of lnk-sandbox ends each of them (the keeper's group, the reaper's kill(-1)
    in the sandbox's domain, run by root the cgroup), and no process of the person's,
    nor the supervisor's other children, is signalled on the way."""
    tag = f"lnk-red-team-30b-{os.getpid()}-{time.monotonic_ns()}"
    other = victim(sandbox)
    spec = sandbox.write_spec(WRITE)
    run = subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--spec", str(spec), "--yes", "--",
         PYTHON_INSIDE, "-c", LEAVER, tag, "300"], cwd=sandbox.project, env=sandbox.env(OFF),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert run.stdout is not None
        need(run.stdout.readline() == b"STARTED\n", "the sandbox never started")
        end = time.monotonic() + 10
        while len(_tagged(tag)) < 4 and time.monotonic() < end:  # 3 sleeps, the hopper
            time.sleep(0.05)
        need(len(_tagged(tag)) >= 4, f"the daemons are not running: {_tagged(tag)}")
        run.kill()
        run.wait()
        end = time.monotonic() + 10
        while _tagged(tag) and time.monotonic() < end:
            time.sleep(0.05)
        assert not _tagged(tag), "a process of the sandbox outlived its killed lnk-sandbox"
        assert other.poll() is None, "the reaper ended a process of the person's"
    finally:
        for pid in _tagged(tag):
            os.kill(int(pid), 9)
        run.kill()
        run.communicate()
        other.kill()
        other.wait()


def test_a_hidden_files_extended_attributes_are_not_read(sandbox: Sandbox) -> None:
    """getxattr and listxattr by path ask Landlock no right: a hidden file's attributes
    (a browser keeps the URL a file came from, a token in it, in user.xdg.origin.url)
    and those of a file outside every grant were read, which bwrap's empty folder never
    showed. By an fd Landlock judged at its open, a read file's stay readable."""
    ssh = sandbox.home / ".ssh"
    ssh.mkdir()
    files = {"hidden": ssh / "id_ed25519", "outside": sandbox.base / "outside.txt",
             "read": sandbox.home / "notes.txt"}
    for path in files.values():
        path.write_text("the person's\n")
        os.setxattr(path, "user.xdg.origin.url", b"https://example.com/?token=SECRET")
    sandbox.chown()
    steps = {}
    for name, path in files.items():
        steps[f"getxattr {name}"] = f"os.getxattr({str(path)!r}, 'user.xdg.origin.url')"
        steps[f"lgetxattr {name}"] = (f"os.getxattr({str(path)!r}, 'user.xdg.origin.url', "
                                      "follow_symlinks=False)")
        steps[f"listxattr {name}"] = f"ok(-(not os.listxattr({str(path)!r})))"
        steps[f"getxattrat {name}"] = (
            f"sc(464, -100, {str(path).encode()!r}, 0, b'user.xdg.origin.url', "
            "ctypes.byref((ctypes.c_uint64 * 3)(ctypes.addressof(buf), 200, 0)), 24)")
    steps["fgetxattr of an O_PATH fd"] = (
        f"os.getxattr(os.open({str(files['hidden'])!r}, os.O_PATH), 'user.xdg.origin.url')")
    steps["fgetxattr of a read file"] = (
        f"ok(-(os.getxattr(os.open({str(files['read'])!r}, os.O_RDONLY), "
        "'user.xdg.origin.url') != b'https://example.com/?token=SECRET'))")
    results = attack(sandbox, {"buffer": "globals().__setitem__('buf', "
                                         "ctypes.create_string_buffer(200))", **steps})
    assert results.pop("buffer") == "OK" and results.pop("fgetxattr of a read file") == "OK"
    assert set(results.values()) <= {"ENOTSUP", "EBADF", "EACCES"}, results


# -- the filter's rules by number: the other ABIs of x86_64 ----------------------------------

INT80 = r"""
import ctypes, json, os, sys
print("STARTED", flush=True)
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long)
low = libc.mmap(None, 4096, 7, 0x2 | 0x20 | 0x40, -1, 0)  # RWX, private, anonymous, 32-bit
results = {}
def int80(number, *args):  # eax = number, ebx, ecx, edx = args; int 0x80; ret eax
    code = b"\x53\xb8" + number.to_bytes(4, "little")
    for opcode, value in zip((b"\xbb", b"\xb9", b"\xba"), args):
        code += opcode + (value & 0xFFFFFFFF).to_bytes(4, "little")
    code += b"\xcd\x80\x5b\xc3"
    ctypes.memmove(low + 2048, code, len(code))
    return ctypes.CFUNCTYPE(ctypes.c_int)(low + 2048)()
for name, path in json.loads(sys.argv[1]).items():
    ctypes.memmove(low, path.encode() + b"\0", len(path) + 1)
    results[f"i386 chmod {name}"] = int80(15, low, 0o777)
    results[f"i386 lchown32 {name}"] = int80(198, low, -1, os.getgid())
    results[f"i386 setxattr {name}"] = int80(226, low, low, low)
    results[f"x32 chmod {name}"] = libc.syscall(0x40000000 | 90, path.encode(), 0o777) \
        and -ctypes.get_errno()
results["i386 kill -1"] = int80(37, -1, 0)
print("RESULTS " + json.dumps(results), flush=True)
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="x86_64's i386 and x32 ABIs")
def test_the_i386_and_x32_calls(sandbox: Sandbox) -> None:
    """int 0x80 (i386's numbers: chmod is 15) and x32's (nr | 0x40000000) reach the
    kernel with another table than the one the filter's rules name: the filter refuses
    both ABIs whole (ENOSYS), before any rule, so no rule of this mode is missed."""
    ssh = sandbox.home / ".ssh"
    ssh.mkdir()
    files = {"hidden": ssh / "id_ed25519", "outside": sandbox.base / "outside.txt"}
    for path in files.values():
        path.write_text("the person's\n")
        path.chmod(0o600)
    sandbox.chown()
    done = sandbox.run(PYTHON_INSIDE, "-c", INT80, json.dumps(
        {name: str(path) for name, path in files.items()}), spec=WRITE, env=OFF)
    lines = done.stdout.splitlines()
    need(lines and lines[0] == "STARTED" and lines[-1].startswith("RESULTS "),
         f"the attacker did not run (exit {done.returncode}):\n{done.stderr}")
    results = json.loads(lines[-1].removeprefix("RESULTS "))
    assert {n: stat.S_IMODE(p.stat().st_mode) for n, p in files.items()} == {
        "hidden": 0o600, "outside": 0o600}, results
    assert set(results.values()) == {-38}, results  # -ENOSYS


def test_the_end_of_a_run_leaves_nothing(sandbox: Sandbox) -> None:
    """The same daemons, at the command's own end: the supervisor ends what is left,
    the hopper too (each process it leaves is a zombie of the supervisor's until reaped,
    so a round of /proc always finds the chain). Looked for by a tag of this test's own:
    the test user's processes of another run of the suite are not this one's."""
    tag = f"lnk-red-team-30b-{os.getpid()}-{time.monotonic_ns()}"
    try:
        for _ in range(3):
            done = sandbox.run(PYTHON_INSIDE, "-c", LEAVER, tag, "0.3", spec=WRITE, env=OFF,
                               timeout=120)
            need(done.stdout.startswith("STARTED"), f"never started inside:\n{done.stderr}")
            time.sleep(0.2)
            assert not _tagged(tag), "a process of the sandbox outlived its run"
    finally:
        for pid in _tagged(tag):
            os.kill(int(pid), 9)


WATCHER = r"""
import ctypes, os, select, sys, time
libc = ctypes.CDLL(None, use_errno=True)
print("STARTED", flush=True)
instance = libc.inotify_init1(0)
added = {}
for path in sys.argv[1:]:
    added[path] = libc.inotify_add_watch(instance, path.encode(), 0x3)  # access, modify
    if added[path] < 0:
        added[path] = -ctypes.get_errno()
print("ADDED", added, flush=True)
ready, _, _ = select.select([instance], [], [], 3)
print("EVENTS", bool(ready) and len(os.read(instance, 4096)) > 0, flush=True)
"""


def test_a_watch_on_the_hosts_devices(sandbox: Sandbox) -> None:
    """/dev/null and /dev/urandom are the host's own nodes (bwrap's /dev had nodes of
    its own): a watch on one told the sandbox each time any process of the machine
    wrote to /dev/null or read random bytes (a key made by ssh-keygen, gpg)."""
    watcher = subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--spec",
         str(sandbox.write_spec(WRITE)), "--yes", "--", PYTHON_INSIDE, "-c", WATCHER,
         "/dev/null", "/dev/urandom"], cwd=sandbox.project, env=sandbox.env(OFF),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert watcher.stdout is not None
        need(watcher.stdout.readline() == "STARTED\n", "the watcher never started")
        added = watcher.stdout.readline()
        end = time.monotonic() + 3
        while watcher.poll() is None and time.monotonic() < end:  # the host's own use
            with open("/dev/null", "w") as null, open("/dev/urandom", "rb") as random:
                null.write("x")
                random.read(16)
            time.sleep(0.05)
        out, _ = watcher.communicate(timeout=30)
        assert "EVENTS False" in out, (added, out)
        assert added == "ADDED {'/dev/null': -13, '/dev/urandom': -13}\n", added
    finally:
        watcher.kill()
        watcher.communicate()
