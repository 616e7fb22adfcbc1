"""Starts at once in one folder: none fails because another run started or ended.

An agent harness runs its tool calls in parallel in one project, so starts there
overlap all the time: one run's end removes the placeholders nobody else holds while
another start, which planned to hold them, is between its plan and its hold. Each
loop below runs short sandboxes one after another in the same folder, the loops at
once, the runs of different lengths so that ends fall among starts; every one must
succeed (it once failed 1 in 30: `.github no longer exists, so .github/hooks cannot be
held`). Afterwards the folder is as it was, but for the placeholders that linger for
the next run.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from support.sandbox import LNK, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

STARTS = int(os.environ.get("LNK_CONCURRENT_STARTS", "200"))


def _loop(sandbox: Sandbox, count: int, index: int, failures: Path) -> subprocess.Popen[str]:
    """A shell loop running `count` sandboxes one after another, each of a length of
    its own (0 to 40 ms of sleep inside), appending each failure's output to `failures`."""
    script = (
        'i=0; while [ "$i" -lt "$1" ]; do '
        '  out=$("$2" sandbox run -- sh -c "sleep 0.0$(( (i + $3) % 5 ))" 2>&1); rc=$?; '
        '  [ "$rc" = 0 ] || printf "exit %s: %s\\n" "$rc" "$out" >>"$4"; '
        '  i=$((i + 1)); '
        'done')
    return subprocess.Popen(
        [*sandbox.who.prefix, "sh", "-c", script, "loop", str(count), LNK, str(index),
         str(failures)],
        cwd=sandbox.project, env=sandbox.env(), text=True)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("loops", [2, 4])
def test_loops_of_runs_in_one_folder_never_collide(sandbox: Sandbox, loops: int) -> None:
    (sandbox.project / "notes.txt").write_text("mine\n")
    sandbox.chown()
    before = sandbox.listing()
    failures = sandbox.base / "failures"
    failures.touch()
    sandbox.chown(failures)
    per_loop = STARTS // 2 // loops  # the two cases make STARTS starts together
    running = [_loop(sandbox, per_loop, index, failures) for index in range(loops)]
    for loop in running:
        assert loop.wait(timeout=850) == 0
    assert failures.read_text() == "", f"of {per_loop * loops} starts:\n{failures.read_text()}"
    # What is left is the person's, and the settings folders' placeholders that linger
    # for the next run (empty, dot-named, listed with no live holder: `listing` checks).
    assert sandbox.listing() == before
