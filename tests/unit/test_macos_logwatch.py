"""Reading `log stream` beside the sandbox: which reports are this run's, what becomes an
event or a learned program, and the stream reader's lines (whole lines only, an
overlong one dropped, the stream's end seen)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import anyio

from supervisor.events import EventLog
from supervisor.host_files import open_report
from supervisor.macos.logparse import KERNEL_IMAGE, SANDBOX_SENDER, Report
from supervisor.macos.logwatch import (
    MAX_LINE,
    PREDICATE,
    Lineage,
    LogStream,
    Namer,
    log_stream_argv,
    process_facts,
    why_log_failed,
)
from supervisor.policy import RunSettings

ROOT = 500
# pid -> (parent, group): 501 and 502 are the run's (by group, by parent); 600 is
# another session's child of 601; 700's parent is gone.
TABLE = {500: (1, 500), 501: (500, 500), 502: (501, 502), 503: (502, 503),
         600: (601, 600), 601: (1, 601), 700: (799, 700)}


def lineage() -> Lineage:
    return Lineage(ROOT, facts=TABLE.get)


def test_a_process_of_the_run_is_not_foreign() -> None:
    tree = lineage()
    assert not tree.foreign(ROOT)
    assert not tree.foreign(501)  # in the run's group
    assert not tree.foreign(502)  # the group left, the parent is the run's
    assert not tree.foreign(503)  # a grandchild


def test_a_live_process_of_another_tree_is_foreign_and_a_gone_one_kept() -> None:
    tree = lineage()
    assert tree.foreign(600)
    assert tree.foreign(700)  # its parent went while looking: not shown to be ours
    assert not tree.foreign(12345)  # gone: cannot be told apart, so it is named


def test_a_loop_in_the_table_ends() -> None:
    assert Lineage(1000, facts=lambda pid: (pid + 1, pid)).foreign(5)
    assert Lineage(1000, facts=lambda pid: (pid, pid)).foreign(5)


def test_process_facts_read_this_machine() -> None:
    assert process_facts(os.getpid()) == (os.getppid(), os.getpgid(0))
    child = subprocess.Popen(["true"])
    child.wait()
    assert process_facts(child.pid) is None


def report(pid: int, verdict: str = "deny", op: str = "process-exec*",
           target: str = "/usr/bin/curl", comm: str = "sh") -> Report:
    return Report(comm, pid, verdict, op, target)  # type: ignore[arg-type]


def test_a_run_names_denied_execs_of_its_own_processes(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "report.jsonl")
    events = EventLog(open_report(path), quiet=True)
    namer = Namer(events, learn=False)
    namer(report(501))  # before the run's sandbox existed: not ours
    namer.lineage = lineage()
    for item in (report(501), report(600), report(12345, target="/bin/gone"),
                 report(501, op="file-read-data"), report(501, verdict="allow"),
                 report(501, target="")):
        namer(item)
    events.close()
    with open(path) as handle:
        named = [json.loads(line) for line in handle]
    assert [(e["resolved"], e["pid"]) for e in named] == [("/usr/bin/curl", 501),
                                                          ("/bin/gone", 12345)]
    assert not namer.root_refused and namer.seen == []


def test_only_sandbox_exec_refused_under_the_roots_pid_is_the_command() -> None:
    namer = Namer(None, learn=False)
    namer.lineage = lineage()
    namer(report(ROOT, comm="sh"))  # the command, after its exec, refused a program
    assert not namer.root_refused
    namer(report(ROOT, comm="sandbox-exec"))
    assert namer.root_refused


def test_learn_collects_allowed_execs_of_its_own_processes() -> None:
    namer = Namer(None, learn=True)
    namer.lineage = lineage()
    for item in (report(501, "allow", target="/usr/bin/git"), report(600, "allow"),
                 report(501, "deny", target="/usr/bin/denied")):
        namer(item)
    assert [(x.asked, x.path) for x in namer.seen] == [("/usr/bin/git", "/usr/bin/git")]


def test_the_log_command_line() -> None:
    """No --level: kernel reports are Error records, shown at the default level, and
    debug would make every process on the machine log more while the stream runs. The
    predicate trusts no subsystem any process may log under."""
    assert log_stream_argv() == ["/usr/bin/log", "stream", "--style", "ndjson",
                                 "--predicate", PREDICATE]
    assert "--level" not in log_stream_argv() and "subsystem" not in PREDICATE
    assert "processID == 0" in PREDICATE and "process-exec" in PREDICATE


def test_why_log_failed_names_the_admin_group_sandboxes_and_the_rest() -> None:
    what, fix = why_log_failed(77, "log: Must be admin to run 'stream' command\n")
    assert "admin group" in what and "Must be admin" in what and "dseditgroup" in fix
    what, fix = why_log_failed(1, "log: Must be admin to run 'stream' command")
    assert "admin group" in what  # the text alone says it
    what, fix = why_log_failed(64, "log: Cannot run while sandboxed\n")
    assert "refuses to run inside a sandbox" in what and "outside" in fix
    what, _ = why_log_failed(None, "")
    assert "no report of the readiness probe" in what
    what, _ = why_log_failed(3, "something else\nlast words\n")
    assert what.endswith("ended (last words)")


def test_a_probes_report_readies_the_run_and_is_never_the_runs() -> None:
    namer = Namer(None, learn=True)
    namer.probe_program = "/usr/bin/true"
    namer.probes.add(900)
    namer.lineage = lineage()
    namer(report(900, "deny", target="/usr/bin/true"))
    assert namer.probes_seen == set()
    namer(report(900, "allow", target="/usr/bin/true", comm="sandbox-exec"))
    namer(report(900, "allow", target="/usr/bin/git"))  # the probe's pid is never ours
    assert namer.probes_seen == {900} and namer.seen == []


EMITTER = textwrap.dedent("""
    import json, sys, time
    out = sys.stdout.buffer
    kernel = {"processID": 0, "userID": 0, "processImagePath": KERNEL,
              "senderImagePath": SENDER}
    line = lambda m: json.dumps({**kernel, "eventMessage": m}).encode() + b"\\n"
    out.write(line("Sandbox: sh(1) deny(1) process-exec* /early")); out.flush()
    out.write(b'Filtering the log data using "x"\\n'); out.flush()
    time.sleep(0.05)
    out.write(line("Sandbox: sh(2) deny(1) process-exec* /one")[:20]); out.flush()
    time.sleep(0.05)
    out.write(line("Sandbox: sh(2) deny(1) process-exec* /one")[20:]); out.flush()
    out.write(b"x" * (MAX + 100) + line("Sandbox: sh(3) deny(1) process-exec* /overlong"))
    out.write(b"\\xff\\xfe garbage\\n" + line("Sandbox: sh(4) deny(1) process-exec* /two"))
    out.write(b"2026-03-05 21:26:41.625 E  kernel[0:1fa] (Sandbox) Sandbox: sh(6) deny(1) "
              b"process-exec* /compact-is-not-trusted-live\\n")
    out.write(line("Sandbox: sh(5) deny(1) process-exec* /cut")[:-1])
    out.flush()
    sys.stderr.write("a word on stderr\\n")
""")


def test_the_stream_reads_whole_lines_and_drops_an_overlong_one() -> None:
    found: list[Report] = []
    script = EMITTER.replace("MAX", str(MAX_LINE)).replace("KERNEL", repr(KERNEL_IMAGE))
    script = script.replace("SENDER", repr(SANDBOX_SENDER))
    stream = LogStream([sys.executable, "-c", script], found.append)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(stream.read)
            with anyio.fail_after(10):
                while not stream.ended:
                    await anyio.sleep(0.01)
            await stream.settle(quiet=0.05, limit=1)  # returns at once: the stream ended

    stream.start()
    try:
        anyio.run(main)
        assert stream.failure()[0] == f"`{sys.executable} stream` ended (a word on stderr)"
    finally:
        stream.stop()
    assert [r.target for r in found] == ["/early", "/one", "/two"]
    assert stream.failure() == (f"`{sys.executable} stream` ended (a word on stderr)",
                                "run `lnk sandbox check` to see what this Mac allows")
    assert stream.status == 0
    stream.stop()
    assert stream.pid is None and stream.fd is None
    stream.stop()  # again: nothing left to do


def test_a_stream_that_ends_says_how() -> None:
    script = "import sys; print('no record'); sys.stderr.write('log: gone\\n'); sys.exit(3)"
    found: list[Report] = []
    stream = LogStream([sys.executable, "-c", script], found.append)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(stream.read)
            with anyio.fail_after(10):
                while not stream.ended:
                    await anyio.sleep(0.01)

    stream.start()
    try:
        anyio.run(main)
        assert stream.failure()[0] == f"`{sys.executable} stream` ended (log: gone)"
        assert stream.status == 3 and found == []
    finally:
        stream.stop()


def test_stop_kills_a_stream_that_ignores_sigterm() -> None:
    script = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); " \
             "print('Filtering the log data using x', flush=True); time.sleep(60)"
    stream = LogStream([sys.executable, "-c", script], lambda r: None)
    stream.start()
    pid = stream.pid
    assert pid is not None

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(stream.read)
            with anyio.fail_after(10):
                while not stream.last_line:  # it runs, SIGTERM ignored already
                    await anyio.sleep(0.01)
            group.cancel_scope.cancel()

    anyio.run(main)
    stream.stop(grace=0.2)
    assert process_facts(pid) is None


def test_learn_never_offers_a_program_from_a_macos_temp_folder() -> None:
    from supervisor.events import Executed
    from supervisor.grants import Snapshot
    from supervisor.learn import summarize

    snapshot = Snapshot(
        1,
        "spec.toml",
        "/Users/me",
        "/Users/me/p",
        "/Users/me/.lnk",
        501,
        (),
        None,
        RunSettings("none", (), (), None, None))
    seen = [Executed(p, p) for p in ("/private/tmp/x", "/private/var/folders/ab/T/y",
                                     "/private/var/tmp/z")]
    learned, left = summarize(seen, snapshot)
    assert learned == [] and [item.path for item in left] == [s.path for s in seen]
    assert all("temp folder" in item.reason for item in left)
