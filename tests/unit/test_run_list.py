"""The run list in $LNK_HOME/runs: an entry per live run, locked while its run lives."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from supervisor.linux.runs import RunList


def test_a_live_run_never_holds_the_list_for_another_start(tmp_path: Path) -> None:
    """Two runs at once: the second start lists itself while the first is listed (the
    folder's lock is held only while an entry is made, never for a run's length)."""
    lnk_home = tmp_path / "lnk"
    first = RunList(str(lnk_home), "1-1-00000001")
    made: list[RunList] = []
    second = threading.Thread(target=lambda: made.append(
        RunList(str(lnk_home), "2-2-00000002")), daemon=True)
    second.start()
    second.join(timeout=10)
    try:
        assert made, "the second start waited for the first run to end"
        assert sorted(os.listdir(lnk_home / "runs")) == ["1-1-00000001", "2-2-00000002"]
    finally:
        first.close()
        for run in made:
            run.close()
    assert os.listdir(lnk_home / "runs") == []


def test_a_killed_runs_entry_is_unlisted_by_the_next_start(tmp_path: Path) -> None:
    """Its lock went with its process: the next start finds the entry unlocked."""
    lnk_home = tmp_path / "lnk"
    code = ("import sys; from supervisor.linux.runs import RunList; "
            "RunList(sys.argv[1], '3-3-00000003'); import os; os._exit(0)")
    subprocess.run([sys.executable, "-c", code, str(lnk_home)], check=True,
                   env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    assert os.listdir(lnk_home / "runs") == ["3-3-00000003"]
    RunList(str(lnk_home), "4-4-00000004").close()
    assert os.listdir(lnk_home / "runs") == []


def test_a_cgroup_still_holding_the_supervisor_is_kept_not_emptied(tmp_path: Path) -> None:
    """A move home the kernel refused leaves this process in the run's cgroup: end()
    must not cgroup.kill it (that would end the supervisor), and says it kept it, so the
    keeper is told the run ended rather than to kill that cgroup."""
    from supervisor.limits import Limits, resolve
    from supervisor.linux.cgroups import RunCgroups

    folder = tmp_path / "run-cgroup"
    folder.mkdir()
    (folder / "cgroup.procs").write_text(f"{os.getpid()}\n")
    (folder / "cgroup.kill").write_text("")  # were it emptied, this would be written
    run = RunCgroups("5-5-00000005", resolve(Limits()))
    run.made = [str(folder)]
    run.end()
    assert run.kept == [str(folder)]
    assert (folder / "cgroup.kill").read_text() == ""
