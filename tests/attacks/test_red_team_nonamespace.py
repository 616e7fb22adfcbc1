"""Red team, issue 30: the mode without namespaces (LNK_NAMESPACES=off), attacked by class
from what Landlock and the filter do not cover without a mount or a pid namespace: the
metadata of files the uid owns (mode, extended attributes, times), the person's other
processes (their scheduling, their /proc, signals, ptrace), socket families, the kernel's
less-trodden calls, the run's own folders, what is left after a killed lnk-sandbox.

Each attack runs inside a real sandbox (root mode and the unprivileged user), proves it
ran, and the harm is judged outside afterwards (a file's mode read by the host, a victim
process's nice value read from /proc). Escapes are left failing under `escaped`
(support/red_team.py); what held stays as a regression test.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from support.processes import alive, close_pipes, wait_gone
from support.red_team import escaped, need
from support.sandbox import LNK, PYTHON_INSIDE, SUPPORT, Sandbox

pytestmark = [pytest.mark.requires_landlock(abi=6), pytest.mark.requires_seccomp_notify]
OFF = {"LNK_NAMESPACES": "off"}
WRITE = '[files]\nwrite = ["."]\nread = ["~"]\n'

# The attacker: each step a Python expression, its result an errno name ("OK" when done).
ATTACK = r"""
import ctypes, errno, json, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
def ok(r):
    if r < 0:
        raise OSError(ctypes.get_errno(), "")
    return r
def sc(*args):
    return ok(libc.syscall(*args))
def parent_of(pid):
    try:  # None for a process gone between the listing and the read
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None
print("STARTED", os.getpid(), flush=True)
results = {}
for name, expression in json.loads(sys.argv[1]).items():
    try:
        eval(expression)
        results[name] = "OK"
    except OSError as err:
        results[name] = errno.errorcode.get(err.errno, str(err.errno))
print("RESULTS " + json.dumps(results), flush=True)
"""


def attack(box: Sandbox, steps: dict[str, str], *, spec: str = WRITE,
           env: dict[str, str] | None = None, wrapper: Sequence[str] = ()) -> dict[str, str]:
    """Run `steps` inside one sandbox without namespaces: their results by name, once the
    attacker is known to have started inside and finished."""
    done = box.run(PYTHON_INSIDE, "-c", ATTACK, json.dumps(steps), spec=spec,
                   env={**OFF, **(env or {})}, wrapper=wrapper)
    lines = done.stdout.splitlines()
    need(lines and lines[0].startswith("STARTED ") and lines[-1].startswith("RESULTS "),
         f"the attacker did not run inside (exit {done.returncode}):\n{done.stderr}")
    results: dict[str, str] = json.loads(lines[-1].removeprefix("RESULTS "))
    return results


def victim(box: Sandbox) -> subprocess.Popen[bytes]:
    """One of the person's own processes, outside the sandbox, with the sandbox's uid
    (setpriv, root, becomes it at its exec: waited for)."""
    other = subprocess.Popen([*box.who.prefix, "sleep", "120"])
    end = time.monotonic() + 10
    while Path(f"/proc/{other.pid}/comm").read_text().strip() != "sleep" \
            and time.monotonic() < end:
        time.sleep(0.01)
    return other


# -- the metadata of files the uid owns: Landlock has no hook for it -------------------------

def _owned_files(box: Sandbox) -> dict[str, Path]:
    """Files of the person's, each with mode 0600: in a read grant's hidden folder, at the
    top of the written folder (a dot file held), and outside every grant."""
    ssh = box.home / ".ssh"
    ssh.mkdir()
    places = {"hidden": ssh / "id_ed25519", "held": box.project / ".envrc",
              "outside": box.base / "outside.txt"}
    for path in places.values():
        path.write_text("the person's\n")
        path.chmod(0o600)
    box.chown()
    return places


@pytest.mark.usefixtures("inner")
def test_chmod_of_files_the_grants_do_not_write(sandbox: Sandbox) -> None:
    files = _owned_files(sandbox)
    steps = {f"chmod {name}": f"os.chmod({str(path)!r}, 0o777)" for name, path in files.items()}
    steps["fchmod of one read"] = (
        f"os.fchmod(os.open({str(sandbox.home)!r}, os.O_RDONLY), 0o777)")
    (sandbox.project / "sub").mkdir(exist_ok=True)
    sandbox.chown()
    steps["through a link made in a written folder"] = (
        f"os.symlink({str(files['hidden'])!r}, 'sub/link') or os.chmod('sub/link', 0o777)")
    # fchmodat2(fd, "", mode, AT_EMPTY_PATH) on an O_PATH fd, which Landlock never checks
    steps["fchmodat2 of an O_PATH fd"] = (
        f"sc(452, os.open({str(files['hidden'])!r}, os.O_PATH), b'', 0o777, 0x1000)")
    results = attack(sandbox, steps)
    modes = {name: oct(path.stat().st_mode & 0o7777) for name, path in files.items()}
    modes["home"] = oct(sandbox.home.stat().st_mode & 0o7777)
    assert modes == {"hidden": "0o600", "held": "0o600", "outside": "0o600",
                     "home": "0o755"}, (modes, results)


def test_extended_attributes_of_files_the_grants_do_not_write(sandbox: Sandbox) -> None:
    files = _owned_files(sandbox)
    steps = {f"setxattr {name}": f"os.setxattr({str(path)!r}, 'user.lnk', b'planted')"
             for name, path in files.items()}
    results = attack(sandbox, steps)
    planted = {name: "user.lnk" in os.listxattr(path) for name, path in files.items()}
    assert not any(planted.values()), (planted, results)


@pytest.mark.usefixtures("inner")
@pytest.mark.parametrize("receiver", ["compiled", "python"])
def test_what_the_grants_write_keeps_its_metadata_calls(sandbox: Sandbox,
                                                        receiver: str) -> None:
    """The control of the ones above: in a written folder a tool's chmod (a script made
    executable, pip's and npm's) and its times (touch, tar) still work, by path, by fd,
    by /proc/self/fd (glibc's fchmodat fallback); a setuid bit never does; and an fd of a
    file only read is still refused. Both of the watch's receivers do them."""
    sub = sandbox.project / "build"
    sub.mkdir()
    (sub / "run.sh").write_text("#!/bin/sh\n")
    (sub / "run.sh").chmod(0o644)
    sandbox.chown()
    (sandbox.home / "notes.txt").write_text("the person's\n")
    sandbox.chown()
    script = str(sub / "run.sh")
    notes = str(sandbox.home / "notes.txt")
    results = attack(sandbox, {
        "chmod +x": f"os.chmod({script!r}, 0o700)",
        "chmod relative": "os.chmod('build/run.sh', 0o750)",
        "fchmod": f"os.fchmod(os.open({script!r}, os.O_RDONLY), 0o755)",
        "by /proc/self/fd": f"os.chmod('/proc/self/fd/%d' % os.open({script!r}, os.O_PATH),"
                            " 0o755)",
        "chmod u+s": f"os.chmod({script!r}, 0o4755)",
        "touch": f"os.utime({script!r}, (86400, 86400))",
        "futimens": f"os.utime(os.open({script!r}, os.O_RDONLY), (86400, 86400))",
        "fchmod of a read file": f"os.fchmod(os.open({notes!r}, os.O_RDONLY), 0o777)",
        "futimens of a read file": f"os.utime(os.open({notes!r}, os.O_RDONLY), (0, 0))",
        "a link's times": f"os.symlink('run.sh', {script!r} + '.link') or "
                          f"os.utime({script!r} + '.link', (0, 0), follow_symlinks=False)",
        "missing": "os.chmod('build/missing', 0o755)",
    }, env={"LNK_EXEC_WATCH": receiver})
    assert results == {
        "chmod +x": "OK", "chmod relative": "OK", "fchmod": "OK", "by /proc/self/fd": "OK",
        "chmod u+s": "EPERM", "touch": "OK", "futimens": "OK",
        "fchmod of a read file": "EPERM", "futimens of a read file": "EPERM",
        "a link's times": "OK", "missing": "ENOENT"}, results
    assert (sub / "run.sh").stat().st_mode & 0o7777 == 0o755
    assert (sub / "run.sh").stat().st_mtime == 86400
    assert os.lstat(sub / "run.sh.link").st_mtime == 0
    assert (sandbox.home / "notes.txt").stat().st_mode & 0o777 == 0o644


def test_metadata_calls_where_process_vm_readv_is_refused(sandbox: Sandbox) -> None:
    """Docker's default profile refuses process_vm_readv without CAP_SYS_PTRACE: the
    supervisor reads the caller's path from /proc/PID/mem instead, so chmod and touch
    still work in a written folder, and are still judged (support/no_vm_read.py)."""
    files = _owned_files(sandbox)
    (sandbox.project / "build").mkdir()
    (sandbox.project / "build" / "run.sh").write_text("#!/bin/sh\n")
    sandbox.chown()
    script = str(sandbox.project / "build" / "run.sh")
    steps = {"chmod +x": f"os.chmod({script!r}, 0o755)",
             "touch": f"os.utime({script!r}, (86400, 86400))",
             "vm_readv refused": "ok(libc.process_vm_readv(os.getpid(), 0, 0, 0, 0, 0))",
             "chmod hidden": f"os.chmod({str(files['hidden'])!r}, 0o777)"}
    done = subprocess.run(
        [*sandbox.who.prefix, sys.executable, str(SUPPORT / "no_vm_read.py"), LNK, "sandbox",
         "run", "--spec", str(sandbox.write_spec(WRITE)), "--yes", "--", PYTHON_INSIDE, "-c",
         ATTACK, json.dumps(steps)],
        cwd=sandbox.project, env=sandbox.env(OFF), capture_output=True, text=True,
        timeout=120)
    lines = done.stdout.splitlines()
    need(lines and lines[-1].startswith("RESULTS "), f"never ran inside:\n{done.stderr}")
    results = json.loads(lines[-1].removeprefix("RESULTS "))
    assert results == {"chmod +x": "OK", "touch": "OK", "vm_readv refused": "EPERM",
                       "chmod hidden": "EPERM"}, results
    assert (sandbox.project / "build" / "run.sh").stat().st_mode & 0o777 == 0o755
    assert files["hidden"].stat().st_mode & 0o777 == 0o600


@pytest.mark.requires_root
def test_root_changes_no_system_files_metadata(root_sandbox: Sandbox) -> None:
    """Run by root the sandbox is uid 0, the owner of the system's files: without the
    listener's judgement it made /etc world-writable, a program in /usr/local/bin
    writable by anyone, a root-only file readable by all."""
    secret = Path("/etc") / f"lnk-red-team-{os.getpid()}"
    program = Path("/usr/local/bin") / f"lnk-red-team-{os.getpid()}"
    secret.write_text("root's\n")
    secret.chmod(0o600)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    etc_mode = os.stat("/etc").st_mode
    try:
        results = attack(root_sandbox, {
            "/etc": "os.chmod('/etc', 0o777)",
            "a root-only file": f"os.chmod({str(secret)!r}, 0o644)",
            "a program": f"os.chmod({str(program)!r}, 0o777)",
            "its times": f"os.utime({str(program)!r}, (0, 0))",
            "an ACL": f"os.setxattr({str(secret)!r}, 'system.posix_acl_access', "
                      "bytes.fromhex('02000000010006000000000004000400000000002000040000000000'))",
        })
        assert os.stat("/etc").st_mode == etc_mode, results
        assert secret.stat().st_mode & 0o777 == 0o600, results
        assert program.stat().st_mode & 0o777 == 0o755, results
        assert program.stat().st_mtime != 0, results
        assert set(results.values()) <= {"EPERM", "ENOTSUP"}, results
    finally:
        os.chmod("/etc", etc_mode & 0o7777)
        secret.unlink()
        program.unlink()


@pytest.mark.usefixtures("inner")
def test_the_group_of_files_the_grants_do_not_write(sandbox: Sandbox) -> None:
    """chown without CAP_CHOWN still gives a file the owner has a group of the owner's
    own: a secret of 0640 given a group others are in is theirs to read."""
    files = _owned_files(sandbox)
    theirs = 0 if not sandbox.who.is_root else 65534
    for path in files.values():
        os.chown(path, sandbox.who.uid, theirs)
    steps = {f"chgrp {name}": f"os.chown({str(path)!r}, -1, {sandbox.who.gid})"
             for name, path in files.items()}
    steps["lchown"] = f"os.lchown({str(files['hidden'])!r}, -1, {sandbox.who.gid})"
    results = attack(sandbox, steps)
    groups = {name: path.stat().st_gid for name, path in files.items()}
    assert groups == dict.fromkeys(files, theirs), (groups, results)
    assert set(results.values()) == {"EPERM"}, results


def test_a_watch_on_a_hidden_folder(sandbox: Sandbox) -> None:
    """inotify tells the names made and opened in the folder it watches: a hidden one
    (~/.ssh, $LNK_HOME) or one that cannot be listed (home, holding them) is refused,
    a written one watched as ever (the control: its event read)."""
    _owned_files(sandbox)
    (sandbox.project / "sub").mkdir()
    sandbox.chown()
    add = "ok(libc.inotify_add_watch(watcher, {!r}.encode(), 0xfff))"
    results = attack(sandbox, {
        "watcher": "globals().__setitem__('watcher', libc.inotify_init1(0))",
        "~/.ssh": add.format(str(sandbox.home / ".ssh")),
        "a file in it": add.format(str(sandbox.home / ".ssh" / "id_ed25519")),
        "$LNK_HOME": add.format(str(sandbox.lnk_home)),
        "home": add.format(str(sandbox.home)),
        "/proc/self/cwd, home's": "os.chdir(os.environ['HOME']) or " + add.format(
            "/proc/self/cwd") + " and os.chdir(os.environ['PWD'])",
        "the written folder": add.format(str(sandbox.project / "sub")),
        "its event": f"open({str(sandbox.project / 'sub' / 'made')!r}, 'w').close() or "
                     "ok(os.read(watcher, 4096).find(b'made'))",
    })
    assert results == {"watcher": "OK", "~/.ssh": "EACCES", "a file in it": "EACCES",
                       "$LNK_HOME": "EACCES", "home": "EACCES",
                       "/proc/self/cwd, home's": "EACCES", "the written folder": "OK",
                       "its event": "OK"}, results


def test_times_of_files_the_grants_do_not_write(sandbox: Sandbox) -> None:
    files = _owned_files(sandbox)
    steps = {f"utime {name}": f"os.utime({str(path)!r}, (0, 0))" for name, path in files.items()}
    results = attack(sandbox, steps)
    moved = {name: path.stat().st_mtime == 0 for name, path in files.items()}
    assert not any(moved.values()), (moved, results)


def test_a_hard_link_of_a_read_file_into_a_written_folder(sandbox: Sandbox) -> None:
    """link() of a file the sandbox only reads into a folder it writes would give the
    file the written folder's rights (Landlock's REFER)."""
    notes = sandbox.home / "notes.txt"
    notes.write_text("the person's\n")
    (sandbox.project / "sub").mkdir()
    sandbox.chown()
    link = sandbox.project / "sub" / "notes"
    results = attack(sandbox, {
        "link": f"os.link({str(notes)!r}, {str(link)!r})",
        "read": f"open({str(notes)!r}).read()",
    })
    assert results["read"] == "OK"
    assert results["link"] in ("EXDEV", "EACCES"), results
    assert not link.exists()


@escaped("Landlock has no hook for stat or readlink: a hidden path's existence, size, "
         "times and link target are seen, given its name (nothing lists it); its extended "
         "attributes are no longer (test_red_team_nonamespace2)")
def test_what_stat_tells_of_a_hidden_file(sandbox: Sandbox) -> None:
    files = _owned_files(sandbox)
    os.symlink("/the/target/of/a/hidden/link", sandbox.home / ".ssh" / "link")
    sandbox.chown()
    results = attack(sandbox, {
        "stat": f"os.stat({str(files['hidden'])!r})",
        "readlink": f"os.readlink({str(sandbox.home / '.ssh' / 'link')!r})",
        "listxattr": f"os.listxattr({str(files['hidden'])!r})",
        "read": f"open({str(files['hidden'])!r}).read()",
    })
    assert results["read"] == "EACCES"
    assert {results["stat"], results["readlink"], results["listxattr"]} <= {
        "ENOENT", "EACCES"}, results


def test_an_o_path_fd_reopened_through_proc(sandbox: Sandbox) -> None:
    """O_PATH opens anything (Landlock never checks it); reopening that fd through
    /proc/self/fd is an open of the file itself, judged as one."""
    files = _owned_files(sandbox)
    (sandbox.home / "notes.txt").write_text("the person's\n")
    sandbox.chown()
    reopen = "os.open('/proc/self/fd/%d' % os.open({!r}, os.O_PATH), {})"
    results = attack(sandbox, {
        "hidden, read": reopen.format(str(files["hidden"]), "os.O_RDONLY"),
        "held, written": reopen.format(str(files["held"]), "os.O_WRONLY"),
        "read grant, written": reopen.format(str(sandbox.home / "notes.txt"), "os.O_WRONLY"),
        "outside, read": reopen.format(str(files["outside"]), "os.O_RDONLY"),
        "read grant, read": reopen.format(str(sandbox.home / "notes.txt"), "os.O_RDONLY"),
    })
    assert results.pop("read grant, read") == "OK"
    assert set(results.values()) == {"EACCES"}, results


def test_a_hard_link_of_a_held_dot_file_into_a_written_folder(sandbox: Sandbox) -> None:
    """A link made below the top, where everything is written, to a dot file held
    read-only at the top (.envrc, a hook's config) would write it there."""
    files = _owned_files(sandbox)
    (sandbox.project / "sub").mkdir()
    sandbox.chown()
    link = sandbox.project / "sub" / "envrc"
    results = attack(sandbox, {
        "link": f"os.link({str(files['held'])!r}, {str(link)!r})",
        "rename": f"os.rename({str(files['held'])!r}, {str(link)!r})",
        "write": f"open({str(files['held'])!r}, 'a').write('x')",
    })
    assert results["link"] in ("EXDEV", "EACCES") and results["rename"] in (
        "EXDEV", "EACCES") and results["write"] == "EACCES", results
    assert files["held"].read_text() == "the person's\n" and not link.exists()


# -- the person's other processes: same uid, no pid namespace ---------------------------------

def _nice_and_policy(pid: int) -> tuple[int, int]:
    """A process's nice value and scheduling policy, from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[16]), int(fields[38])


def test_the_scheduling_of_the_persons_processes(sandbox: Sandbox) -> None:
    """setpriority, sched_setscheduler, sched_setaffinity and ioprio_set take any process
    of the uid with no capability (run by root, the kernel's cap_safe_nice keeps a victim
    holding capabilities the sandbox has not): only the caller's own is left."""
    other = victim(sandbox)
    try:
        pid = other.pid
        before = _nice_and_policy(pid)  # the runner's own (CI may run the suite niced)
        results = attack(sandbox, {
            "renice": f"os.setpriority(os.PRIO_PROCESS, {pid}, 19)",
            "renice the user": f"os.setpriority(os.PRIO_USER, {sandbox.who.uid}, 18)",
            "idle": f"os.sched_setscheduler({pid}, os.SCHED_IDLE, os.sched_param(0))",
            "pin": f"os.sched_setaffinity({pid}, {{0}})",
            "io idle": f"sc(251, 1, {pid}, 3 << 13)",
            "io idle, the user": f"sc(251, 3, {sandbox.who.uid}, 3 << 13)",
        })
        assert _nice_and_policy(pid) == before, (before, results)
        assert os.sched_getaffinity(pid) == os.sched_getaffinity(0), results
        assert set(results.values()) == {"EPERM"}, results
    finally:
        other.kill()
        other.wait()


def test_the_supervisors_proc_memory_signals_and_ptrace(sandbox: Sandbox) -> None:
    """The supervisor is the sandbox's parent, with its uid (its memory holds the run's
    judge, its fds the listener and the report): Landlock refuses ptrace access to a
    process outside its domain, and its scope (ABI 6) the signals."""
    results = attack(sandbox, {
        "environ": "open(f'/proc/{os.getppid()}/environ', 'rb').read()",
        "mem": "open(f'/proc/{os.getppid()}/mem', 'rb')",
        "cwd": "os.readlink(f'/proc/{os.getppid()}/cwd')",
        "root": "os.listdir(f'/proc/{os.getppid()}/root/')",
        "an fd": "os.readlink(f'/proc/{os.getppid()}/fd/0')",
        "maps": "open(f'/proc/{os.getppid()}/maps').read()",
        "oom_score_adj": "open(f'/proc/{os.getppid()}/oom_score_adj', 'w').write('1000')",
        "kill": "os.kill(os.getppid(), 0)",
        "SIGSTOP": "os.kill(os.getppid(), 19)",
        "ptrace": "sc(101, 16, os.getppid(), 0, 0)",
        "pidfd_getfd": "sc(438, sc(434, os.getppid(), 0), 0, 0)",
        "get_robust_list": "sc(274, os.getppid(), ctypes.byref(ctypes.c_void_p()), "
                           "ctypes.byref(ctypes.c_size_t()))",
        "prlimit": "sc(302, os.getppid(), 7, 0, ctypes.byref((ctypes.c_ulong * 2)()))",
    })
    assert all(r in ("EACCES", "EPERM") for r in results.values()), results


def test_the_supervisors_other_children_are_not_reached(sandbox: Sandbox) -> None:
    """The supervisor's other children, the sandbox's siblings: its keeper (outside the
    domain) and the reaper the inner left in the sandbox's domain, which the command's
    nested domain may neither signal nor trace (it would end the reaper, then leave)."""
    results = attack(sandbox, {
        "siblings": "globals().__setitem__('siblings', [int(n) for n in os.listdir('/proc') "
                    "if n.isdigit() and int(n) != os.getpid() "
                    "and parent_of(n) == os.getppid()])",
        "two of them": "ok(len(siblings) - 2)",
        **{f"{what} {i}": f"{call} if len(siblings) > {i} else None"
           for i in range(2)
           for what, call in (("SIGKILL", f"os.kill(siblings[{i}], 9)"),
                              ("SIGSTOP", f"os.kill(siblings[{i}], 19)"),
                              ("ptrace", f"sc(101, 16, siblings[{i}], 0, 0)"),
                              ("mem", f"open(f'/proc/{{siblings[{i}]}}/mem', 'rb')"),
                              ("renice", f"os.setpriority(0, siblings[{i}], 19)"))},
    })
    assert results.pop("siblings") == "OK" and results.pop("two of them") == "OK", results
    assert set(results.values()) <= {"EPERM", "EACCES"}, results


def test_a_process_of_the_person_is_not_reached(sandbox: Sandbox) -> None:
    other = victim(sandbox)
    try:
        pid = other.pid
        results = attack(sandbox, {
            "environ": f"open('/proc/{pid}/environ', 'rb').read()",
            "cwd": f"os.readlink('/proc/{pid}/cwd')",
            "ptrace": f"sc(101, 16, {pid}, 0, 0)",
            "SIGKILL": f"os.kill({pid}, 9)",
            "SIGKILL to every process": "os.kill(-1, 9)",
            "pidfd SIGKILL": f"sc(424, sc(434, {pid}, 0), 9, 0, 0)",
        })
        # kill(-1) answers 0 when every process it tried refused it (EPERM is not said)
        results.pop("SIGKILL to every process")
        assert set(results.values()) <= {"EACCES", "EPERM"}, results
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


# -- the network and the kernel's other doors --------------------------------------------------

def test_no_socket_family_in_network_none(sandbox: Sandbox) -> None:
    """Landlock's network rules cover TCP only: every other family (UDP, ping, raw,
    netlink, packet, vsock, bluetooth, the crypto API) is the filter's."""
    families = {
        "udp": "socket.AF_INET, socket.SOCK_DGRAM, 0",
        "udp6": "socket.AF_INET6, socket.SOCK_DGRAM, 0",
        "ping": "socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP",
        "raw": "socket.AF_INET, socket.SOCK_RAW, 1",
        "netlink route": "socket.AF_NETLINK, socket.SOCK_RAW, 0",
        "netlink uevent": "socket.AF_NETLINK, socket.SOCK_DGRAM, 15",
        "packet": "17, socket.SOCK_DGRAM, 0",
        "vsock": "40, socket.SOCK_STREAM, 0",
        "bluetooth": "31, socket.SOCK_RAW, 1",
        "alg": "38, socket.SOCK_SEQPACKET, 0",
        "unix datagram": "socket.AF_UNIX, socket.SOCK_DGRAM, 0",
        "tipc": "30, socket.SOCK_RDM, 0",
    }
    results = attack(sandbox, {name: f"socket.socket({args}).close()"
                               for name, args in families.items()}, spec='[files]\n')
    assert all(r in ("EACCES", "EAFNOSUPPORT", "EPROTONOSUPPORT") for r in results.values()), \
        results


def test_the_kernels_less_trodden_calls(sandbox: Sandbox) -> None:
    results = attack(sandbox, {
        "io_uring_setup": "sc(425, 1, ctypes.byref((ctypes.c_char * 120)()))",
        "userfaultfd": "sc(323, 0)",
        "bpf": "sc(321, 0, 0, 0)",
        "keyctl": "sc(250, 0, -1, 0)",
        "add_key": "sc(248, b'user', b'k', b'v', 1, -2)",
        "perf_event_open": "sc(298, ctypes.byref((ctypes.c_char * 128)()), 0, -1, -1, 0)",
        "personality": "sc(135, 0x0040000)",
        "unshare": "sc(272, 0x10000000)",
        "mount": "sc(165, b'none', b'/tmp', b'tmpfs', 0, 0)",
        "open_by_handle_at": "sc(304, -100, 0, 0)",
        "shmget": "sc(29, 0, 4096, 0o1600)",
        "mq_open": "sc(240, b'/lnk', 0o100, 0o600, 0)",
        "TIOCSTI": "sc(16, 0, 0x5412, ctypes.byref(ctypes.c_char(b'x')))",
        "TIOCLINUX": "sc(16, 0, 0x541C, ctypes.byref(ctypes.c_char(b'\\x02')))",
    }, spec='[files]\n')
    assert all(r in ("EPERM", "ENOSYS", "EACCES", "EINVAL") for r in results.values()), results
    assert results["io_uring_setup"] == "EPERM" and results["userfaultfd"] == "EPERM"
    assert results["TIOCSTI"] == "EPERM" and results["shmget"] == "ENOSYS"


def test_proc_sys_cgroups_and_devices(sandbox: Sandbox) -> None:
    """Run by root the sandbox is uid 0, the owner of /proc/sys, the cgroup files and
    /dev's nodes: Landlock holds them (only its own /proc/PID is written)."""
    results = attack(sandbox, {
        "proc/sys": "open('/proc/sys/kernel/core_pattern', 'w').write('|/bin/true')",
        "sysrq": "open('/proc/sysrq-trigger', 'w').write('h')",
        "own cgroup": "open('/sys/fs/cgroup' + open('/proc/self/cgroup').read()"
                      ".splitlines()[-1].split(':', 2)[2].rstrip('/') + '/cgroup.procs', "
                      "'w').write('0')",
        "top cgroup": "open('/sys/fs/cgroup/cgroup.procs', 'w').write(str(os.getpid()))",
        "/dev/mem": "os.open('/dev/mem', os.O_RDONLY)",
        "/dev/kmsg": "os.open('/dev/kmsg', os.O_WRONLY)",
        "/dev/shm": "os.open('/dev/shm/lnk', os.O_CREAT | os.O_WRONLY)",
        "/dev/tty0": "os.open('/dev/tty1', os.O_WRONLY)",
        "mknod": "os.mknod('sub/disk', 0o600 | 0o060000, os.makedev(8, 0))",
        "/tmp": "os.open('/tmp/lnk-red-team-30', os.O_CREAT | os.O_WRONLY)",
    }, spec='[files]\nwrite = ["."]\nwrite_dot_files = ["."]\n')
    assert all(r in ("EACCES", "EPERM", "ENOENT") for r in results.values()), results
    assert results["proc/sys"] == "EACCES" and results["/tmp"] == "EACCES", results
    assert not Path("/tmp/lnk-red-team-30").exists()


def test_other_runs_folders_and_lnk_home(sandbox: Sandbox) -> None:
    """TMPDIR names a folder of this run's in $LNK_HOME/run: another run's there (its
    name guessed), $LNK_HOME's own files and its run folder are not the sandbox's."""
    first = sandbox.run("sh", "-c", "echo $TMPDIR", env=OFF)
    need(first.returncode == 0, first.stderr)
    run_folder = Path(first.stdout.strip()).parent
    other = run_folder / "tmp-1-other"
    other.mkdir()
    sandbox.chown()
    results = attack(sandbox, {
        "own TMPDIR": "open(os.environ['TMPDIR'] + '/f', 'w').write('x')",
        "another run's": f"open({str(other / 'f')!r}, 'w').write('x')",
        "list the runs": f"os.listdir({str(run_folder)!r})",
        "a run folder of its own": f"os.mkdir({str(run_folder / 'tmp-2-mine')!r})",
        "LNK_HOME": f"os.listdir({str(sandbox.lnk_home)!r})",
        "checks": f"open({str(sandbox.lnk_home / 'cache' / 'checks.json')!r})",
    })
    assert results.pop("own TMPDIR") == "OK"
    assert all(r in ("EACCES", "ENOENT") for r in results.values()), results
    assert not (other / "f").exists()


SWEEP = r"""
import os, sys
print("STARTED", flush=True)
skip = {"/proc", "/sys", "/dev"}
own = {os.path.realpath(p) for p in sys.argv[1:]}
made = []
def sweep(folder, depth):
    if folder in skip or any(folder == p or folder.startswith(p + "/") for p in own):
        return
    name = os.path.join(folder, ".lnk-red-team-sweep")
    try:
        os.close(os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        made.append(folder)
        os.unlink(name)
    except OSError:
        pass
    if depth == 0:
        return
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            sweep(entry.path, depth - 1)
sweep("/", 3)
print("MADE", made, flush=True)
"""


def test_nothing_but_the_grants_is_written(sandbox: Sandbox) -> None:
    """Every folder of the machine three deep (a system one, another person's, the
    host's /run, /var/tmp, $LNK_HOME's): a file is made in none but the grants'. Run by
    root the sandbox is their owner; a person owns their home."""
    (sandbox.home / ".config").mkdir()
    sandbox.chown()
    done = sandbox.run(PYTHON_INSIDE, "-c", SWEEP, str(sandbox.project), spec=WRITE, env={
        **OFF}, timeout=300)
    need(done.stdout.startswith("STARTED"), f"never started inside:\n{done.stderr}")
    made = next(line for line in done.stdout.splitlines() if line.startswith("MADE "))
    assert made == "MADE []", made
    # The control: the same sweep outside, as the same user, makes files (in /tmp at
    # least, and the home).
    outside = subprocess.run([*sandbox.who.prefix, PYTHON_INSIDE, "-c", SWEEP,
                              str(sandbox.project)], capture_output=True, text=True,
                             timeout=300)
    assert "'/tmp'" in outside.stdout and f"'{sandbox.home}'" in outside.stdout, \
        outside.stdout[-2000:]


def test_no_fd_of_the_supervisor_is_inherited(sandbox: Sandbox) -> None:
    done = sandbox.run(PYTHON_INSIDE, "-c", "import os; print('STARTED', sorted("
                       "int(n) for n in os.listdir('/proc/self/fd')))", env=OFF)
    need(done.stdout.startswith("STARTED"), done.stderr)
    assert done.stdout.split(None, 1)[1].strip() == "[0, 1, 2, 3]", done.stdout  # 3: listing


# -- what outlives a killed lnk-sandbox --------------------------------------------------------

def _leaves_the_group(box: Sandbox) -> None:
    spec = box.write_spec('[files]\nwrite = ["."]\nwrite_dot_files = ["."]\n')
    run = subprocess.Popen(
        [*box.who.prefix, LNK, "sandbox", "run", "--spec", str(spec), "--yes", "--", "sh",
         "-c", "setsid sh -c 'echo $$ > left.pid; exec sleep 300' & sleep 300"],
        cwd=box.project, env=box.env(OFF), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    pid_file = box.project / "left.pid"
    end = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < end:
        time.sleep(0.05)
    need(pid_file.exists(), "the sandbox never started")
    left = int(pid_file.read_text())
    need(alive({left}), "the process that left the group is not running")
    try:
        run.send_signal(signal.SIGKILL)
        run.wait()
        assert not wait_gone({left}, timeout=10), "a process that left the sandbox's " \
            "group outlived its killed lnk-sandbox"
    finally:
        try:
            os.kill(left, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _hopper(tag: str, count: int) -> str:
    """`count` daemons that each leave their session and fork and exit in a loop (a new
    pid each turn), then STARTED and half a second; `tag` names them, this run's only."""
    return (f"import os, sys, time\n{tag} = {count}\n"
            f"for _ in range({tag}):\n"
            "    if os.fork() == 0:\n"
            "        os.setsid()\n"
            "        while True:\n"
            "            try:\n"
            "                if os.fork():\n"
            "                    os._exit(0)\n"
            "            except OSError:\n"
            "                time.sleep(0.001)\n"
            "print('STARTED', flush=True)\n"
            "time.sleep(0.5)\n")


def _hoppers(box: Sandbox, tag: str) -> list[str]:
    """The hoppers of `tag` running: the sandbox's python, never the lnk command line
    that carries the same script as an argument."""
    return subprocess.run(["pgrep", "-u", str(box.who.uid), "-f",
                           f"^{re.escape(PYTHON_INSIDE)} -c .*{tag}"],
                          capture_output=True, text=True).stdout.split()


def test_a_process_hopping_pids_outlives_no_run(sandbox: Sandbox) -> None:
    """A daemon that leaves its session and forks and exits in a loop (a new pid each
    turn, its parent gone before the supervisor's round sees it) is still caught by
    the end of the run: the supervisor is the subreaper of every orphan."""
    tag = f"hopper_{secrets.token_hex(6)}"  # this run's only: another suite's are not
    done = sandbox.run(PYTHON_INSIDE, "-c", _hopper(tag, 4), env=OFF, timeout=120)
    need(done.stdout.startswith("STARTED"), f"never started inside:\n{done.stderr}")
    time.sleep(1)
    assert _hoppers(sandbox, tag) == []


def test_pid_hoppers_are_ended_at_once_so_a_kill_during_the_end_leaves_none(
        sandbox: Sandbox) -> None:
    """Sixteen daemons forking and exiting in a loop, then lnk-sandbox SIGKILLed just
    after the command ended, while it ends what the sandbox left. The end chased them
    one pid at a time (seconds, under load tens of seconds) after killing the reaper
    among the rest, so a lnk killed meanwhile left them running for good (found on this
    machine: a hopper of a test run hours before, still forking). Now the reaper's
    kill(-1), scoped to the sandbox, ends them in one call first."""
    tag = f"hopper_{secrets.token_hex(6)}"
    run = subprocess.Popen([*sandbox.who.prefix, LNK, "sandbox", "run", "--", PYTHON_INSIDE,
                            "-c", _hopper(tag, 16)], cwd=sandbox.project,
                           env=sandbox.env(OFF), stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
    try:
        assert run.stdout is not None
        need(run.stdout.readline().startswith("STARTED"), "the hoppers never started")
        need(_hoppers(sandbox, tag), "no hopper is running")
        time.sleep(0.7)  # the command has ended: lnk-sandbox is ending what it left
        run.send_signal(signal.SIGKILL)
        run.wait()
        time.sleep(2)  # the keeper's and the reaper's turn, had they one
        assert _hoppers(sandbox, tag) == []
    finally:
        close_pipes(run)
        for _ in range(20):  # never left to the machine, whatever the outcome
            if not _hoppers(sandbox, tag):
                break
            subprocess.run([*sandbox.who.prefix, "pkill", "-9", "-u", str(sandbox.who.uid),
                            "-f", f"^{re.escape(PYTHON_INSIDE)} -c .*{tag}"],
                           capture_output=True)


@pytest.mark.requires_root
def test_a_process_that_left_the_group_outlives_a_killed_run_by_root(
        root_sandbox: Sandbox) -> None:
    """Run by root, the run's cgroup holds it: the keeper kills the cgroup."""
    _leaves_the_group(root_sandbox)


@pytest.mark.usefixtures("inner")
def test_a_process_that_left_the_group_outlives_a_killed_run_by_a_person(
        tmp_path: Path) -> None:
    """The reaper left in the sandbox's Landlock domain (inner/reaper.py, each inner's)
    ends it when the keeper's kill of the process group misses it."""
    if os.geteuid() != 0:
        pytest.skip("needs the unprivileged test user, made by root")
    from support import capabilities as caps
    from support.sandbox import Who

    if (reason := caps.test_user_problem()) is not None:
        pytest.skip(reason)
    box = Sandbox.create(Who.test_user(), tmp_path)
    try:
        _leaves_the_group(box)
    finally:
        box.cleanup()
