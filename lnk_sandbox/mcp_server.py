"""`lnk mcp`: a stdio MCP server whose tools run commands and touch files in a sandbox.

Any agent that speaks the Model Context Protocol can then use lnk-sandbox without an
adapter of its own (`pip install 'lnk-sandbox[mcp]'`, on the official `mcp` SDK):

    lnk mcp [--spec FILE] [--yes] [--cwd DIR]

The spec is fixed when the server starts: validated, resolved and allowed once (its
description is shown on stderr, which MCP clients show or log, and sent as the server's
instructions); no tool has a parameter that reaches it, so a tool call never widens it.
Like `lnk sandbox run`, a spec not allowed before needs `--yes` (an MCP client starts
the server with pipes, not a terminal, so there is no one to ask) or an earlier run at a
terminal. The server is one `lnk_sandbox.Sandbox` session: /tmp is kept from one call to
the next and removed when the server ends.

Tools, each described by a JSON schema the SDK derives from its signature:
- `run`: a command (argv, no shell) with an optional working directory, timeout and
  input; its exit status, output and the sandbox's refusals. A refusal, a timeout, and
  lnk-sandbox's own failure are tool errors (`isError`), so the model sees that the
  sandbox, not the command, decided; a command's own failing status is not.
- `read_file`, `write_file`: a UTF-8 text file inside the spec's grants, read or written
  by the sandbox itself (a path it does not see is missing there).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from supervisor.errors import SandboxError

from ._api import Completed, Sandbox

DEFAULT_TIMEOUT = 120.0
MAX_OUTPUT = 1 << 20  # bytes kept of each stream: the last ones
MAX_READ = 10 << 20


class Refusal(BaseModel):
    """One thing the spec refused during the run, as the supervisor saw it."""

    kind: str = Field(description='"program" or "network" (or a forwarded/exposed port)')
    subject: str = Field(description="what was asked: the program's path, or host:port")
    resolved: str = Field(description="what it was judged as")
    rule: str = Field(description="the spec's key that decided")


class RunOutput(BaseModel):
    """How a sandboxed command ended."""

    status: int = Field(description="exit status: the command's own, 124 timed out, 125 "
                        "lnk-sandbox failed, 126 could not run (or refused), 127 not found")
    stdout: str
    stderr: str
    timed_out: bool
    refusals: list[Refusal]


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", "replace")


def _summary(done: Completed) -> str:
    lines = [f"exit status {done.returncode}" + (" (timed out)" if done.timed_out else "")]
    lines += [f"refused: {r.resolved} ({r.rule})" for r in done.refusals]
    if done.stdout:
        lines += ["--- stdout", _text(done.stdout).rstrip("\n")]
    if done.stderr:
        lines += ["--- stderr", _text(done.stderr).rstrip("\n")]
    return "\n".join(lines)


def build_server(sandbox: Sandbox, description: str) -> MCPServer:
    """The server over one open Sandbox; its tools take no part of the spec."""
    server: MCPServer = MCPServer(
        name="lnk-sandbox",
        instructions="Commands and files go through a sandbox whose spec was fixed when "
        "this server started:\n" + description,
    )

    @server.tool(annotations=ToolAnnotations(title="Run a command in the sandbox",
                                             destructive_hint=True, open_world_hint=False))
    async def run(
        command: Annotated[list[str], Field(min_length=1, description=(
            "the program and its arguments, run without a shell (for one: "
            '["sh", "-c", "..."])'))],
        cwd: Annotated[str | None, Field(description=(
            "working directory inside the sandbox: a folder it sees (relative: to the "
            "server's); default the server's"))] = None,
        timeout: Annotated[float, Field(gt=0, le=3600, description=(
            "seconds, after which the command and everything it started are killed"))]
        = DEFAULT_TIMEOUT,
        stdin: Annotated[str | None, Field(description="the command's input")] = None,
    ) -> Annotated[CallToolResult, RunOutput]:
        """Run a command confined by the server's spec: it sees only the files the spec
        grants, runs only the programs it lists, reaches the network only as it says."""
        try:
            done = await sandbox.run(command, cwd=cwd, timeout=timeout, stdin=stdin,
                                     output_limit=MAX_OUTPUT)
        except SandboxError as err:
            return CallToolResult(content=[TextContent(type="text", text=err.render())],
                                  is_error=True)
        output = RunOutput(status=done.returncode, stdout=_text(done.stdout),
                           stderr=_text(done.stderr), timed_out=done.timed_out,
                           refusals=[Refusal(kind=r.kind, subject=r.subject,
                                             resolved=r.resolved, rule=r.rule)
                                     for r in done.refusals])
        return CallToolResult(content=[TextContent(type="text", text=_summary(done))],
                              structured_content=output.model_dump(mode="json"),
                              is_error=done.timed_out or bool(done.refusals))

    @server.tool(annotations=ToolAnnotations(title="Read a file in the sandbox",
                                             read_only_hint=True, open_world_hint=False))
    async def read_file(
        path: Annotated[str, Field(min_length=1, description=(
            "the file as the sandbox sees it (relative: to the server's folder)"))],
    ) -> str:
        """A UTF-8 text file's content, read by the sandbox itself."""
        data: bytes = await _file(sandbox.read_file(path, limit=MAX_READ, timeout=60), path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ValueError(f"{path} is not UTF-8 text (byte {err.start})") from None

    @server.tool(annotations=ToolAnnotations(title="Write a file in the sandbox",
                                             destructive_hint=True, open_world_hint=False))
    async def write_file(
        path: Annotated[str, Field(min_length=1, description=(
            "the file as the sandbox sees it (relative: to the server's folder); missing "
            "folders are made"))],
        content: Annotated[str, Field(description="the whole new content, as UTF-8")],
    ) -> str:
        """Write a text file, by the sandbox itself: only where the spec lets it write."""
        await _file(sandbox.write_file(path, content, timeout=60), path)
        return f"wrote {len(content.encode('utf-8'))} bytes to {path}"

    return server


async def _file(operation: Any, path: str) -> Any:
    """A file tool's OSError or SandboxError as the text the model reads."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        return await operation
    except OSError as err:
        raise ToolError(f"{path}: {err.strerror or err}") from None
    except SandboxError as err:
        raise ToolError(err.render()) from None


@asynccontextmanager
async def serving(spec: str | None, *, yes: bool, cwd: str | None
                  ) -> AsyncIterator[MCPServer]:
    """The Sandbox opened and shown, and the server over it; closed after."""
    from supervisor.api import description_of
    from supervisor.describe import render

    async with Sandbox(spec, cwd=cwd, yes=yes) as sandbox:
        description = render(description_of(sandbox.snapshot))  # shown line by line
        shown = "".join(f"  {line}\n" for line in description.splitlines())
        sys.stderr.write(f"lnk-sandbox: MCP server; every tool call runs in this sandbox, "
                         f"fixed for the server's life:\n{shown}")
        sys.stderr.flush()
        yield build_server(sandbox, description)


def main(argv: list[str], prog: str = "lnk mcp") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=(
        "A stdio MCP server whose tools run commands and read and write files in a "
        "sandbox of one spec, fixed when it starts."))
    parser.add_argument("--spec", metavar="FILE",
                        help="the spec (TOML); the embedded default without it")
    parser.add_argument("--yes", action="store_true",
                        help="allow a spec not allowed before without asking")
    parser.add_argument("--cwd", metavar="DIR",
                        help="the folder the spec's '.' is, and the tools' working "
                        "directory (the current one by default)")
    args = parser.parse_args(argv)

    async def serve() -> None:
        async with serving(args.spec, yes=args.yes, cwd=args.cwd) as server:
            await server.run_stdio_async()

    try:
        anyio.run(serve)
    except SandboxError as err:
        sys.stderr.write(f"lnk-sandbox: {err.render()}\n")
        return err.exit_status
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:], os.path.basename(sys.argv[0])))
