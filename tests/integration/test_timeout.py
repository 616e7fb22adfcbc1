"""`--timeout`: at the deadline the whole sandbox tree is killed, 124, said on stderr.

The processes a run leaves are found from the host (the supervisor's descendants, by
/proc's parent links), not from inside: a process in the sandbox's PID namespace that
outlived the kill would be invisible to a `ps` run in a later sandbox.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from support.processes import descendants, wait_gone, wait_until
from support.sandbox import LNK, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

# Ignores SIGTERM, leaves a child in its group and one in a session of its own
# (setsid: out of bwrap's process group), then waits.
STUBBORN = ("trap '' TERM; sleep 300 & setsid sleep 301 & echo STARTED; "
            "while :; do sleep 0.1; done")


def test_the_tree_is_killed_at_the_deadline(sandbox: Sandbox) -> None:
    process = subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--timeout", "2", "--",
         "sh", "-c", STUBBORN],
        cwd=sandbox.project, env=sandbox.env(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    assert process.stdout is not None
    assert process.stdout.readline() == "STARTED\n"
    # bwrap, its pid 1, sh, two sleeps (and a loop's sleep), once the sleeps have started
    wait_until(lambda: len(descendants(process.pid)) >= 5)
    tree = descendants(process.pid)
    assert len(tree) >= 5, tree  # bwrap, its pid 1, sh, two sleeps (and a loop's sleep)
    _, err = process.communicate(timeout=30)
    elapsed = time.monotonic() - started
    assert process.returncode == 124, err
    assert 1.5 < elapsed < 10, elapsed
    assert err.count("lnk-sandbox: timed out after 2 s") == 1, err
    assert not wait_gone(tree, timeout=5), "a process of the sandbox outlived its timeout"


def test_a_run_ending_first_keeps_its_own_status(sandbox: Sandbox) -> None:
    done = sandbox.lnk("run", "--timeout", "30", "--", "sh", "-c", "echo out; exit 3")
    assert (done.returncode, done.stdout) == (3, "out\n")
    assert "timed out" not in done.stderr


def test_a_command_exiting_124_by_itself_is_no_timeout(sandbox: Sandbox) -> None:
    done = sandbox.run("sh", "-c", "exit 124")
    assert done.returncode == 124
    assert "timed out" not in done.stderr


def test_a_deadline_before_the_command_starts_still_ends_the_run(sandbox: Sandbox) -> None:
    done = sandbox.lnk("run", "--timeout", "0.001", "--", "sleep", "30", timeout=20)
    assert done.returncode == 124, done.stderr
    assert "timed out after 0.001 s" in done.stderr


def test_a_saved_snapshot_takes_a_timeout_too(sandbox: Sandbox) -> None:
    line = sandbox.lnk("wrap", "--", "true", spec='[files]\nwrite = ["."]\n')
    snapshot_id = line.stdout.split()[2]
    done = sandbox.lnk("exec", snapshot_id, "--timeout=1", "--", "sleep", "30", timeout=20)
    assert done.returncode == 124, done.stderr


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_a_timeout_that_is_no_number_of_seconds_runs_nothing(sandbox: Sandbox,
                                                             value: str) -> None:
    marker = sandbox.project / "ran"
    done = sandbox.lnk("run", "--timeout", value, "--", "touch", str(marker))
    assert done.returncode == 125
    assert "--timeout" in done.stderr
    assert not marker.exists()


def test_the_specs_limit_feeds_the_same_timeout(sandbox: Sandbox) -> None:
    """`[limits] timeout` and --timeout are one mechanism: the earlier deadline wins."""
    spec = '[files]\nwrite = ["."]\n[limits]\ntimeout = "1s"\n'
    done = sandbox.lnk("run", "--timeout", "60", "--", "sleep", "30", spec=spec, timeout=30)
    assert done.returncode == 124, done.stderr
    assert "timed out after 1 s" in done.stderr
    done = sandbox.lnk("run", "--timeout", "0.5", "--", "sleep", "30", spec=spec, timeout=30)
    assert "timed out after 0.5 s" in done.stderr
