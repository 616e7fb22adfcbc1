#!/usr/bin/env python3
"""The macOS probe: what a real Mac does with the rules lnk-sandbox's profile relies on.

Run it on a Mac, from the repository, as the person who will use lnk-sandbox (not as
root), in about a minute, with a Python 3.11 or newer:

    python3 -m venv .venv && .venv/bin/pip install -q -e .
    .venv/bin/python tools/macos_probe.py

It prints, for each probe, what was expected and what happened, and writes the same as
JSON (macos-probe-<version>-<time>.json in the working folder, or --out FILE): send that
file back. Nothing it does outlives it: every file is made in a temp folder of its own,
removed at the end; no setting of the Mac is changed; nothing asks for a password.

Two kinds of probe:
- Seatbelt itself: tiny profiles run with /usr/bin/sandbox-exec, each settling one claim
  the profile compiler and the test model (tests/unit/macos_seatbelt.py) rest on;
- lnk-sandbox: `python -m supervisor run` on small specs, each a command that used to
  break or leak (docs/macos.md has each defect), with a home folder of its own.
A probe whose tool is missing (git, swift, node) says "skipped" and why. "info" probes
record what happened where no outcome is assumed. `--list` prints the probes and exits
(on any OS).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SANDBOX_EXEC = "/usr/bin/sandbox-exec"
LOG = "/usr/bin/log"
EPERM_TEXT = "Operation not permitted"
PATH = "/usr/bin:/bin:/usr/sbin:/sbin:/opt/homebrew/bin:/usr/local/bin"


@dataclass
class Outcome:
    """What a probe saw, and whether it is what was expected (None: information only)."""

    happened: str
    as_expected: bool | None
    detail: dict[str, object] = field(default_factory=dict)


@dataclass
class Probe:
    id: str
    question: str
    expected: str
    run: Callable[[Workspace], Outcome]
    review: str = ""  # the review's defect or section it settles


@dataclass
class Result:
    id: str
    question: str
    expected: str
    happened: str
    verdict: str  # "as expected", "NOT as expected", "info", "skipped", "error"
    review: str
    seconds: float
    detail: dict[str, object]


class Skip(Exception):
    """A probe that cannot run here (a tool is missing); the message says which."""


# -- running things --------------------------------------------------------------------


@dataclass
class Ran:
    status: int
    out: str
    err: str

    @property
    def refused(self) -> bool:
        return self.status != 0 and EPERM_TEXT in (self.out + self.err)

    def short(self) -> str:
        said = " ".join((self.err or self.out).split())[:160]
        return f"exit {self.status}" + (f": {said}" if said else "")


def run(argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
        timeout: float = 20.0, stdin: str | None = None) -> Ran:
    try:
        done = subprocess.run(argv, env=env, cwd=cwd, input=stdin, capture_output=True,
                              text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return Ran(-1, "", "timed out")
    except OSError as err:
        return Ran(-2, "", f"cannot start {argv[0]}: {err.strerror}")
    return Ran(done.returncode, done.stdout, done.stderr)


def seatbelt(profile: str, argv: list[str], **kw: object) -> Ran:
    """argv under a profile of its own (sandbox-exec -p)."""
    return run([SANDBOX_EXEC, "-p", "(version 1)\n" + profile, "--", *argv], **kw)  # type: ignore[arg-type]


def need(tool: str) -> str:
    found = shutil.which(tool, path=PATH)
    if found is None:
        raise Skip(f"{tool} is not installed")
    if found.startswith("/usr/bin/") and _is_xcrun_stub(found) and run(
            ["/usr/bin/xcode-select", "-p"]).status != 0:
        raise Skip(f"{tool} is an xcrun stub and no developer tools are installed")
    return found


def _is_xcrun_stub(path: str) -> bool:
    try:
        return b"/usr/lib/libxcselect.dylib" in Path(path).read_bytes()[:4 << 20]
    except OSError:
        return False


class Workspace:
    """A temp folder of the probe's own: a home, a project, the specs."""

    def __init__(self) -> None:
        self.root = Path(os.path.realpath(tempfile.mkdtemp(prefix="lnk-probe-")))
        self.home = self.root / "home"
        self.home.mkdir()
        (self.home / ".ssh").mkdir()
        (self.home / ".ssh" / "config").write_text("Host probe\n")
        (self.home / ".gitconfig").write_text("[user]\n\tname = Probe\n")
        (self.home / "plain").mkdir()
        (self.home / ".colima").mkdir()
        self.project = self.root / "project"
        self.project.mkdir()
        self.listeners: list[socket.socket] = []

    def env(self, **extra: str) -> dict[str, str]:
        return {"HOME": str(self.home), "LNK_HOME": str(self.home / ".lnk"), "PATH": PATH,
                "PYTHONPATH": str(REPO), "LANG": "en_US.UTF-8", **extra}

    def spec(self, name: str, text: str) -> str:
        path = self.root / f"{name}.toml"
        path.write_text(text)
        return str(path)

    def lnk(self, argv: list[str], *, spec: str | None = None, verb: str = "run",
            cwd: Path | None = None, timeout: float = 30.0, wrap: list[str] | None = None
            ) -> Ran:
        """`python -m supervisor VERB [--spec S] --yes -- argv`, from the project."""
        head = [sys.executable, "-m", "supervisor", verb]
        if spec is not None:
            head += ["--spec", spec]
        if verb in ("run", "learn"):
            head.append("--yes")
        return run([*(wrap or []), *head, "--", *argv], env=self.env(),
                   cwd=str(cwd or self.project), timeout=timeout)

    def listen(self, path: Path) -> None:
        """A unix socket listening at `path`, accepting in a thread until the end."""
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(path))
        server.listen(4)
        self.listeners.append(server)

        def accept() -> None:
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                conn.close()

        threading.Thread(target=accept, daemon=True).start()

    def git_repo(self, folder: Path) -> None:
        git = need("git")
        for argv in (["init", "-q"], ["config", "user.email", "p@example.org"],
                     ["commit", "-q", "--allow-empty", "-m", "probe"]):
            ran = run([git, *argv], cwd=str(folder), env=self.env())
            if ran.status != 0:
                raise Skip(f"git {argv[0]} failed outside the sandbox: {ran.short()}")

    def close(self) -> None:
        for server in self.listeners:
            server.close()
        shutil.rmtree(self.root, ignore_errors=True)


def expect(condition: bool, happened: str, **detail: object) -> Outcome:
    return Outcome(happened, condition, dict(detail))


def info(happened: str, **detail: object) -> Outcome:
    return Outcome(happened, None, dict(detail))


# -- Seatbelt itself -------------------------------------------------------------------


def s_nested_subpaths(ws: Workspace) -> Outcome:
    a = ws.root / "A"
    (a / "B" / "C").mkdir(parents=True)
    for folder in (a, a / "B", a / "B" / "C"):
        (folder / "x").write_text("x")
    profile = (f'(allow default)(deny file-read-data (subpath "{a}"))'
               f'(allow file-read-data (subpath "{a}/B"))(deny file-read-data (subpath "{a}/B/C"))')
    seen = ["refused" if seatbelt(profile, ["/bin/cat", str(f / "x")]).refused else "read"
            for f in (a, a / "B", a / "B" / "C")]
    return expect(seen == ["refused", "read", "refused"], ", ".join(seen))


def s_specific_before_wildcard(ws: Workspace) -> Outcome:
    d = ws.root / "D"
    d.mkdir()
    (d / "x").write_text("x")
    profile = f'(allow default)(deny file-write-unlink (literal "{d}/x"))' \
              f'(allow file-write* (subpath "{d}"))'
    rm = seatbelt(profile, ["/bin/rm", str(d / "x")])
    write = seatbelt(profile, ["/bin/sh", "-c", f"echo y > {d}/x"])
    return expect(rm.refused and write.status == 0,
                  f"rm: {rm.short()}; write: {write.short()}")


def s_unfiltered_allow_after_filtered_deny(ws: Workspace) -> Outcome:
    f = ws.root / "secret"
    f.write_text("s")
    ran = seatbelt(f'(allow default)(deny file-read-data (literal "{f}"))'
                   "(allow file-read-data)", ["/bin/cat", str(f)])
    return expect(ran.refused, "refused" if ran.refused else f"read ({ran.short()})")


def s_unfiltered_deny_after_filtered_allow(ws: Workspace) -> Outcome:
    f, g = ws.root / "open", ws.root / "other"
    f.write_text("o")
    g.write_text("g")
    profile = f'(allow default)(allow file-read-data (literal "{f}"))(deny file-read-data)'
    one, two = (seatbelt(profile, ["/bin/cat", str(p)]) for p in (f, g))
    seen = ["refused" if r.refused else "read" for r in (one, two)]
    return expect(seen == ["read", "refused"], f"the allowed file {seen[0]}, another {seen[1]}")


SEM_SCRIPT = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.sem_open.restype = ctypes.c_void_p
libc.sem_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_uint]
name = sys.argv[1].encode()
flags = os.O_CREAT if sys.argv[2] == "create" else 0
sem = libc.sem_open(name, flags, 0o600, 1)
if sem in (None, ctypes.c_void_p(-1).value):
    print("errno", ctypes.get_errno()); sys.exit(3)
if sys.argv[2] == "create":
    libc.sem_unlink(name)
print("ok")
"""

MP_SCRIPT = r"""
import multiprocessing as m
def work(lock, q):
    with lock:
        q.put(1)
if __name__ == "__main__":
    m.set_start_method("spawn")
    lock, q = m.Lock(), m.Queue()
    p = m.Process(target=work, args=(lock, q)); p.start(); p.join(20)
    print("ok" if q.get(timeout=5) == 1 else "no")
"""


def s_semaphores(ws: Workspace) -> Outcome:
    """The profile's rule: semaphores the sandbox's own processes made, none other."""
    profile = ("(allow default)(deny ipc-posix-sem)"
               "(allow ipc-posix-sem (semaphore-owner same-sandbox))")
    own = seatbelt(profile, [sys.executable, "-c", MP_SCRIPT], timeout=60)
    name = f"/lnkprobe{os.getpid()}"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.sem_open.restype = ctypes.c_void_p
    libc.sem_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_uint]
    outside = libc.sem_open(name.encode(), os.O_CREAT, 0o600, 1)
    try:
        other = seatbelt(profile, [sys.executable, "-c", SEM_SCRIPT, name, "open"])
    finally:
        if outside:
            libc.sem_unlink(name.encode())
    good = own.status == 0 and "ok" in own.out and other.status != 0
    return expect(good, f"multiprocessing inside: {own.short()}; a semaphore made "
                  f"outside, opened inside: {other.out.strip() or other.short()}",
                  multiprocessing=own.out + own.err, other=other.out + other.err)


PIDINFO = r"""
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(136)
n = libc.proc_pidinfo(int(sys.argv[1]), 3, ctypes.c_uint64(0), buf, 136)
print(n, ctypes.get_errno())
"""


def s_deny_default_stragglers(ws: Workspace) -> Outcome:
    """(deny default) alone: process-info*, nvram*, iokit-get-properties still allowed?"""
    base = ('(deny default)(allow file-read* file-map-executable process-exec* process-fork '
            'sysctl-read mach-lookup)')
    info_ran = seatbelt(base, [sys.executable, "-c", PIDINFO, "1"])
    nvram = seatbelt(base, ["/usr/sbin/nvram", "-p"])
    answered = info_ran.out.split()[:1] == ["136"]
    return expect(answered, f"proc_pidinfo(1): {info_ran.out.strip() or info_ran.short()}; "
                  f"nvram -p: {nvram.short()}")


def s_subpath_creation(ws: Workspace) -> Outcome:
    x = ws.root / "made"
    ran = seatbelt(f'(allow default)(deny file-write* (subpath "{x}"))', ["/bin/mkdir", str(x)])
    return info("mkdir allowed" if ran.status == 0 else f"mkdir refused ({ran.short()})")


def s_case(ws: Workspace) -> Outcome:
    d = ws.root / "case"
    (d / ".git").mkdir(parents=True)
    (d / ".git" / "config").write_text("c")
    seen = {}
    for kind in ("literal", "subpath"):
        profile = f'(allow default)(deny file-read-data ({kind} "{d}/.git/config"))'
        seen[f"{kind} deny, read .GIT/config"] = seatbelt(
            profile, ["/bin/cat", f"{d}/.GIT/config"]).refused
    missing = ws.root / "case2"
    missing.mkdir()
    for kind in ("literal", "subpath"):
        profile = f'(allow default)(deny file-write* ({kind} "{missing}/.git"))'
        seen[f"{kind} deny of missing .git, mkdir .GIT"] = seatbelt(
            profile, ["/bin/mkdir", f"{missing}/.GIT"]).refused
        shutil.rmtree(missing / ".GIT", ignore_errors=True)
    profile = f'(allow default)(deny file-read-data (regex #"^{d}/\\.git/config$"))'
    seen["regex deny, read .GIT/config"] = seatbelt(
        profile, ["/bin/cat", f"{d}/.GIT/config"]).refused
    text = "; ".join(f"{k}: {'refused' if v else 'allowed'}" for k, v in seen.items())
    return info(text, **{k: v for k, v in seen.items()})


def s_hard_link_operation(ws: Workspace) -> Outcome:
    d = ws.root / "links"
    d.mkdir()
    (d / "a").write_text("a")
    profile = f'(deny default)(allow file-read* file-map-executable process-exec* ' \
              f'process-fork sysctl-read)(allow file-write* (subpath "{d}"))'
    ln = seatbelt(profile, ["/bin/ln", str(d / "a"), str(d / "b")])
    return expect(ln.refused, f"ln under file-write* alone: {ln.short()}")


SANDBOXED = r"""
import ctypes, os
libc = ctypes.CDLL(None)
libc.sandbox_check.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
print(libc.sandbox_check(os.getpid(), None, 0))
"""


def s_sandbox_check(ws: Workspace) -> Outcome:
    outside = run([sys.executable, "-c", SANDBOXED])
    inside = seatbelt("(allow default)", [sys.executable, "-c", SANDBOXED])
    good = outside.out.strip() == "0" and inside.out.strip() not in ("", "0")
    return expect(good, f"outside: {outside.out.strip()}, inside: {inside.out.strip()}")


def s_nested(ws: Workspace) -> Outcome:
    ran = seatbelt("(allow default)", [SANDBOX_EXEC, "-p", "(version 1)(allow default)",
                                       "--", "/usr/bin/true"])
    return expect(ran.status == 71 and "sandbox_apply" in ran.err, ran.short())


def s_exec_refused(ws: Workspace) -> Outcome:
    ran = seatbelt('(allow default)(deny process-exec* (literal "/usr/bin/true"))',
                   ["/usr/bin/true"])
    return info(f"sandbox-exec, its exec refused: {ran.short()}")


def s_unknown_operation(ws: Workspace) -> Outcome:
    ran = seatbelt("(allow default)(deny no-such-operation)", ["/usr/bin/true"])
    return info(f"a profile naming an unknown operation: {ran.short()}")


def s_operations_the_profile_names(ws: Workspace) -> Outcome:
    """Every operation the profile names is one this macOS knows."""
    profile = ("(deny default)(deny process-info* nvram* iokit-get-properties)"
               "(deny file-write-setugid)(deny file-link)(deny ipc-posix-shm)"
               "(deny ipc-posix-sem)(allow ipc-posix-sem (semaphore-owner same-sandbox))"
               '(allow sysctl-read (sysctl-name-prefix "kern.proc.all"))'
               "(allow process-exec* file-read* file-map-executable file-test-existence)"
               '(allow file-read* file-write-data file-ioctl (require-all (regex #"^/dev/'
               'ttys[0-9]+$") (extension "com.apple.sandbox.pty")))')
    ran = seatbelt(profile, ["/usr/bin/true"])
    return expect(ran.status == 0, ran.short())


# -- the system log ----------------------------------------------------------------------


class Stream:
    """`log stream` with lnk-sandbox's own predicate, its records kept."""

    def __init__(self) -> None:
        sys.path.insert(0, str(REPO))
        from supervisor.macos.logwatch import log_stream_argv

        self.records: list[tuple[float, dict[str, object]]] = []
        self.lines: list[str] = []
        self.started = time.monotonic()
        self.banner_at: float | None = None
        self.process = subprocess.Popen(log_stream_argv(LOG), stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            if line.startswith("Filtering the log data") and self.banner_at is None:
                self.banner_at = time.monotonic()
            if line.startswith("{"):
                try:
                    self.records.append((time.monotonic(), json.loads(line)))
                except ValueError:
                    pass

    def find(self, text: str, wait: float) -> dict[str, object] | None:
        end = time.monotonic() + wait
        while time.monotonic() < end:
            for _, record in self.records:
                if text in str(record.get("eventMessage", "")):
                    return record
            time.sleep(0.02)
        return None

    def close(self) -> int | None:
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
        return self.process.returncode


def _admin() -> bool:
    return "admin" in run(["/usr/bin/id", "-Gn"]).out.split()


def l_report_fields(ws: Workspace) -> Outcome:
    if not _admin():
        raise Skip("this account is not an admin: log stream is refused (see the next probe)")
    from supervisor.macos.logparse import parse_record

    stream = Stream()
    try:
        record = None
        for _ in range(25):
            probe = subprocess.Popen([SANDBOX_EXEC, "-p", '(version 1)(allow default)'
                                      '(allow process-exec* (literal "/usr/bin/true") '
                                      "(with report))", "--", "/usr/bin/true"])
            probe.wait()
            record = stream.find(f"({probe.pid}) allow process-exec* /usr/bin/true", 0.4)
            if record is not None:
                break
        if record is None:
            return expect(False, "no report of a (with report) exec within 10 s",
                          lines=stream.lines[:20])
        fields = {k: record.get(k) for k in ("processID", "userID", "processImagePath",
                                             "senderImagePath", "messageType", "subsystem")}
        parsed = parse_record(json.dumps(record))
        return expect(parsed is not None, f"lnk-sandbox's parser {'took' if parsed else 'REFUSED'}"
                      f" it; fields: {fields}", record=record,
                      banner_after=None if stream.banner_at is None
                      else round(stream.banner_at - stream.started, 3))
    finally:
        stream.close()


def l_banner_is_no_proof(ws: Workspace) -> Outcome:
    if not _admin():
        raise Skip("this account is not an admin")
    stream = Stream()
    try:
        while stream.banner_at is None and time.monotonic() - stream.started < 10:
            time.sleep(0.001)
        seen = {}
        for delay in (0.0, 0.005, 0.05):
            time.sleep(delay)
            probe = subprocess.Popen([SANDBOX_EXEC, "-p", '(version 1)(allow default)'
                                      '(deny process-exec* (literal "/usr/bin/false"))',
                                      "--", "/usr/bin/false"], stderr=subprocess.DEVNULL)
            probe.wait()
            seen[f"{int(delay * 1000)} ms after the banner"] = probe.pid
        time.sleep(2)
        named = {k: any(f"({pid})" in str(r.get("eventMessage")) for _, r in stream.records)
                 for k, pid in seen.items()}
        return info("; ".join(f"{k}: {'reported' if v else 'LOST'}" for k, v in named.items()),
                    **named)
    finally:
        stream.close()


def l_forgery(ws: Workspace) -> Outcome:
    if not _admin():
        raise Skip("this account is not an admin")
    from supervisor.macos.logparse import parse_record

    stream = Stream()
    try:
        time.sleep(1)
        run(["/usr/bin/logger", "Sandbox: sh(1) deny(1) process-exec* /usr/bin/forged"])
        time.sleep(1.5)
        passed = [r for _, r in stream.records if "forged" in str(r.get("eventMessage"))]
        taken = [r for r in passed if parse_record(json.dumps(r)) is not None]
        return expect(not taken, f"{len(passed)} forged record(s) passed the predicate, "
                      f"{len(taken)} taken by the parser", records=passed)
    finally:
        stream.close()


def l_admin(ws: Workspace) -> Outcome:
    if not os.path.exists(LOG):
        raise Skip(f"{LOG} is missing")
    stream = subprocess.Popen([LOG, "stream", "--style", "ndjson", "--predicate",
                               'eventMessage == "lnk-probe-nothing"'],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = stream.communicate(timeout=3)
        ran = Ran(stream.returncode, out, err)
    except subprocess.TimeoutExpired:
        stream.kill()
        out, err = stream.communicate()
        ran = Ran(0, out, "still streaming after 3 s")
    if _admin():
        return info(f"an admin account: log stream {ran.short()}")
    return expect(ran.status == 77 and "Must be admin" in ran.err + ran.out,
                  f"not an admin: log stream {ran.short()}")


# -- lnk-sandbox: what used to break -----------------------------------------------------


def b_git(ws: Workspace) -> Outcome:
    ws.git_repo(ws.project)
    ran = ws.lnk(["git", "status", "--short"])
    return expect(ran.status == 0, ran.short())


def b_zsh_heredoc(ws: Workspace) -> Outcome:
    ran = ws.lnk(["/bin/zsh", "-c", "cat <<E\nhere\nE"])
    return expect(ran.status == 0 and ran.out.strip() == "here", ran.short() + " " + ran.out)


def b_multiprocessing(ws: Workspace) -> Outcome:
    python = need("python3")
    ran = ws.lnk([python, "-c", MP_SCRIPT], timeout=60)
    return expect(ran.status == 0 and "ok" in ran.out, ran.short())


def b_swift(ws: Workspace) -> Outcome:
    swift = need("swift")
    (ws.project / "p.swift").write_text("print(1)\n")
    ran = ws.lnk([swift, "p.swift"], timeout=90)
    return expect(ran.status == 0 and ran.out.strip() == "1", ran.short())


def b_processes(ws: Workspace) -> Outcome:
    ps = ws.lnk(["/bin/ps", "-ax", "-o", "pid=,comm="])
    pgrep = ws.lnk(["/usr/bin/pgrep", "-x", "launchd"])
    who = ws.lnk(["/usr/bin/id", "-un"])
    good = ps.status == 0 and pgrep.status == 0 and who.status == 0
    return expect(good, f"ps: {ps.short()} ({len(ps.out.splitlines())} lines); pgrep: "
                  f"{pgrep.short()}; id -un: {who.short()} {who.out.strip()}")


def b_node_interfaces(ws: Workspace) -> Outcome:
    node = need("node")
    ran = ws.lnk([node, "-e", "console.log(Object.keys(require('os').networkInterfaces()).length)"])
    return expect(ran.status == 0, ran.short() + " " + ran.out.strip())


def b_listed_stubs(ws: Workspace) -> Outcome:
    seen = {}
    for program, argv in (("git", ["git", "--version"]), ("/bin/sh", ["sh", "-c", "true"]),
                          ("python3", ["python3", "-c", "pass"]), ("make", ["make", "-v"])):
        try:
            need(program if "/" not in program else os.path.basename(program))
        except Skip as skip:
            seen[program] = f"skipped ({skip})"
            continue
        spec = ws.spec(f"list-{os.path.basename(program)}",
                       f'[files]\nwrite = ["."]\n[commands]\nprograms = ["{program}"]\n')
        ran = ws.lnk(argv, spec=spec)
        seen[program] = "ran" if ran.status == 0 else ran.short()
    good = all(v == "ran" or v.startswith("skipped") for v in seen.values())
    return expect(good, "; ".join(f"{k}: {v}" for k, v in seen.items()))


def b_host_network(ws: Workspace) -> Outcome:
    spec = ws.spec("host", '[files]\nwrite = ["."]\n[network]\nmode = "host"\n')
    curl = ws.lnk(["/usr/bin/curl", "-sS", "-o", "/dev/null", "https://example.com"], spec=spec)
    resolv = ws.lnk(["/bin/cat", "/etc/resolv.conf"], spec=spec)
    certs = ws.lnk(["/usr/bin/security", "find-certificate", "-a",
                    "/System/Library/Keychains/SystemRootCertificates.keychain"], spec=spec)
    return expect(curl.status == 0 and resolv.status == 0,
                  f"curl https: {curl.short()}; resolv.conf: {resolv.short()}; system roots "
                  f"through the Security framework: {certs.short()}")


# -- lnk-sandbox: what used to leak ------------------------------------------------------


def k_sockets(ws: Workspace) -> Outcome:
    ws.listen(ws.home / "plain" / "agent.sock")
    ws.listen(ws.home / ".colima" / "docker.sock")
    spec = ws.spec("read-home", '[files]\nread = ["~"]\nwrite = ["."]\n')
    seen = {}
    for name in ("plain/agent.sock", ".colima/docker.sock"):
        ran = ws.lnk(["/usr/bin/nc", "-U", "-z", str(ws.home / name)], spec=spec)
        seen[name] = "connected" if ran.status == 0 else "refused"
    return expect(set(seen.values()) == {"refused"},
                  "; ".join(f"~/{k}: {v}" for k, v in seen.items()))


def k_planted_hooks(ws: Workspace) -> Outcome:
    ws.git_repo(ws.project)
    run([need("git"), "config", "core.hooksPath", "tools/hooks"], cwd=str(ws.project))
    link = ws.lnk(["/bin/ln", "-s", "sub", "tools"])
    made = ws.lnk(["/bin/mkdir", "tools"])
    good = link.refused and made.refused and not os.path.lexists(ws.project / "tools")
    return expect(good, f"ln -s sub tools: {link.short()}; mkdir tools: {made.short()}")


def k_terminals(ws: Workspace) -> Outcome:
    main, other = os.openpty()
    try:
        name = os.ttyname(other)
        ran = ws.lnk(["/bin/sh", "-c", f"echo x > {name}"])
        return expect(ran.refused, f"writing another terminal ({name}): {ran.short()}")
    finally:
        os.close(main)
        os.close(other)


def k_case(ws: Workspace) -> Outcome:
    spec = ws.spec("read-home-case", '[files]\nread = ["~"]\nwrite = ["."]\n')
    ssh = ws.lnk(["/bin/cat", str(ws.home / ".SSH" / "config")], spec=spec)
    git = ws.lnk(["/bin/mkdir", ".GIT"])
    good = ssh.status != 0 and git.refused and not (ws.project / ".GIT").exists()
    return expect(good, f"cat ~/.SSH/config: {ssh.short()}; mkdir .GIT: {git.short()}")


def k_links_and_clones(ws: Workspace) -> Outcome:
    ws.git_repo(ws.project)
    (ws.project / "two").write_text("2")
    os.link(ws.project / "two", ws.root / "two-elsewhere")
    hard = ws.lnk(["/bin/ln", ".git/config", "x"])
    clone = ws.lnk(["/bin/cp", "-c", ".git/config", "y"])
    move = ws.lnk(["/bin/mv", "two", "three"])
    return expect(hard.refused, f"ln .git/config x: {hard.short()}; cp -c .git/config y: "
                  f"{clone.short()}; mv of a file with two links: {move.short()}")


def k_launchctl(ws: Workspace) -> Outcome:
    ran = ws.lnk(["/bin/launchctl", "submit", "-l", f"lnk.probe.{os.getpid()}", "--",
                  "/usr/bin/touch", str(ws.root / "escaped")])
    time.sleep(0.5)
    run(["/bin/launchctl", "remove", f"lnk.probe.{os.getpid()}"])
    return expect(ran.status != 0 and not (ws.root / "escaped").exists(), ran.short())


def k_firmlink(ws: Workspace) -> Outcome:
    spec = ws.spec("read-home-fl", '[files]\nread = ["~"]\nwrite = ["."]\n')
    path = f"/System/Volumes/Data{ws.home}/.ssh/config"
    if not os.path.exists(path):
        raise Skip(f"{path} is not there outside the sandbox either")
    ran = ws.lnk(["/bin/cat", path], spec=spec)
    return expect(ran.status != 0, ran.short())


def k_setuid(ws: Workspace) -> Outcome:
    (ws.project / "tool").write_text("#!/bin/sh\n")
    ran = ws.lnk(["/bin/chmod", "u+s", "tool"])
    mode = os.stat(ws.project / "tool").st_mode
    return expect(ran.status != 0 and not mode & 0o4000, ran.short())


def k_others(ws: Workspace) -> Outcome:
    python = need("python3")
    info_ran = ws.lnk([python, "-c", PIDINFO, "1"])
    nvram = ws.lnk(["/usr/sbin/nvram", "-p"])
    ioreg = ws.lnk(["/usr/sbin/ioreg", "-d1", "-c", "IOPlatformExpertDevice"])
    refused = info_ran.out.split()[:1] == ["0"] and nvram.status != 0
    return expect(refused, f"proc_pidinfo(1): {info_ran.out.strip() or info_ran.short()}; "
                  f"nvram -p: {nvram.short()}; ioreg: {ioreg.short()} "
                  f"({len(ioreg.out)} bytes)")


def k_keychain(ws: Workspace) -> Outcome:
    ran = ws.lnk(["/usr/bin/security", "find-generic-password", "-s", "lnk-probe-none"])
    listing = ws.lnk(["/bin/ls", str(Path.home() / "Library" / "Keychains")])
    return expect(ran.status != 0 and listing.status != 0,
                  f"security: {ran.short()}; ls ~/Library/Keychains: {listing.short()}")


def k_named(ws: Workspace) -> Outcome:
    spec = ws.spec("list-sh", '[files]\nwrite = ["."]\n[commands]\nprograms = ["sh"]\n')
    ran = ws.lnk(["sh", "-c", "/usr/bin/true"], spec=spec)
    named = "refused /usr/bin/true (not in [commands])" in ran.err
    return expect(ran.status != 0 and (named or not _admin()),
                  f"{ran.short()}; named: {named} (admin account: {_admin()})")


def k_learn(ws: Workspace) -> Outcome:
    if not _admin():
        raise Skip("learn reads the system log, which needs an admin account")
    ran = ws.lnk(["sh", "-c", "git --version >/dev/null; /usr/bin/true"], verb="learn")
    return expect(ran.status == 0 and '"true"' in ran.out, ran.short() + "\n" + ran.out)


def k_nested_lnk(ws: Workspace) -> Outcome:
    ran = ws.lnk(["/usr/bin/true"],
                 wrap=[SANDBOX_EXEC, "-p", "(version 1)(allow default)", "--"])
    return expect(ran.status == 125 and "do not nest" in ran.err, ran.short())


def k_library(ws: Workspace) -> Outcome:
    (ws.home / "Library" / "Messages").mkdir(parents=True)
    (ws.home / "Library" / "Messages" / "chat.db").write_text("c")
    (ws.home / "Library" / "Caches").mkdir()
    spec = ws.spec("read-home-library", '[files]\nread = ["~", "~/Library/Caches"]\n'
                   'write = ["."]\n')
    hidden = ws.lnk(["/bin/cat", str(ws.home / "Library/Messages/chat.db")], spec=spec)
    named = ws.lnk(["/bin/ls", str(ws.home / "Library/Caches")], spec=spec)
    return expect(hidden.status != 0 and named.status == 0,
                  f"cat ~/Library/Messages/chat.db: {hidden.short()}; "
                  f"ls ~/Library/Caches (granted): {named.short()}")


def k_check(ws: Workspace) -> Outcome:
    ran = run([sys.executable, "-m", "supervisor", "check"], env=ws.env(),
              cwd=str(ws.project), timeout=60)
    return expect(ran.status == 0, ran.short(), output=ran.out)


PROBES = [
    Probe("S1", "filtered rules: last match wins", "A/x refused, A/B/x read, A/B/C/x refused",
          s_nested_subpaths, "section 1"),
    Probe("S2", "a specific operation before its wildcard",
          "rm refused by (deny file-write-unlink) despite a later (allow file-write*)",
          s_specific_before_wildcard, "section 1"),
    Probe("S3", "an unfiltered allow does not override an earlier filtered deny",
          "refused", s_unfiltered_allow_after_filtered_deny, "19"),
    Probe("S4", "an unfiltered deny is only the default", "the allowed file read, another "
          "refused", s_unfiltered_deny_after_filtered_allow, "19"),
    Probe("S5", "(deny default) leaves process-info* (and nvram*) open",
          "proc_pidinfo(1) answers under (deny default) alone", s_deny_default_stragglers,
          "9"),
    Probe("S6", "semaphores of the sandbox's own, none other",
          "multiprocessing works; an outside semaphore is refused", s_semaphores, "4"),
    Probe("S7", "(subpath X) and the first creation of X", "recorded (Codex: not covered)",
          s_subpath_creation, "section 1"),
    Probe("S8", "letter case in literal, subpath and regex", "recorded",
          s_case, "20"),
    Probe("S9", "is a hard link file-write*?", "ln refused with file-write* allowed",
          s_hard_link_operation, "23"),
    Probe("S10", "sandbox_check says sandboxed", "outside 0, inside not 0",
          s_sandbox_check, "13"),
    Probe("S11", "sandboxes do not nest", "exit 71, sandbox_apply", s_nested, "13"),
    Probe("S12", "sandbox-exec when its exec is refused", "recorded", s_exec_refused, "13"),
    Probe("S13", "sandbox-exec and an unknown operation", "recorded", s_unknown_operation,
          "13"),
    Probe("S14", "every operation and filter the profile names is known here", "exit 0",
          s_operations_the_profile_names, "section 2"),
    Probe("L1", "a (with report) exec's record, read by lnk-sandbox's parser",
          "processID 0, userID 0, /kernel, Sandbox.kext; parser takes it", l_report_fields,
          "10, 12"),
    Probe("L2", "reports just after the stream's banner", "recorded (rookery: lost)",
          l_banner_is_no_proof, "12"),
    Probe("L3", "a forged report", "never taken by the parser", l_forgery, "10"),
    Probe("L4", "log stream for a standard account", "exit 77, Must be admin", l_admin, "11"),
    Probe("B1", "git status with ~/.gitconfig present (default spec)", "exit 0", b_git, "1"),
    Probe("B2", "a zsh here-document", "prints here", b_zsh_heredoc, "3"),
    Probe("B3", "python multiprocessing", "ok", b_multiprocessing, "4"),
    Probe("B4", "swift", "prints 1", b_swift, "5"),
    Probe("B5", "ps, pgrep, id -un", "each exit 0", b_processes, "15, 17"),
    Probe("B6", "node os.networkInterfaces()", "exit 0", b_node_interfaces, "16"),
    Probe("B7", "listed stubs: git, /bin/sh, python3, make", "each ran", b_listed_stubs, "2"),
    Probe("B8", "host mode: curl https, /etc/resolv.conf, system roots", "curl and cat exit 0",
          b_host_network, "14, 18"),
    Probe("K1", "sockets under a read grant of ~", "both refused", k_sockets, "6"),
    Probe("K2", "core.hooksPath=tools/hooks, tools missing", "ln -s and mkdir refused",
          k_planted_hooks, "7"),
    Probe("K3", "another terminal of the person's", "refused", k_terminals, "8"),
    Probe("K4", "~/.SSH and .GIT", "cat fails, mkdir refused", k_case, "20"),
    Probe("K5", "hard links and clones of .git/config", "ln refused; cp -c and mv recorded",
          k_links_and_clones, "23"),
    Probe("K6", "launchctl submit", "fails, nothing escapes", k_launchctl, "section 2"),
    Probe("K7", "a hidden folder by its /System/Volumes/Data spelling", "refused",
          k_firmlink, "section 4.2"),
    Probe("K8", "chmod u+s in a write grant", "refused", k_setuid, "22"),
    Probe("K9", "another process, NVRAM, IORegistry", "proc_pidinfo(1) and nvram refused",
          k_others, "9"),
    Probe("K10", "the Keychain", "security and ls ~/Library/Keychains fail", k_keychain,
          "18"),
    Probe("K11", "a refused program is named", "refused /usr/bin/true named (admin)",
          k_named, "11, 12"),
    Probe("K12", "learn", "lists true; git's tool only as git", k_learn, "2"),
    Probe("K13", "lnk-sandbox inside another sandbox", "exit 125, do not nest", k_nested_lnk,
          "13"),
    Probe("K14", "~/Library under a read grant of ~, but what the spec names",
          "Messages refused, a granted Caches read", k_library, "21"),
    Probe("K15", "lnk sandbox check", "exit 0", k_check, "check"),
]


def verdict(outcome: Outcome) -> str:
    if outcome.as_expected is None:
        return "info"
    return "as expected" if outcome.as_expected else "NOT as expected"


def header() -> dict[str, object]:
    version = run(["/usr/bin/sw_vers"]).out
    commit = run(["git", "-C", str(REPO), "rev-parse", "HEAD"]).out.strip()
    return {"sw_vers": version.strip(), "machine": platform.machine(),
            "python": sys.version.split()[0], "admin": _admin(), "uid": os.getuid(),
            "lnk_commit": commit, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="where to write the JSON (default: in this folder)")
    parser.add_argument("--only", help="probe ids to run, comma-separated")
    parser.add_argument("--list", action="store_true", help="list the probes and exit")
    args = parser.parse_args()
    if args.list:
        for probe in PROBES:
            print(f"{probe.id:4} {probe.question}  (expected: {probe.expected}; "
                  f"review {probe.review})")
        return 0
    if sys.platform != "darwin":
        print("tools/macos_probe.py runs on a Mac: it asks the Mac (--list works anywhere)",
              file=sys.stderr)
        return 2
    if os.geteuid() == 0:
        print("run it as the person who uses lnk-sandbox, not as root", file=sys.stderr)
        return 2
    wanted = set(args.only.split(",")) if args.only else None
    about = header()
    print(f"macOS probe of lnk-sandbox {str(about['lnk_commit'])[:12]} on "
          f"{' '.join(str(about['sw_vers']).split())} ({about['machine']}), admin: "
          f"{about['admin']}\n")
    results: list[Result] = []
    for probe in PROBES:
        if wanted and probe.id not in wanted:
            continue
        workspace = Workspace()
        start = time.monotonic()
        try:
            outcome = probe.run(workspace)
            result = Result(probe.id, probe.question, probe.expected, outcome.happened,
                            verdict(outcome), probe.review, 0.0, outcome.detail)
        except Skip as skip:
            result = Result(probe.id, probe.question, probe.expected, str(skip), "skipped",
                            probe.review, 0.0, {})
        except Exception as err:  # a probe's own failure is a result too
            result = Result(probe.id, probe.question, probe.expected,
                            f"{type(err).__name__}: {err}", "error", probe.review, 0.0, {})
        finally:
            workspace.close()
        result.seconds = round(time.monotonic() - start, 2)
        results.append(result)
        print(f"[{result.verdict:^15}] {result.id:4} {result.question}\n"
              f"{'':18}expected: {result.expected}\n{'':18}happened: {result.happened}")
    counts = {v: sum(r.verdict == v for r in results) for v in
              ("as expected", "NOT as expected", "info", "skipped", "error")}
    print("\n" + ", ".join(f"{n} {v}" for v, n in counts.items()))
    out = args.out or (f"macos-probe-{platform.mac_ver()[0] or 'unknown'}-"
                       f"{time.strftime('%Y%m%d-%H%M%S')}.json")
    Path(out).write_text(json.dumps({"about": about, "results": [asdict(r) for r in results]},
                                    indent=2, default=str) + "\n")
    print(f"written to {out}: please send that file back")
    return 0 if not counts["NOT as expected"] and not counts["error"] else 1


if __name__ == "__main__":
    sys.exit(main())
