"""lnk-sandbox for harnesses: run a command, read and write a file, through a sandbox.

    import lnk_sandbox

    result = await lnk_sandbox.run(["make", "test"], spec="spec.toml", timeout=600)
    result.returncode, result.stdout, result.stderr, result.refusals, result.timed_out

    async with lnk_sandbox.Sandbox({"files": {"write": ["."]}}, yes=True) as sandbox:
        await sandbox.write_file("notes.txt", "hello")
        done = await sandbox.run(["cat", "notes.txt"], cwd=".", timeout=30)

`argv` is a list of words (a shell command is `["sh", "-c", "..."]`; one string is a
TypeError). An argument's mistake is a TypeError or ValueError; what lnk-sandbox refuses
is a SandboxError (SpecError, LaunchError, ConfinementError, HelperError,
NotAllowedError, importable here), whose `str()` says where and what to change.

Optional clients, each an extra of the distribution: an Inspect sandbox provider
(`lnk-sandbox[inspect]`, lnk_sandbox.inspect_provider), an MCP server (`lnk-sandbox[mcp]`,
`lnk mcp`), and Claude Code's shell prefix (lnk_sandbox.shell_prefix, no extra).
"""

from __future__ import annotations

from supervisor.errors import (
    ConfinementError,
    HelperError,
    LaunchError,
    NotAllowedError,
    SandboxError,
    SpecError,
)
from supervisor.events import Event

from ._api import (
    CANCEL_GRACE,
    Completed,
    Sandbox,
    SpecSource,
    load_spec,
    read_file,
    read_file_sync,
    run,
    run_sync,
    spec_from_dict,
    spec_from_toml,
    write_file,
    write_file_sync,
)

__all__ = [
    "CANCEL_GRACE", "Completed", "ConfinementError", "Event", "HelperError", "LaunchError",
    "NotAllowedError", "Sandbox", "SandboxError", "SpecError", "SpecSource", "load_spec",
    "read_file", "read_file_sync", "run", "run_sync", "spec_from_dict", "spec_from_toml",
    "write_file", "write_file_sync",
]
