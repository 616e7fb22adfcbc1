"""A protection the host takes away: the person's own tools replace a protected file of a
folder the sandbox writes while a run lasts (`git pull` writing a new `.mcp.json`, an
editor saving by renaming a new file over the old), which takes the sandbox's read-only
mount off it (the kernel detaches a mount from a dentry renamed over in another mount
namespace). Found by this session's own check of the red team's class: before, the
sandbox wrote the person's new `.mcp.json` for the rest of the run. Now the run ends at
once (125), naming the path (supervisor/linux/mount_watch.py), in both modes."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from support.processes import WAIT_FOR_GO, while_it_runs
from support.sandbox import LNK, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

PERSON = '{"mcpServers": {}}\n'
# Inside: say it started, wait for the go (given only after the person acted), then write.
WAIT_AND_WRITE = WAIT_FOR_GO + "echo evil > .mcp.json; echo wrote=$?"


def _run(box: Sandbox, act: Callable[[], None], end_first: float = 30
         ) -> tuple[int, str, str]:
    """The run, with the person's `act` outside once it is ready, the go given once the
    run ended or after `end_first` seconds; (status, out, err)."""
    command = [*box.who.prefix, LNK, "sandbox", "run", "--spec",
               str(box.write_spec('[files]\nwrite = ["."]\n')), "--yes", "--",
               "/bin/sh", "-c", WAIT_AND_WRITE]
    return while_it_runs(command, cwd=box.project, env=box.env(), act=act,
                         end_first=end_first)


def test_a_protected_file_the_host_replaces_ends_the_run(sandbox: Sandbox) -> None:
    target = sandbox.project / ".mcp.json"
    target.write_text('{"mcpServers": {"old": {}}}\n')
    sandbox.chown()

    def person_saves() -> None:
        new = sandbox.project / ".mcp.json.new"  # as git and editors write: a new file
        new.write_text(PERSON)
        os.replace(new, target)

    status, out, err = _run(sandbox, person_saves)
    assert out.splitlines() == ["STARTED"], (out, err)
    assert status == 125, (out, err)
    assert f"{target} was replaced or removed on the host while the run lasted" in err, err
    assert "which took off the mount that kept it from the sandbox" in err, err
    assert target.read_text() == PERSON  # the person's, as they wrote it


def test_without_a_replace_the_same_run_goes_on_and_is_refused(sandbox: Sandbox) -> None:
    """The control: nothing replaced, the go comes, and the write is refused (EROFS)."""
    target = sandbox.project / ".mcp.json"
    target.write_text(PERSON)
    sandbox.chown()
    status, out, err = _run(sandbox, lambda: None, end_first=0)
    assert status == 0, (out, err)
    assert out.splitlines() == ["STARTED", "wrote=2"], (out, err)
    assert "Read-only file system" in err
    assert target.read_text() == PERSON


def test_a_protected_file_the_host_renames_away_ends_the_run(sandbox: Sandbox) -> None:
    """Emacs saves (its first save of a file) by renaming the old file to a backup,
    `.mcp.json~`, and writing a new one. Renaming a mount point's dentry in another
    namespace changes no mount, so the kernel marks nothing: the sandbox's mount showed
    at `.mcp.json~`, the person's new `.mcp.json` was the sandbox's to write, and the
    run went on until it ended by itself (only then was the path said; red team 24c)."""
    target = sandbox.project / ".mcp.json"
    target.write_text('{"mcpServers": {"old": {}}}\n')
    sandbox.chown()

    def person_saves() -> None:
        os.rename(target, sandbox.project / ".mcp.json~")
        target.write_text(PERSON)

    status, out, err = _run(sandbox, person_saves)
    assert out.splitlines() == ["STARTED"], (out, err)
    assert status == 125, (out, err)
    assert f"{target} was replaced or removed on the host while the run lasted" in err, err
    assert target.read_text() == PERSON
