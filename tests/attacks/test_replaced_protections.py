"""A protection the host takes away: the person's own tools replace a protected file of a
folder the sandbox writes while a run lasts (`git pull` writing a new `.mcp.json`, an
editor saving by renaming a new file over the old), which takes the sandbox's read-only
mount off it (the kernel detaches a mount from a dentry renamed over in another mount
namespace). Found by this session's own check of the red team's class: before, the
sandbox wrote the person's new `.mcp.json` for the rest of the run. Now the run ends at
once (125), naming the path (supervisor/linux/mount_watch.py), in both modes."""

from __future__ import annotations

import os
import subprocess

import pytest

from support.processes import wait_until
from support.sandbox import LNK, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

PERSON = '{"mcpServers": {}}\n'
# Inside: say it started, wait for the go (made only after the person acted), then write.
WAIT_AND_WRITE = ("echo STARTED; touch ready; while [ ! -e go ]; do sleep 0.05; done; "
                  "echo evil > .mcp.json; echo wrote=$?")


def _start(box: Sandbox) -> subprocess.Popen[str]:
    command = [*box.who.prefix, LNK, "sandbox", "run", "--spec",
               str(box.write_spec('[files]\nwrite = ["."]\n')), "--yes", "--",
               "/bin/sh", "-c", WAIT_AND_WRITE]
    return subprocess.Popen(command, cwd=box.project, env=box.env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_a_protected_file_the_host_replaces_ends_the_run(sandbox: Sandbox) -> None:
    target = sandbox.project / ".mcp.json"
    target.write_text('{"mcpServers": {"old": {}}}\n')
    sandbox.chown()
    run = _start(sandbox)
    try:
        assert wait_until(lambda: (sandbox.project / "ready").exists()
                          or run.poll() is not None, timeout=30)
        assert (sandbox.project / "ready").exists(), run.communicate(timeout=10)
        new = sandbox.project / ".mcp.json.new"  # as git and editors write: a new file
        new.write_text(PERSON)
        os.replace(new, target)
        wait_until(lambda: run.poll() is not None, timeout=30)
        (sandbox.project / "go").touch()  # too late: the run has ended
        out, err = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
    assert out.splitlines() == ["STARTED"], (out, err)
    assert run.returncode == 125, (out, err)
    assert f"{target} was replaced or removed on the host while the run lasted" in err, err
    assert "which took off the mount that kept it from the sandbox" in err, err
    assert target.read_text() == PERSON  # the person's, as they wrote it


def test_without_a_replace_the_same_run_goes_on_and_is_refused(sandbox: Sandbox) -> None:
    """The control: nothing replaced, the go comes, and the write is refused (EROFS)."""
    target = sandbox.project / ".mcp.json"
    target.write_text(PERSON)
    (sandbox.project / "go").touch()
    sandbox.chown()
    run = _start(sandbox)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 0, (out, err)
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
    run = _start(sandbox)
    try:
        assert wait_until(lambda: (sandbox.project / "ready").exists()
                          or run.poll() is not None, timeout=30)
        assert (sandbox.project / "ready").exists(), run.communicate(timeout=10)
        os.rename(target, sandbox.project / ".mcp.json~")
        target.write_text(PERSON)
        wait_until(lambda: run.poll() is not None, timeout=10)
        (sandbox.project / "go").touch()  # too late when the run has ended
        out, err = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
    assert out.splitlines() == ["STARTED"], (out, err)
    assert run.returncode == 125, (out, err)
    assert f"{target} was replaced or removed on the host while the run lasted" in err, err
    assert target.read_text() == PERSON
