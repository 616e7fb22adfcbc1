"""The Python API for harnesses (lnk_sandbox), run as a harness runs it: a script with its
own event loop, as root and as an unprivileged user, each call a real sandbox.

What it must hold: the command's status, output and input exactly; the refusals as
structured events; a timeout that kills the tree; a spec given as a file, TOML text or
a dict, validated by the same code; and file reads and writes that go through the
sandbox, so a path the spec does not grant is never touched, whatever a link says.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from support import capabilities as caps
from support.processes import descendants, wait_gone
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

PYTHON = str(caps.VENV_BIN / "python")
PRELUDE = """
import anyio, json, os, sys, time
import lnk_sandbox
from lnk_sandbox import Sandbox

def done(r):
    return {"status": r.returncode, "out": r.stdout.decode("latin-1") if r.stdout is not None
            else None, "err": r.stderr.decode("latin-1") if r.stderr is not None else None,
            "timed_out": r.timed_out, "exec_errno": r.exec_errno,
            "refusals": [e._asdict() for e in r.refusals]}

def failure(err):
    text = err.render() if isinstance(err, lnk_sandbox.SandboxError) else str(err)
    return {"type": type(err).__name__, "errno": getattr(err, "errno", None), "text": text,
            "str": str(err)}

async def attempt(awaitable):
    try:
        return await awaitable
    except (OSError, lnk_sandbox.SandboxError, ValueError, TypeError) as err:
        return failure(err)

OUT = {}
"""


def harness(sandbox: Sandbox, body: str, *, timeout: float = 120,
            cwd: Path | None = None) -> dict[str, Any]:
    """Run `async def main()` (`body`) as the test's user; the OUT it fills."""
    script = PRELUDE + "async def main():\n" + textwrap.indent(textwrap.dedent(body), "    ") \
        + "\nanyio.run(main)\nprint('RESULT ' + json.dumps(OUT))\n"
    done = subprocess.run([*sandbox.who.prefix, PYTHON, "-c", script],
                          cwd=cwd or sandbox.project, env=sandbox.env(), capture_output=True,
                          text=True, timeout=timeout)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, f"{done.stdout}\n{done.stderr}"
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT "):])
    return result


def test_a_command_runs_with_its_input_output_and_status(sandbox: Sandbox) -> None:
    out = harness(sandbox, """
        payload = bytes(range(256)) * 20000  # 5 MB, every byte value
        r = await lnk_sandbox.run(["sh", "-c", "cat; echo to-err >&2; exit 7"], stdin=payload)
        OUT["big"] = [r.returncode, r.stdout == payload, r.stderr.decode()]
        r = await lnk_sandbox.run(["sh", "-c", "echo $GREETING"], env={"GREETING": "hé"})
        OUT["env"] = done(r)
        r = await lnk_sandbox.run(["pwd"], cwd="sub")
        OUT["cwd"] = done(r)
        OUT["loader"] = await attempt(lnk_sandbox.run(["true"], env={"LD_PRELOAD": "/x.so"}))
        OUT["tail"] = done(await lnk_sandbox.run(["sh", "-c", "seq 1 10000"], output_limit=12))
    """, cwd=None) if _mkdir(sandbox.project / "sub", sandbox) else {}
    assert out["big"] == [7, True, "to-err\n"]
    assert out["env"]["out"] == "hÃ©\n"  # latin-1 view of the UTF-8 bytes "hé\n"
    assert out["cwd"]["out"] == f"{os.path.realpath(sandbox.project / 'sub')}\n"
    # The caller's argument, not the spec, is at fault: ValueError, saying why.
    assert out["loader"]["type"] == "ValueError" and out["loader"]["text"].startswith(
        "env['LD_PRELOAD']: LD_PRELOAD makes the dynamic loader or libc load chosen code")
    assert out["tail"]["out"] == "9998\n9999\n10000\n"[-12:]


def _mkdir(path: Path, sandbox: Sandbox) -> bool:
    path.mkdir()
    sandbox.chown(path)
    return True


def test_a_timeout_kills_the_tree_and_says_so(sandbox: Sandbox) -> None:
    out = harness(sandbox, """
        started = time.monotonic()
        r = await lnk_sandbox.run(
            ["sh", "-c", "trap '' TERM; echo $$ > pid; sleep 300 & while :; do sleep 1; done"],
            timeout=1.5)
        OUT["run"] = done(r)
        OUT["took"] = time.monotonic() - started
        r = await lnk_sandbox.run(["sh", "-c", "exit 124"], timeout=60)
        OUT["own"] = done(r)
        OUT["bad"] = await attempt(lnk_sandbox.run(["true"], timeout=0))
    """)
    assert out["run"]["status"] == 124 and out["run"]["timed_out"]
    assert "timed out after 1.5 s" in out["run"]["err"]
    assert out["took"] < 10
    assert out["own"]["status"] == 124 and not out["own"]["timed_out"]
    assert (out["bad"]["type"], out["bad"]["text"]) == (
        "ValueError", "timeout: 0: a timeout must be more than 0 seconds (None for no timeout)")


def test_refusals_and_an_unrunnable_command_are_structured(sandbox: Sandbox) -> None:
    (sandbox.project / "plain.txt").write_text("not a program\n")
    sandbox.chown(sandbox.project / "plain.txt")
    out = harness(sandbox, """
        spec = {"files": {"read": ["."]}, "commands": {"programs": ["sh"]}}
        r = await lnk_sandbox.run(["sh", "-c", "env true"], spec=spec, yes=True)
        OUT["refused"] = done(r)
        OUT["missing"] = done(await lnk_sandbox.run(["no-such-program-here"]))
        OUT["plain"] = done(await lnk_sandbox.run(["./plain.txt"]))
    """)
    refused = out["refused"]
    assert refused["status"] == 126
    # One event per execve the shell tried along PATH (/usr/bin/env, /bin/env...).
    assert {(e["kind"], e["resolved"], e["rule"]) for e in refused["refusals"]} == {
        ("program", os.path.realpath("/usr/bin/env"), "commands.programs")}
    assert out["missing"]["status"] == 127 and out["missing"]["exec_errno"] == 2
    assert out["plain"]["status"] == 126 and out["plain"]["exec_errno"] == 13
    assert out["plain"]["refusals"] == []


def test_a_spec_as_a_file_as_toml_text_and_as_a_dict_is_one_spec(sandbox: Sandbox) -> None:
    text = '[files]\nread = ["~/data"]\nwrite = ["."]\n\n[env]\nset = { MODE = "x" }\n'
    path = sandbox.write_spec(text)
    (sandbox.home / "data").mkdir()
    sandbox.lnk_home.mkdir()  # as after any first start, so each form resolves it alike
    sandbox.chown()
    out = harness(sandbox, f"""
        forms = {{"file": {str(path)!r}, "toml": lnk_sandbox.spec_from_toml({text!r}),
                 "dict": {{"files": {{"read": ["~/data"], "write": ["."]}},
                          "env": {{"set": {{"MODE": "x"}}}}}}}}
        for name, spec in forms.items():
            async with Sandbox(spec, yes=True) as box:
                s = box.snapshot  # all but where the spec wrote each grant (its line)
                OUT[name] = [[g._replace(line=None) for g in s.grants], s.settings.env_assign,
                             s.programs, s.settings.network_mode]
        bad = {{"files": {{"write": [".", 3]}}}}
        OUT["dict_error"] = await attempt(lnk_sandbox.run(["true"], spec=bad, yes=True))
        async def from_toml():
            return lnk_sandbox.spec_from_toml('[files]\\nwrite = [".", 3]\\n')
        OUT["toml_error"] = await attempt(from_toml())
        OUT["unknown"] = await attempt(lnk_sandbox.run(["true"], spec={{"file": {{}}}}, yes=True))
    """)
    assert out["file"] == out["toml"] == out["dict"]
    assert out["dict_error"]["type"] == out["toml_error"]["type"] == "SpecError"
    reason = "must be a path or a table { path = ..., optional = ... }, not a number"
    assert out["dict_error"]["text"] == f"<dict>: key files.write[1]: {reason}"
    assert out["toml_error"]["text"] == f"<string>:2: key files.write[1]: {reason}"
    # str() of the error is the whole of it, where and what, as a harness logs it.
    assert out["dict_error"]["str"] == out["dict_error"]["text"]
    assert out["toml_error"]["str"] == out["toml_error"]["text"]
    assert "unknown key 'file'" in out["unknown"]["text"]


def test_a_session_keeps_its_tmp_and_no_host_path_shows_it(sandbox: Sandbox) -> None:
    out = harness(sandbox, """
        async with Sandbox(yes=True) as box:
            OUT["host_tmp"] = box.tmp
            await box.write_file("/tmp/work/in.txt", "kept\\n")
            # (the tests' project is in the host's /tmp: its mount point shows in any /tmp)
            r = await box.run(["sh", "-c", "cat in.txt; echo more > out.txt; "
                               "ls -A /tmp | grep -v ^lnk-test-"], cwd="/tmp/work")
            OUT["first"] = done(r)
            OUT["second"] = (await box.read_file("/tmp/work/out.txt")).decode()
            OUT["during"] = os.path.isdir(box.tmp)
            OUT["outside"] = await attempt(box.run(["true"], cwd="/home"))
            OUT["nowhere"] = await attempt(box.run(["true"], cwd="/tmp/none"))
        OUT["after"] = os.path.exists(OUT["host_tmp"])
        r = await lnk_sandbox.run(["sh", "-c", "ls -A /tmp | grep -v ^lnk-test-"])
        OUT["fresh"] = done(r)
    """)
    assert out["first"]["out"] == "kept\nwork\n"
    assert out["second"] == "more\n"
    assert out["during"] and not out["after"]
    assert out["host_tmp"].startswith(str(sandbox.lnk_home))
    assert out["outside"]["type"] == "LaunchError" and "no folder the sandbox sees" in \
        out["outside"]["text"]
    assert out["nowhere"]["type"] == "LaunchError"
    assert out["fresh"]["out"] == ""


def test_files_go_through_the_sandbox_never_to_a_path_it_does_not_grant(
        sandbox: Sandbox) -> None:
    secret = sandbox.home / "secret.txt"
    secret.write_text("host secret\n")
    outside = sandbox.home / "outside.txt"
    outside.write_text("untouched\n")
    tmp_outside = sandbox.base / "outside.txt"
    tmp_outside.write_text("untouched\n")
    (sandbox.project / "to-secret").symlink_to(secret)
    (sandbox.project / "to-outside").symlink_to(outside)
    (sandbox.project / "to-tmp-outside").symlink_to(tmp_outside)
    (sandbox.project / "dir").mkdir()
    sandbox.chown()
    out = harness(sandbox, """
        spec = {"files": {"write": ["."]}, "commands": {"programs": []}}
        async with Sandbox(spec, yes=True) as box:
            await box.write_file("made/new.bin", bytes(range(256)))
            OUT["new"] = list(await box.read_file("made/new.bin"))
            OUT["secret"] = await attempt(box.read_file("to-secret"))
            OUT["write_link"] = await attempt(box.write_file("to-outside", "changed"))
            OUT["write_tmp_link"] = await attempt(box.write_file("to-tmp-outside", "changed"))
            OUT["etc"] = await attempt(box.write_file("/etc/lnk-test", "x"))
            OUT["hidden"] = await attempt(box.read_file(os.path.expanduser("~/secret.txt")))
            OUT["dir"] = await attempt(box.read_file("dir"))
            OUT["limit"] = await attempt(box.read_file("made/new.bin", limit=100))
    """)
    assert out["new"] == list(range(256))
    assert (sandbox.project / "made" / "new.bin").read_bytes() == bytes(range(256))
    assert out["secret"]["type"] == "FileNotFoundError"
    # The link leads where the sandbox's own view says: a folder it does not see is
    # missing there (home), and what it writes through a link lands in its own /tmp (the
    # tests' folders are in the host's /tmp); never in the host's file.
    assert out["write_link"]["type"] == "FileNotFoundError"
    assert out["write_tmp_link"] is None
    assert outside.read_text() == "untouched\n"
    assert tmp_outside.read_text() == "untouched\n"
    assert out["etc"]["errno"] == 30  # EROFS: the system folders are read-only inside
    assert not Path("/etc/lnk-test").exists()
    assert out["hidden"]["type"] == "FileNotFoundError"
    assert out["dir"]["type"] == "IsADirectoryError"
    assert out["limit"]["errno"] == 27  # EFBIG


def test_a_cancelled_call_leaves_nothing_running(sandbox: Sandbox) -> None:
    process = subprocess.Popen(
        [*sandbox.who.prefix, PYTHON, "-c", PRELUDE + textwrap.dedent("""
            async def main():
                with anyio.move_on_after(2):
                    await lnk_sandbox.run(["sh", "-c", "trap '' TERM; sleep 300 & "
                                           "echo STARTED >&2; while :; do sleep 1; done"],
                                          capture=False)
                print("CANCELLED", flush=True)
                await anyio.sleep(30)
            anyio.run(main)
        """)], cwd=sandbox.project, env=sandbox.env(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None and process.stdout is not None
        assert process.stderr.readline() == "STARTED\n"
        tree = descendants(process.pid)
        assert len(tree) >= 4, tree
        assert process.stdout.readline() == "CANCELLED\n"
        assert not wait_gone(tree, timeout=5)
    finally:
        process.kill()
        process.communicate()


def test_the_synchronous_forms(sandbox: Sandbox) -> None:
    script = textwrap.dedent("""
        import json, lnk_sandbox
        lnk_sandbox.write_file_sync("sync.txt", "written")
        r = lnk_sandbox.run_sync(["cat", "sync.txt"])
        print(json.dumps([r.returncode, r.stdout.decode(),
                          lnk_sandbox.read_file_sync("sync.txt").decode()]))
    """)
    done = subprocess.run([*sandbox.who.prefix, PYTHON, "-c", script], cwd=sandbox.project,
                          env=sandbox.env(), capture_output=True, text=True, timeout=60)
    assert json.loads(done.stdout) == [0, "written", "written"], done.stderr


def test_calls_cancelled_at_any_point_leave_no_descriptor(sandbox: Sandbox) -> None:
    """A harness makes thousands of calls: one cancelled before its tasks ran, or while
    they wait, must close what it opened all the same."""
    out = harness(sandbox, """
        before = len(os.listdir("/proc/self/fd"))
        for delay in (0, 0, 0.001, 0.01, 0.05, 0.2, 0.5):
            with anyio.move_on_after(delay):
                await lnk_sandbox.run(["sleep", "5"])
        done = await lnk_sandbox.run(["true"])
        OUT["status"] = done.returncode
        OUT["leaked"] = len(os.listdir("/proc/self/fd")) - before
    """)
    assert out == {"status": 0, "leaked": 0}


def test_a_string_command_and_bad_arguments_are_the_callers_errors(sandbox: Sandbox) -> None:
    """`run("echo hi")` once ran a program `e` (a string is a sequence of letters): it
    is a TypeError saying how to pass a shell command, and that way runs. Every other
    argument of the wrong kind or value is a TypeError or ValueError before anything
    starts, never a SpecError (the spec is not at fault) nor a run without it."""
    out = harness(sandbox, """
        OUT["string"] = await attempt(lnk_sandbox.run("echo hi"))
        OUT["bytes_argv"] = await attempt(lnk_sandbox.run(b"echo hi"))
        OUT["decide"] = await attempt(lnk_sandbox.run(["true"], decide_fd=987654))
        OUT["decide_timeout"] = await attempt(lnk_sandbox.run(["true"], decide_timeout=0))
        async with Sandbox(yes=True) as box:
            OUT["box_string"] = await attempt(box.run("echo hi"))
            OUT["shell"] = done(await box.run(["sh", "-c", "echo hi | wc -c"]))
            OUT["word"] = await attempt(box.run(["echo", b"hi"]))
            OUT["nul"] = await attempt(box.run(["echo", "a\\x00b"]))
            OUT["empty"] = await attempt(box.run([]))
            OUT["timeout"] = await attempt(box.run(["true"], timeout=-1))
            OUT["timeout_kind"] = await attempt(box.run(["true"], timeout="5"))
            OUT["output_limit"] = await attempt(box.run(["true"], output_limit=-1))
            OUT["stdin"] = await attempt(box.run(["true"], stdin=5))
            OUT["env"] = await attempt(box.run(["true"], env=[("A", "b")]))
            OUT["env_name"] = await attempt(box.run(["true"], env={"A=B": "c"}))
            OUT["limit"] = await attempt(box.read_file("x", limit=-1))
            OUT["path"] = await attempt(box.read_file(3))
            OUT["after"] = done(await box.run(["sh", "-c", "echo still"]))
    """)
    assert out["string"] == out["box_string"] == {
        "type": "TypeError", "errno": None, "str": out["string"]["str"],
        "text": "argv is a list of words, not one str: to run a shell command, pass "
                "['sh', '-c', 'echo hi']; to run one program, ['echo hi']"}
    assert out["bytes_argv"]["type"] == "TypeError"
    assert (out["shell"]["status"], out["shell"]["out"]) == (0, "3\n")
    assert (out["after"]["status"], out["after"]["out"]) == (0, "still\n")
    expected = {
        "decide": ("ValueError", "decide_fd 987654: Bad file descriptor"),
        "decide_timeout": ("ValueError", "decide_timeout 0: must be more than 0 seconds"),
        "word": ("TypeError", "argv[1] is bytes, not a string"),
        "nul": ("ValueError", "argv[1] holds a NUL character"),
        "empty": ("ValueError", "argv is empty"),
        "timeout": ("ValueError", "timeout: -1: a timeout must be more than 0 seconds"),
        "timeout_kind": ("TypeError", "timeout: '5' is not a number of seconds"),
        "output_limit": ("ValueError", "output_limit -1: a number of bytes is 0 or more"),
        "stdin": ("TypeError", "stdin is bytes or str, or None, not int"),
        "env": ("TypeError", "env is a mapping of names to strings, not list"),
        "env_name": ("ValueError", "env['A=B']: 'A=B' is not a variable name"),
        "limit": ("ValueError", "limit -1: a number of bytes is 0 or more"),
        "path": ("TypeError", "path is a str (or a path), not int"),
    }
    for name, (kind, text) in expected.items():
        assert (out[name]["type"], out[name]["text"][:len(text)]) == (kind, text), name
