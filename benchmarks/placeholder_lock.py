"""The placeholder lock: what it adds to a start, and how long starts wait at once.

Measured in one run, against baselines from the same run, printed as ratios:

1. what it adds to a start: importing `supervisor.linux.placeholders` after what a start
   imports anyway, then `hold()` for a typical project (.git there; .vscode, .idea and
   .husky missing, so three placeholders made and listed), against the bare work the
   placeholders need (three mkdir, one lstat) and against a whole
   `lnk sandbox run -- /bin/true`; `release()` (after the command) likewise;
2. waiting at once: 16 warmed processes (imports done) released together, each holding
   the same project's placeholders for a different short time, then releasing: the wait
   for the lock (median, p90, p99, max) against the same holds made one after another
   (the uncontended wait). flock is not first come, first served: a start is starved
   when it waits longer than every other start's two locked sections together, the
   most a queue could make it wait; the largest wait is compared with that;
3. the same with 16 fresh interpreters started at once, each holding as soon as its
   imports are done: how starts made together actually meet at the lock.

    .venv/bin/python benchmarks/placeholder_lock.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from supervisor.linux.placeholders import Placeholders, Wanted  # noqa: E402

LNK = str(Path(sys.executable).parent / "lnk")
MISSING = (".vscode", ".idea", ".husky")
STARTS = 16

# What a start imports anyway before the plan (supervisor.run, the CLI, launch.py, the
# capability cache), then the module itself, timed alone.
_IMPORT = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import dataclasses, errno, fcntl, itertools, json, os, stat, typing
import supervisor.errors, supervisor.state, supervisor.spec, supervisor.grants
assert "supervisor.linux.placeholders" not in sys.modules
t = time.perf_counter()
import supervisor.linux.placeholders
print((time.perf_counter() - t) * 1e6)
"""

# A cold start: a fresh interpreter importing what a start imports, waiting for the go,
# then holding and releasing; prints [hold wait, hold, release wait, release].
_COLD = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import supervisor.linux.backend
from supervisor.linux.placeholders import Placeholders, Wanted
project, lnk_home, number = sys.argv[2], sys.argv[3], int(sys.argv[4])
want = [Wanted(project + "/" + name, "folder") for name in (".git",) + tuple(sys.argv[5:])]
places = Placeholders(lnk_home)
sys.stdin.read(1)
t = time.perf_counter()
held = places.hold(want)
hold, hold_wait = time.perf_counter() - t, places.last_wait
time.sleep(0.001 * (number % 4))
t = time.perf_counter()
held.release()
print(json.dumps([hold_wait, hold, places.last_wait, time.perf_counter() - t]))
"""


def wanted(project: str) -> list[Wanted]:
    return [Wanted(f"{project}/.git", "folder"),
            *(Wanted(f"{project}/{name}", "folder") for name in MISSING)]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def import_cost(runs: int) -> float:
    """µs to import the module once a start's other imports are done (fresh processes)."""
    # Compiled once first, as an installation's bytecode is (whatever the environment
    # says about writing it).
    warm = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", _IMPORT, str(ROOT)], env=warm,
                   capture_output=True, check=True)
    costs = [float(subprocess.run([sys.executable, "-c", _IMPORT, str(ROOT)],
                                  capture_output=True, text=True, check=True).stdout)
             for _ in range(runs)]
    return statistics.median(costs)


def single(base: str, runs: int) -> dict[str, float]:
    """Median µs, in one warmed process, each iteration paired with its own baseline so
    that the disk's drift cancels: hold (three placeholders made) minus the bare work
    (three mkdir, one lstat); release; and a join (another run holds them already: the
    lock and the state alone) with its release."""
    project = os.path.join(base, "single")
    os.makedirs(os.path.join(project, ".git"))
    places = Placeholders(os.path.join(base, "lnk-single"))
    rows: dict[str, list[float]] = {k: [] for k in ("hold", "bare", "added", "release",
                                                     "wait", "join", "leave")}
    for _ in range(runs):
        t = time.perf_counter()
        os.lstat(os.path.join(project, ".git"))
        for name in MISSING:
            os.mkdir(os.path.join(project, name))
        bare = time.perf_counter() - t
        for name in MISSING:
            os.rmdir(os.path.join(project, name))
        t = time.perf_counter()
        held = places.hold(wanted(project))
        hold = time.perf_counter() - t
        rows["wait"].append(places.last_wait)
        t = time.perf_counter()
        other = places.hold(wanted(project))
        rows["join"].append(time.perf_counter() - t)
        t = time.perf_counter()
        other.release()
        rows["leave"].append(time.perf_counter() - t)
        t = time.perf_counter()
        held.release()
        rows["release"].append(time.perf_counter() - t)
        rows["hold"].append(hold)
        rows["bare"].append(bare)
        rows["added"].append(hold - bare)
    return {k: statistics.median(v) * 1e6 for k, v in rows.items()}


def whole_start(base: str, runs: int) -> float:
    """Median ms of `lnk sandbox run -- /bin/true` in a project like the one above."""
    project = os.path.join(base, "whole")
    os.makedirs(os.path.join(project, ".git"))
    env = {**os.environ, "LNK_HOME": os.path.join(base, "lnk-whole")}
    times = []
    for i in range(runs + 2):
        t = time.perf_counter()
        subprocess.run([LNK, "sandbox", "run", "--", "/bin/true"], cwd=project, env=env,
                       check=True)
        if i >= 2:
            times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def _child(project: str, lnk_home: str, number: int, go: int, out: int) -> None:
    places = Placeholders(lnk_home)
    want = wanted(project)
    os.read(go, 1)
    t = time.perf_counter()
    held = places.hold(want)
    hold = time.perf_counter() - t
    hold_wait = places.last_wait
    time.sleep(0.001 * (number % 4))  # "running", each for a different time
    t = time.perf_counter()
    held.release()
    release = time.perf_counter() - t
    os.write(out, (json.dumps([hold_wait, hold, places.last_wait, release]) + "\n").encode())


def at_once(base: str, rounds: int, *, together: bool) -> list[list[float]]:
    """Per start: [hold wait, hold, release wait, release] in seconds."""
    project = os.path.join(base, "together" if together else "apart")
    os.makedirs(os.path.join(project, ".git"), exist_ok=True)
    lnk_home = os.path.join(base, "lnk-at-once")
    results: list[list[float]] = []
    for _ in range(rounds):
        out_read, out_write = os.pipe()
        pids, gates = [], []
        for number in range(STARTS):
            go_read, go_write = os.pipe()
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    os.close(go_write)
                    os.close(out_read)
                    _child(project, lnk_home, number, go_read, out_write)
                    code = 0
                finally:
                    os._exit(code)
            os.close(go_read)
            pids.append(pid)
            gates.append(go_write)
        os.close(out_write)
        time.sleep(0.05)  # every child forked and waiting
        if together:
            for gate in gates:
                os.write(gate, b"g")
            for pid in pids:
                os.waitpid(pid, 0)
        else:
            for gate, pid in zip(gates, pids, strict=True):
                os.write(gate, b"g")
                os.waitpid(pid, 0)
        for gate in gates:
            os.close(gate)
        with os.fdopen(out_read) as lines:
            results.extend(json.loads(line) for line in lines)
        if os.listdir(project) != [".git"]:
            raise SystemExit(f"left behind: {os.listdir(project)}")
    return results


def cold(base: str, rounds: int) -> list[list[float]]:
    """16 fresh interpreters started at once, each going as soon as its imports are done
    (the go is written before they start, so it waits for nothing but itself)."""
    project = os.path.join(base, "cold")
    os.makedirs(os.path.join(project, ".git"), exist_ok=True)
    results: list[list[float]] = []
    for _ in range(rounds):
        runs = [subprocess.Popen([sys.executable, "-c", _COLD, str(ROOT), project,
                                  os.path.join(base, "lnk-cold"), str(n), *MISSING],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                for n in range(STARTS)]
        for run in runs:
            out, _ = run.communicate("g", timeout=120)
            results.append(json.loads(out))
        if os.listdir(project) != [".git"]:
            raise SystemExit(f"left behind: {os.listdir(project)}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20, help="rounds of 16 starts at once")
    parser.add_argument("--runs", type=int, default=200, help="single holds measured")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lnk-bench-lock-") as base:
        imported = import_cost(15)
        one = single(base, args.runs)
        start_ms = whole_start(base, 20)
        apart = at_once(base, args.rounds, together=False)
        together = at_once(base, args.rounds, together=True)
        fresh = cold(base, max(1, args.rounds // 2))

    added = imported + one["added"]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"one start (n={args.runs}), a project with .git and {', '.join(MISSING)} missing:")
    print(f"  import supervisor.linux.placeholders after a start's imports: {imported:7.1f} µs")
    print(f"  hold(), three made: {one['hold']:7.1f} µs (lock wait {one['wait']:.1f} µs); "
          f"the bare mkdir/lstat alone {one['bare']:.1f} µs; paired difference "
          f"{one['added']:.1f} µs")
    print(f"  hold() joining another run's: {one['join']:7.1f} µs; its release "
          f"{one['leave']:.1f} µs (the lock and the state alone)")
    print(f"  release() after the command, three removed: {one['release']:7.1f} µs")
    print(f"  added to a start (import + hold - bare work): {added / 1000:.3f} ms "
          "(target: at most 0.5 ms)")
    print(f"  = {added / 1000 / start_ms:.1%} of a whole `lnk sandbox run -- /bin/true` "
          f"({start_ms:.1f} ms median, same run); with release: "
          f"{(added + one['release']) / 1000 / start_ms:.1%}")

    def waits(rows: list[list[float]]) -> list[float]:
        return [row[0] * 1e6 for row in rows] + [row[2] * 1e6 for row in rows]

    def sections(rows: list[list[float]]) -> float:
        return statistics.median([(row[1] - row[0]) * 1e6 for row in rows]
                                 + [(row[3] - row[2]) * 1e6 for row in rows])

    alone, crowd = waits(apart), waits(together)
    section = sections(apart)
    base_median = statistics.median(alone)
    print(f"{STARTS} starts at once, {args.rounds} rounds ({len(crowd)} lock waits: each "
          "start's hold and release):")
    print(f"  uncontended (the same starts one after another): median {base_median:.1f} µs,"
          f" p99 {percentile(alone, 0.99):.1f} µs; a locked section takes {section:.1f} µs")
    print(f"  at once: median {statistics.median(crowd):.1f} µs, p90 "
          f"{percentile(crowd, 0.90):.1f} µs, p99 {percentile(crowd, 0.99):.1f} µs, max "
          f"{max(crowd):.1f} µs (target: median at most 25 µs)")
    print(f"  ratio to uncontended: median {statistics.median(crowd) / base_median:.1f}x, "
          f"p99 {percentile(crowd, 0.99) / base_median:.1f}x")
    # First come, first served, a wait is at most every other start's two sections, as
    # long as they took in this same crowd.
    crowded = sections(together)
    print(f"  a locked section in the crowd takes {crowded:.1f} µs (CPU shared by "
          f"{STARTS} processes)")
    bound = (2 * STARTS - 1) * crowded
    verdict = "none starved" if max(crowd) <= bound else "a start starved"
    print(f"  largest wait / every other start's two sections ({bound:.0f} µs): "
          f"{max(crowd) / bound:.2f} ({verdict})")
    late = waits(fresh)
    print(f"{STARTS} fresh interpreters started at once ({len(late)} lock waits), each going "
          "when its imports are done:")
    print(f"  median {statistics.median(late):.1f} µs, p90 {percentile(late, 0.90):.1f} µs, "
          f"p99 {percentile(late, 0.99):.1f} µs, max {max(late):.1f} µs; ratio to "
          f"uncontended: median {statistics.median(late) / base_median:.1f}x")


if __name__ == "__main__":
    main()
