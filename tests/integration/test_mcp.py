"""`lnk mcp` with the official MCP SDK's own client, over stdio, as root and as a user.

The client lists the tools and their JSON schemas, runs a command, sees a refusal and a
timeout come back as tool errors (with the structured result), reads and writes files
inside the grants, and finds no way through a tool call to widen the spec it started
with, which the server showed on stderr when it started.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import TextContent

from lnk_sandbox.mcp_server import package_version
from support.sandbox import LNK, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns, pytest.mark.anyio]

SPEC = """
[files]
write = ["."]

[commands]
programs = ["sh", "cat", "echo", "sleep", "ls"]
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connected(sandbox: Sandbox, *args: str, errlog: Path) -> AsyncIterator[Client]:
    """The SDK's client, with `lnk mcp ARGS` started as the test's user over stdio."""
    command = [*sandbox.who.prefix, LNK, "mcp", *args]
    params = StdioServerParameters(command=command[0], args=command[1:],
                                   env=sandbox.env(), cwd=str(sandbox.project))
    with errlog.open("w") as log:
        async with Client(stdio_client(params, errlog=log), read_timeout_seconds=60) as client:
            yield client


def text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


async def test_the_tools_a_command_a_refusal_and_a_timeout(sandbox: Sandbox,
                                                           tmp_path: Path) -> None:
    spec = sandbox.write_spec(SPEC)
    errlog = tmp_path / "server.err"
    async with connected(sandbox, "--spec", str(spec), "--yes", errlog=errlog) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(listed) == {"run", "read_file", "write_file"}
        run_schema = listed["run"].input_schema
        assert run_schema["required"] == ["command"]
        assert run_schema["properties"]["command"]["type"] == "array"
        assert set(run_schema["properties"]) == {"command", "cwd", "timeout", "stdin"}
        assert listed["run"].output_schema is not None
        assert set(listed["run"].output_schema["properties"]) == {
            "status", "stdout", "stderr", "timed_out", "refusals"}

        ran = await client.call_tool("run", {"command": ["sh", "-c", "cat; echo err >&2; "
                                                         "exit 3"], "stdin": "hello\n"})
        assert not ran.is_error, text(ran)
        assert ran.structured_content == {"status": 3, "stdout": "hello\n", "stderr": "err\n",
                                          "timed_out": False, "refusals": []}

        refused = await client.call_tool("run", {"command": ["sh", "-c", "env true"]})
        assert refused.is_error
        found = refused.structured_content["refusals"]
        assert {(r["kind"], r["resolved"], r["rule"]) for r in found} == {
            ("program", os.path.realpath("/usr/bin/env"), "commands.programs")}
        assert f"refused: {os.path.realpath('/usr/bin/env')} (commands.programs)" in text(refused)

        late = await client.call_tool("run", {"command": ["sleep", "30"], "timeout": 1})
        assert late.is_error
        assert late.structured_content["status"] == 124
        assert late.structured_content["timed_out"]
        assert "timed out" in text(late)

        bad = await client.call_tool("run", {"command": [], "timeout": -1})
        assert bad.is_error  # the schema's own limits, checked by the SDK
    shown = errlog.read_text()
    assert "every tool call runs in this sandbox" in shown
    assert str(sandbox.project) in shown


async def test_files_inside_the_grants_and_nothing_widens_the_spec(sandbox: Sandbox,
                                                                   tmp_path: Path) -> None:
    secret = sandbox.home / "secret.txt"
    secret.write_text("host secret\n")
    sandbox.chown(secret)
    spec = sandbox.write_spec(SPEC)
    async with connected(sandbox, "--spec", str(spec), "--yes",
                         errlog=tmp_path / "server.err") as client:
        wrote = await client.call_tool("write_file", {"path": "sub/notes.txt",
                                                      "content": "naïve\n"})
        assert not wrote.is_error, text(wrote)
        assert (sandbox.project / "sub" / "notes.txt").read_text() == "naïve\n"
        read = await client.call_tool("read_file", {"path": "sub/notes.txt"})
        assert text(read) == "naïve\n"

        hidden = await client.call_tool("read_file", {"path": str(secret)})
        assert hidden.is_error and "No such file or directory" in text(hidden)
        outside = await client.call_tool("write_file", {"path": "/etc/lnk-mcp", "content": "x"})
        assert outside.is_error
        assert not Path("/etc/lnk-mcp").exists()
        # A working directory outside the grants is refused, not granted.
        moved = await client.call_tool("run", {"command": ["ls"], "cwd": "/var"})
        assert moved.is_error and "no folder the sandbox sees" in text(moved)
        # An argument that is no tool parameter reaches nothing (a spec, a grant).
        sneaky = await client.call_tool("run", {"command": ["cat", str(secret)],
                                                "spec": '[files]\nread = ["~"]\n'})
        assert sneaky.is_error or sneaky.structured_content["status"] != 0
        assert "host secret" not in text(sneaky)
        # /tmp is the server's own, kept between calls.
        await client.call_tool("run", {"command": ["sh", "-c", "echo kept > /tmp/t"]})
        kept = await client.call_tool("run", {"command": ["cat", "/tmp/t"]})
        assert kept.structured_content["stdout"] == "kept\n"


async def test_a_spec_not_allowed_before_says_the_command_that_allows_it(
        sandbox: Sandbox, tmp_path: Path) -> None:
    """An MCP client starts the server with pipes: a spec not allowed before once ended
    the server, which the client saw as `Connection closed`. The server now starts, and
    each tool call is a tool error (which the model and the person see) naming the
    command that allows the spec; once the person ran it, the next call runs."""
    spec = sandbox.write_spec(SPEC)
    errlog = tmp_path / "server.err"
    command = f"lnk sandbox allow --spec {spec} --for {sandbox.project}"
    async with connected(sandbox, "--spec", str(spec), errlog=errlog) as client:
        refused = await client.call_tool("run", {"command": ["echo", "hi"]})
        assert refused.is_error
        assert text(refused) == (
            f"lnk-sandbox: the spec {spec} was not allowed before, and there is no "
            "terminal to ask on\n"
            f"  hint: the person runs at a terminal: {command} (it shows what the spec "
            "allows and asks once); then call the tool again")
        wrote = await client.call_tool("write_file", {"path": "x", "content": "x"})
        assert wrote.is_error and command in text(wrote)
        assert not (sandbox.project / "x").exists()
        # The person runs the command the tool said (lnk by its path here), at a
        # terminal, where it asks; --yes stands for their answer.
        allowed = subprocess.run([*sandbox.who.prefix, LNK, *shlex.split(command)[1:],
                                  "--yes"],
                                 env=sandbox.env(), capture_output=True, text=True,
                                 timeout=60, cwd=sandbox.base)
        assert allowed.returncode == 0, allowed.stderr
        assert allowed.stderr == (f"lnk-sandbox: allowed {spec} in {sandbox.project} and "
                                  "every folder inside it\n")
        ran = await client.call_tool("run", {"command": ["echo", "hi"]})
        assert not ran.is_error and ran.structured_content["stdout"] == "hi\n", text(ran)
    said = [line for line in errlog.read_text().splitlines()
            if line.startswith("lnk-sandbox:")]
    assert said == [f"lnk-sandbox: MCP server {package_version()}, spec {spec} in "
                    f"{sandbox.project}: not allowed yet: each tool call says so until the "
                    f"person runs {command} (`lnk sandbox describe` shows what it allows)"]


async def test_the_server_says_its_version_and_one_line_on_stderr(sandbox: Sandbox,
                                                                 tmp_path: Path) -> None:
    errlog = tmp_path / "server.err"
    async with connected(sandbox, errlog=errlog) as client:
        info = client.server_info
        assert info is not None and info.name == "lnk-sandbox"
        assert info.version == package_version() != ""
        assert str(sandbox.project) in (client.instructions or "")
    assert errlog.read_text() == (
        f"lnk-sandbox: MCP server {package_version()}, spec <default spec> in "
        f"{sandbox.project}: every tool call runs in this sandbox, fixed for the server's "
        "life (`lnk sandbox describe` shows what it allows)\n")


def test_the_input_schema_is_json_schema() -> None:
    """The schemas the client saw are valid JSON Schema documents (draft 2020-12)."""
    import jsonschema

    from lnk_sandbox.mcp_server import RunOutput

    schema = RunOutput.model_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    json.dumps(schema)
