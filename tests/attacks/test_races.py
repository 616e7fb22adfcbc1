"""Links and races: a granted folder swapped for a link again and again while a saved
(wrapped) command launches; a link at a placeholder's place; a hidden folder reached
through another grant's link. Every launch either refuses or mounts exactly the
snapshot's target, never the new place."""

from __future__ import annotations

import errno
import os
import shlex
import subprocess
import threading
import time

import pytest

from support.sandbox import PROBE_SOURCE, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

RUNS = int(os.environ.get("LNK_RACE_RUNS", "40"))


def test_a_grant_swapped_for_a_link_during_launches(sandbox: Sandbox) -> None:
    work = sandbox.home / "work"
    work.mkdir()
    decoy = sandbox.base / "decoy"
    decoy.mkdir()
    sandbox.chown()
    done = sandbox.lnk("wrap", "--", PYTHON_INSIDE, "-c", PROBE_SOURCE, "write",
                       str(work / "out"), spec='files.write = ["~/work"]\n')
    assert done.returncode == 0, done.stderr
    saved = shlex.split(done.stdout)
    stop = threading.Event()
    swaps = 0

    def swap() -> None:
        nonlocal swaps
        aside = sandbox.home / "work.aside"
        while not stop.is_set():
            os.rename(work, aside)
            os.symlink(decoy, work)
            time.sleep(0.001)
            os.unlink(work)
            os.rename(aside, work)
            swaps += 1
            time.sleep(0.001)

    swapper = threading.Thread(target=swap)
    swapper.start()
    outcomes = []
    wrote = False
    try:
        for _ in range(RUNS):
            run = subprocess.run([*sandbox.who.prefix, *saved], cwd="/", env=sandbox.env(),
                                 capture_output=True, text=True, timeout=60)
            outcomes.append(run.returncode)
            wrote = wrote or "RESULT ok" in run.stdout
            assert run.returncode in (0, 125), run.stderr
            if run.returncode == 125 and "STARTED" in run.stdout:
                # Moved away while the command ran: the dot files' mounts inside moved
                # with it, and the run is ended for it (mount_watch.py), never carried on.
                assert "(or a folder above it moved)" in run.stderr, run.stderr
            elif run.returncode == 125:
                assert any(text in run.stderr for text in (
                    "is a link", "no longer exists", "could not set up",
                    "cannot hold the missing dot files")), run.stderr
    finally:
        stop.set()
        swapper.join()
    assert swaps > 0
    assert list(decoy.iterdir()) == []  # never the new place
    # The race was met: with the folder a link or away about half the time, and a launch
    # looking at it more than once, some launches found it so and refused.
    assert 125 in outcomes, outcomes
    # A launch that went on wrote where the snapshot pointed: the folder it resolved (one
    # ended after it wrote, for the folder moved meanwhile, too).
    assert 0 not in outcomes or wrote
    assert wrote == (work / "out").exists()


@pytest.mark.parametrize("name", [".git", ".vscode"])
def test_a_link_at_a_placeholders_place_refuses_the_launch(sandbox: Sandbox, name: str
                                                           ) -> None:
    elsewhere = sandbox.base / "elsewhere"
    elsewhere.mkdir()
    (sandbox.project / name).symlink_to(elsewhere)
    sandbox.chown()
    done = sandbox.run(PYTHON_INSIDE, "-c", PROBE_SOURCE, "write",
                       str(sandbox.project / name / "config"))
    assert done.returncode == 125
    assert "STARTED" not in done.stdout
    assert "link" in done.stderr
    assert list(elsewhere.iterdir()) == []


def test_a_hidden_folder_reached_through_another_grants_link(sandbox: Sandbox) -> None:
    """~/.ssh is hidden; a link to it planted inside a written folder leads nowhere."""
    ssh = sandbox.home / ".ssh"
    ssh.mkdir()
    (ssh / "id_ed25519").write_text("PRIVATE KEY")
    (sandbox.project / "keys").symlink_to(ssh)
    sandbox.chown()
    spec = 'files.read = ["~"]\nfiles.write = ["."]\n'
    sandbox.probe("read", str(sandbox.project / "keys" / "id_ed25519"), spec=spec).expect(
        errno.ENOENT)
    sandbox.probe("read", str(ssh / "id_ed25519"), spec=spec).expect(errno.ENOENT)
