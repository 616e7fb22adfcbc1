"""The macOS launch path end to end on Linux, against stand-in `sandbox-exec` and `log`
programs (tests/support/macos_standins/): they record how they were called and replay
Seatbelt's report lines, so the process tree, the readiness probe, the `log stream` task,
naming and cleanup all run here, and so do sandbox-exec's own failures (a nested sandbox,
a rejected profile) and `log`'s (a non-admin account, a sandboxed one). Nothing here
applies a Seatbelt profile: that needs a Mac (tools/macos_probe.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from supervisor.errors import LaunchError
from supervisor.grants import Grant, Program, Snapshot
from supervisor.macos.backend import MacLauncher
from supervisor.macos.logparse import KERNEL_IMAGE, SANDBOX_SENDER
from supervisor.macos.logwatch import PREDICATE
from supervisor.macos.probe import PROBE_PROGRAM
from supervisor.macos.programs import Toolchain
from support.snapshots import a_snapshot

# No stubs, no selected shell, no developer folder: what a Linux machine holds.
NO_TOOLS = Toolchain(xcrun="/nonexistent/xcrun", select_sh="/nonexistent/sh",
                     developer_links=())

STANDINS = Path(__file__).resolve().parent.parent / "support" / "macos_standins"
SH = os.path.realpath(shutil.which("sh") or "/bin/sh")
REPO = Path(__file__).resolve().parent.parent.parent


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-ins' shared folder; `log` finds it in the supervisor's environment, the
    stand-in sandbox-exec in the sandbox's (the spec's `[env] set`)."""
    shared = tmp_path / "standin"
    shared.mkdir()
    monkeypatch.setenv("LNK_STANDIN_DIR", str(shared))
    monkeypatch.setenv("DYLD_INSERT_LIBRARIES", "/tmp/evil.dylib")
    return shared


def snapshot(folder: Path, *, programs: tuple[Program, ...] | None) -> Snapshot:
    project = folder.parent / "proj"
    project.mkdir(exist_ok=True)
    return a_snapshot(
        Grant(".", str(project), "write", "files.write[0]", "files.write[0]", 2),
        source="spec.toml", home=str(folder.parent), cwd=str(project), uid=os.geteuid(),
        programs=programs, keep=("PATH", "DYLD_INSERT_LIBRARIES"),
        assign=(("LNK_STANDIN_DIR", str(folder)),))


def launcher(*, sandbox_exec: str = str(STANDINS / "sandbox-exec"),
             log: str = str(STANDINS / "log"), nested: bool = False,
             **changes: float) -> MacLauncher:
    options: dict[str, Any] = {"attach_timeout": 10.0, "quiet": 0.3, "settle_limit": 3.0,
                               **changes}
    return MacLauncher(sandbox_exec=sandbox_exec, log=log, toolchain=NO_TOOLS,
                       nested=lambda: nested, **options)


def calls(folder: Path) -> list[dict[str, object]]:
    """Every call of the stand-in sandbox-exec, in order."""
    path = folder / "calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def record(folder: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / f"{name}.json").read_text())
    return data


def gone(pid: int) -> bool:
    """Ended: no such process, or a zombie no one of ours has to reap."""
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
    except OSError:
        return True
    return state == b"Z"


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


KERNEL = {"processID": 0, "userID": 0, "processImagePath": KERNEL_IMAGE,
          "senderImagePath": SANDBOX_SENDER}


def report_line(comm: str, pid: object, verdict: str, target: str, *, dups: int = 0,
                **fields: object) -> str:
    """A report as the kernel logs it; `fields` change the record (a forgery)."""
    verdict = "deny(1)" if verdict == "deny" else verdict
    prefix = f"{dups} duplicate reports for " if dups else ""
    record = {**KERNEL, "eventMessage": f"{prefix}Sandbox: {comm}({pid}) {verdict} "
              f"process-exec* {target}", **fields}
    return json.dumps({k: v for k, v in record.items() if v is not None})


LISTED = (Program("sh", SH),)


def test_refusals_are_named_once_for_this_runs_processes(
        folder: Path, capfd: pytest.CaptureFixture[str]) -> None:
    gone_pid = dead_pid()
    (folder / "fixture").write_text("\n".join([
        "not a report at all",
        report_line("sh", "{pid}", "deny", "/usr/bin/curl"),
        report_line("sh", "{pid}", "deny", "/usr/bin/curl", dups=3),
        report_line("sh", "{child}", "deny", "/usr/bin/wget"),
        report_line("python3", os.getpid(), "deny", "/usr/bin/foreign-alive"),
        report_line("init", 1, "deny", "/usr/bin/foreign-init"),
        report_line("sh", gone_pid, "deny", "/usr/bin/gone-unknown"),
        json.dumps({"processID": 0, "eventMessage": "Sandbox: sh(1) deny(1) file-read-data /x"}),
        '{"processID":0,"eventMessage":"Sandbox: sh(',
        "",
    ]) + "\n")
    report = folder.parent / "report.jsonl"
    command = ["sh", "-c", f'sh -c "echo \\$\\$ > {folder}/child.pid; sleep 0.6"; exit 3']

    status = launcher().run(snapshot(folder, programs=LISTED), command, report=str(report))

    assert status == 3
    events = [json.loads(line) for line in report.read_text().splitlines()]
    # The shell refused curl twice is one refusal, one record (events.py).
    assert [e["resolved"] for e in events] == [
        "/usr/bin/curl", "/usr/bin/wget", "/usr/bin/gone-unknown"]
    assert {e["rule"] for e in events} == {"commands.programs"}
    err = capfd.readouterr().err
    assert err.count("lnk-sandbox: refused /usr/bin/curl (not in [commands])") == 1
    assert "refused /usr/bin/wget (not in [commands])" in err
    assert "foreign" not in err

    # The process tree: sandbox-exec, the supervisor's child by its absolute path, in a
    # process group of its own, became the command (same pid).
    sandbox = record(folder, "sandbox-exec")
    assert sandbox["ppid"] == os.getpid() and sandbox["pgid"] == sandbox["pid"]
    argv = sandbox["argv"]
    assert isinstance(argv, list) and argv[0] == str(STANDINS / "sandbox-exec")
    assert argv[1] == "-p" and argv[argv.index("--") + 1:] == command
    params = sandbox["params"]
    assert isinstance(params, dict) and params["PROGRAM_0"] == SH
    env = sandbox["env"]
    assert isinstance(env, dict) and "DYLD_INSERT_LIBRARIES" not in env
    assert set(env) == {"PATH", "LNK_STANDIN_DIR", "TMPDIR", "TMPPREFIX",
                        "CLANG_MODULE_CACHE_PATH"}
    temp = str(env["TMPDIR"]).rstrip("/")
    assert env["TMPPREFIX"] == temp + "/zsh"
    assert temp in params.values() and os.path.basename(temp).startswith("lnk-sandbox-")
    log = record(folder, "log")
    assert log["argv"] == [str(STANDINS / "log"), "stream", "--style", "ndjson",
                           "--predicate", PREDICATE]
    # The readiness probe ran first, with the command's own profile and environment.
    first, last = calls(folder)[0], calls(folder)[-1]
    assert first["probe"] and first["command"] == [PROBE_PROGRAM]
    assert str(first["profile"]).startswith(str(sandbox["profile"]))
    assert first["env"] == env and last["pid"] == sandbox["pid"]
    assert log["pgid"] == log["pid"]

    # Cleanup: no process left, the temp folder removed.
    assert isinstance(log["pid"], int) and gone(log["pid"])
    assert isinstance(sandbox["pid"], int) and gone(sandbox["pid"])
    assert not os.path.exists(temp)


def test_a_refused_command_exits_126(folder: Path, capfd: pytest.CaptureFixture[str]) -> None:
    status = launcher().run(snapshot(folder, programs=LISTED), ["env", "true"])
    assert status == 126
    err = capfd.readouterr().err
    assert "lnk-sandbox: refused /usr/bin/env (not in [commands])" in err
    assert gone(int(record(folder, "log")["pid"]))


def test_an_empty_list_refuses_even_the_command(folder: Path,
                                                capfd: pytest.CaptureFixture[str]) -> None:
    assert launcher().run(snapshot(folder, programs=()), ["sh", "-c", "exit 0"]) == 126
    assert f"refused {SH} (not in [commands])" in capfd.readouterr().err


@pytest.mark.parametrize("waitid", [True, False])
def test_what_the_command_leaves_running_ends_with_it(folder: Path, waitid: bool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("supervisor.macos.backend.WAITID", waitid)  # False: as on macOS < 3.13
    command = ["sh", "-c", f"sleep 30 & echo $! > {folder}/bg.pid; exit 0"]
    assert launcher().run(snapshot(folder, programs=LISTED), command) == 0
    assert gone(int((folder / "bg.pid").read_text()))
    command = ["sh", "-c", f"sleep 30 & echo $! > {folder}/bg2.pid; exit 4"]
    assert launcher().run(snapshot(folder, programs=None), command) == 4
    assert gone(int((folder / "bg2.pid").read_text()))


def test_without_a_list_no_log_is_read(folder: Path) -> None:
    assert launcher().run(snapshot(folder, programs=None), ["sh", "-c", "exit 7"]) == 7
    assert not (folder / "log.json").exists()
    assert (folder / "sandbox-exec.json").exists()


def test_a_signal_ending_the_command_is_128_plus_n(folder: Path) -> None:
    assert launcher().run(snapshot(folder, programs=None), ["sh", "-c", "kill -9 $$"]) == 137


def test_a_command_not_found_is_127_and_starts_nothing(
        folder: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert launcher().run(snapshot(folder, programs=LISTED), ["no-such-program-x"]) == 127
    assert "cannot run no-such-program-x: not found" in capfd.readouterr().err
    assert not (folder / "sandbox-exec.json").exists() and not (folder / "log.json").exists()


def test_learn_collects_what_this_run_ran(folder: Path) -> None:
    (folder / "fixture").write_text("\n".join([
        report_line("sandbox-exec", "{pid}", "allow", SH),
        report_line("sh", "{pid}", "allow", "/usr/bin/env"),
        report_line("sh", "{pid}", "allow", "/usr/bin/perl"),
        report_line("sh", "{pid}", "allow", "{tmpdir}tool"),
        report_line("sh", "{pid}", "deny", "/usr/bin/denied-not-run"),
        report_line("python3", os.getpid(), "allow", "/usr/bin/git"),
    ]) + "\n")
    status, text = launcher().learn(snapshot(folder, programs=LISTED),
                                    ["sh", "-c", "sleep 0.3; exit 5"])
    assert status == 5
    lines = text.splitlines()
    assert lines[2:4] == ["[commands]", "programs = ["]
    entries = [line.split('"')[1] for line in lines if line.startswith('    "')]
    assert entries == sorted(["env", "perl", os.path.basename(SH)])  # the file Seatbelt saw
    assert "an interpreter" in next(line for line in lines if '"perl"' in line)
    assert any(line.startswith("# left out ") and "tool" in line and "TMPDIR" in line
               for line in lines)
    assert "git" not in text and "denied-not-run" not in text
    profile = record(folder, "sandbox-exec")["profile"]
    assert isinstance(profile, str) and "(with report)" in profile and "PROGRAM_" not in profile


def test_learn_needs_the_log(folder: Path) -> None:
    (folder / "log-mode").write_text("exit")
    with pytest.raises(LaunchError, match="reads Seatbelt's reports from the system log"):
        launcher().learn(snapshot(folder, programs=None), ["sh", "-c", "exit 0"])
    missing = launcher(log=str(folder / "no-log"))
    with pytest.raises(LaunchError, match="cannot start"):
        missing.learn(snapshot(folder, programs=None), ["sh", "-c", "exit 0"])


@pytest.mark.parametrize("mode", ["exit", "silent", "missing", "not-admin"])
def test_a_run_goes_on_unnamed_when_the_log_cannot_be_read(
        folder: Path, capfd: pytest.CaptureFixture[str], mode: str) -> None:
    if mode != "missing":
        (folder / "log-mode").write_text(mode)
    run = launcher(attach_timeout=0.5)
    if mode == "missing":
        run = launcher(log=str(folder / "nx"))
    assert run.run(snapshot(folder, programs=LISTED), ["sh", "-c", "exit 9"]) == 9
    err = capfd.readouterr().err
    assert "the program list still holds, but refused programs go unnamed" in err
    if mode != "missing":
        assert gone(int(record(folder, "log")["pid"]))


def test_a_missing_sandbox_exec_is_a_launch_error(folder: Path) -> None:
    broken = launcher(sandbox_exec=str(folder / "no-sandbox-exec"))
    with pytest.raises(LaunchError, match="cannot start"):
        broken.run(snapshot(folder, programs=None), ["sh", "-c", "exit 0"])


SUPERVISOR = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {tests!r})
    from integration.test_macos_launch import launcher, snapshot, LISTED
    from pathlib import Path
    folder = Path({folder!r})
    sys.exit(launcher().run(snapshot(folder, programs=LISTED if {listed} else None),
                            {command!r}))
""")


@pytest.mark.parametrize("listed", [True, False])
def test_sigterm_to_the_supervisor_reaches_the_commands_handler(folder: Path,
                                                                listed: bool) -> None:
    ready = folder / "ready"
    command = ["sh", "-c", f"trap 'exit 42' TERM; touch {ready}; "
               "while :; do sleep 0.05; done"]
    script = SUPERVISOR.format(tests=str(REPO / "tests"), folder=str(folder), listed=listed,
                               command=command)
    supervisor = subprocess.Popen([sys.executable, "-c", script], cwd=REPO)
    try:
        deadline = time.monotonic() + 20
        while not ready.exists():
            assert time.monotonic() < deadline and supervisor.poll() is None
            time.sleep(0.02)
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=20) == 42
    finally:
        supervisor.kill()
        supervisor.wait()
    assert gone(int(record(folder, "sandbox-exec")["pid"]))
    if listed:
        assert gone(int(record(folder, "log")["pid"]))


# -- sandbox-exec's own failures, log's, forgeries, readiness ------------------------------


def test_learn_without_an_admin_account_says_so_and_how_to_fix_it(folder: Path) -> None:
    """`log stream` refuses a standard account (exit 77): not "inside a sandbox"."""
    (folder / "log-mode").write_text("not-admin")
    with pytest.raises(LaunchError) as caught:
        launcher().learn(snapshot(folder, programs=None), ["sh", "-c", "exit 0"])
    text = caught.value.render()
    assert "only for members of the admin group" in text and "Must be admin" in text
    assert "dseditgroup -o edit -a" in text and "sandbox" not in text.split("hint:")[1]
    assert caught.value.exit_status == 125
    assert not (folder / "sandbox-exec.json").exists()  # the command never ran


def test_learn_inside_a_sandbox_says_log_refuses_there(folder: Path) -> None:
    (folder / "log-mode").write_text("exit")
    with pytest.raises(LaunchError, match="refuses to run inside a sandbox") as caught:
        launcher().learn(snapshot(folder, programs=None), ["sh", "-c", "exit 0"])
    assert "outside any other sandbox" in caught.value.render()


@pytest.mark.parametrize("listed", [True, False])
@pytest.mark.parametrize("learn", [True, False])
def test_a_nested_sandbox_is_lnk_sandboxs_failure_and_runs_nothing(
        folder: Path, listed: bool, learn: bool) -> None:
    """sandbox-exec inside another sandbox exits 71 (`sandbox_apply: Operation not
    permitted`): the probe sees it before the command, so it is 125, named, never 71."""
    (folder / "sandbox-exec-mode").write_text("nested")
    snap = snapshot(folder, programs=LISTED if listed else None)
    marker = folder.parent / "ran"
    command = ["sh", "-c", f"touch {marker}; exit 71"]
    with pytest.raises(LaunchError, match="sandboxes do not nest") as caught:
        if learn:
            launcher().learn(snap, command)
        else:
            launcher().run(snap, command)
    assert caught.value.exit_status == 125
    assert "sandbox_apply: Operation not permitted" in caught.value.message
    assert [c["probe"] for c in calls(folder)] == [True]
    assert not (folder / "sandbox-exec.json").exists() and not marker.exists()
    if (folder / "log.json").exists():
        assert gone(int(record(folder, "log")["pid"]))


def test_a_process_already_sandboxed_starts_nothing(folder: Path) -> None:
    """sandbox_check says so before anything is started (the probe would say it too)."""
    for listed in (LISTED, None):
        with pytest.raises(LaunchError, match="sandboxes do not nest"):
            launcher(nested=True).run(snapshot(folder, programs=listed), ["true"])
    assert calls(folder) == [] and not (folder / "log.json").exists()


@pytest.mark.parametrize("listed", [True, False])
def test_a_profile_sandbox_exec_rejects_is_lnk_sandboxs_failure(folder: Path,
                                                                  listed: bool) -> None:
    (folder / "sandbox-exec-mode").write_text("reject")
    with pytest.raises(LaunchError, match="refused this launch's profile") as caught:
        launcher().run(snapshot(folder, programs=LISTED if listed else None),
                       ["sh", "-c", "exit 65"])
    assert "(exit 65)" in caught.value.message and "nvram" in caught.value.message
    assert caught.value.exit_status == 125
    assert not (folder / "sandbox-exec.json").exists()


def test_a_plain_run_probes_once_per_boot(folder: Path) -> None:
    """Without a program list no log is read: the probe's pass is kept for the boot,
    as a start keeps its checks; another boot probes again."""
    snap = snapshot(folder, programs=None)
    for _ in range(2):
        assert launcher().run(snap, ["sh", "-c", "exit 3"]) == 3
    assert [c["probe"] for c in calls(folder)] == [True, False, False]
    other = MacLauncher(sandbox_exec=str(STANDINS / "sandbox-exec"), log=str(STANDINS / "log"),
                        toolchain=NO_TOOLS, nested=lambda: False, boot=lambda: "another-boot")
    assert other.run(snap, ["sh", "-c", "exit 4"]) == 4
    assert [c["probe"] for c in calls(folder)] == [True, False, False, True, False]


def test_a_forged_report_is_never_named(folder: Path,
                                        capfd: pytest.CaptureFixture[str]) -> None:
    """A sandboxed program can os_log text that looks like a report (review 10): under
    the reporting subsystem with its own pid, or without the kernel's fields."""
    (folder / "fixture").write_text("\n".join([
        report_line("sh", "{pid}", "deny", "/usr/bin/forged-subsystem", processID=4242,
                    subsystem="com.apple.sandbox.reporting"),
        report_line("sh", "{pid}", "deny", "/usr/bin/forged-nopid", processID=None),
        report_line("sh", "{pid}", "deny", "/usr/bin/forged-sender",
                    senderImagePath="/tmp/sandbox-helper"),
        report_line("sh", "{pid}", "deny", "/usr/bin/forged-user", userID=501),
        report_line("sh", "{pid}", "deny", "/usr/bin/real"),
    ]) + "\n")
    report = folder.parent / "report.jsonl"
    status = launcher().run(snapshot(folder, programs=LISTED),
                            ["sh", "-c", "sleep 0.4; exit 0"], report=str(report))
    assert status == 0
    named = [json.loads(line)["resolved"] for line in report.read_text().splitlines()]
    assert named == ["/usr/bin/real"]
    assert "forged" not in capfd.readouterr().err


def test_learn_offers_nothing_a_forged_report_names(folder: Path) -> None:
    (folder / "fixture").write_text("\n".join([
        report_line("sh", "{pid}", "allow", "/usr/bin/osascript", processID=4242,
                    subsystem="com.apple.sandbox.reporting"),
        report_line("sh", "{pid}", "allow", "/usr/bin/perl", processImagePath="/bin/sh"),
        report_line("sh", "{pid}", "allow", "/usr/bin/env"),
    ]) + "\n")
    status, text = launcher().learn(snapshot(folder, programs=None),
                                    ["sh", "-c", "sleep 0.3"])
    assert status == 0
    assert '"env"' in text and "osascript" not in text and "perl" not in text


def test_the_command_starts_once_the_probes_report_is_read(
        folder: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Readiness is the probe's own report, read from the stream: a stream that shows
    none (attached to nothing) leaves a run unnamed after the wait, and refuses learn."""
    start = time.monotonic()
    assert launcher().run(snapshot(folder, programs=LISTED), ["sh", "-c", "exit 0"]) == 0
    assert "unnamed" not in capfd.readouterr().err
    assert time.monotonic() - start < 5
    probes = [c for c in calls(folder) if c["probe"]]
    assert probes and "(with report)" in str(probes[-1]["profile"]).splitlines()[-1]

    (folder / "log-mode").write_text("silent")
    start = time.monotonic()
    assert launcher(attach_timeout=1.0).run(snapshot(folder, programs=LISTED),
                                            ["sh", "-c", "exit 0"]) == 0
    assert time.monotonic() - start >= 1.0
    err = capfd.readouterr().err
    assert "showed no report of the readiness probe" in err and "go unnamed" in err
    with pytest.raises(LaunchError, match="no report of the readiness probe"):
        launcher(attach_timeout=1.0).learn(snapshot(folder, programs=None), ["true"])


@pytest.mark.parametrize("listed", [True, False])
def test_a_timeout_kills_the_group_a_term_ignoring_command_included(
        folder: Path, listed: bool, capfd: pytest.CaptureFixture[str]) -> None:
    """At its deadline the command's whole group is killed, one that ignores SIGTERM and
    its background child too: 124, said on stderr, on the plain and the watched path."""
    command = ["sh", "-c", f"trap '' TERM; sleep 30 & echo $! > {folder}/bg.pid; "
               "while :; do sleep 0.05; done"]
    started = time.monotonic()
    status = launcher().run(snapshot(folder, programs=LISTED if listed else None), command,
                            timeout=1.0)
    assert status == 124
    assert time.monotonic() - started < 10
    assert "timed out after 1 s" in capfd.readouterr().err
    assert gone(int((folder / "bg.pid").read_text()))
    assert gone(int(record(folder, "sandbox-exec")["pid"]))


def test_a_command_ending_before_its_timeout_keeps_its_status(
        folder: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert launcher().run(snapshot(folder, programs=None), ["sh", "-c", "exit 124"],
                          timeout=30.0) == 124
    assert "timed out" not in capfd.readouterr().err


def test_a_sessions_temp_folder_is_the_runs_and_is_kept(folder: Path) -> None:
    """The Python API's Sandbox on macOS: its temp folder is each run's TMPDIR, kept
    for the next run (the launcher removes only the temp folders it made)."""
    session = folder.parent / "session-temp"
    session.mkdir()
    outcome = launcher().launch(snapshot(folder, programs=None),
                                ["sh", "-c", 'echo kept > "$TMPDIR/f"'], temp=str(session))
    assert outcome.status == 0
    assert (session / "f").read_text() == "kept\n"
    second = launcher().launch(snapshot(folder, programs=None),
                               ["sh", "-c", 'test "$(cat "$TMPDIR/f")" = kept'],
                               temp=str(session))
    assert second.status == 0
