"""Exec-watch overhead: microseconds added per exec, and throughput of concurrent loops.

Inside one sandbox, N shell loops run /usr/bin/true concurrently (each loop a process
of its own: fork and execve, as a build runs its tools) and a driver reports the wall
time. The same runs unwatched (the default spec: no program list, so no watch) and
watched (a program list: every exec goes to the supervisor's receivers and is judged),
alternating, in the same run. A loop of Python threads is not used: CPython holds the
GIL through posix_spawn, so one exec waiting on the watch would stall them all.

    .venv/bin/python benchmarks/exec_watch.py [--execs 1000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

LNK = str(Path(sys.executable).parent / "lnk")
DRIVER = """
import os, subprocess, sys, time
loops, count = int(sys.argv[1]), int(sys.argv[2])
loop = f"i=0; while [ $i -lt {count} ]; do /usr/bin/true; i=$((i+1)); done"
start = time.perf_counter()
shells = [subprocess.Popen(["/bin/sh", "-c", loop]) for _ in range(loops)]
for shell in shells:
    shell.wait()
print(time.perf_counter() - start)
"""
WATCHED = ('[files]\nwrite = ["."]\n[commands]\n'
           'programs = ["/usr/bin/python3", "/usr/bin/true", "/bin/sh"]\n')


def timed(spec: str | None, loops: int, count: int, cwd: str, receivers: int = 0) -> float:
    env = dict(os.environ)
    if receivers:
        env["LNK_EXEC_WATCH_RECEIVERS"] = str(receivers)
    command = [LNK, "sandbox", "run"]
    if spec:
        command += ["--spec", spec, "--yes"]
    command += ["--", "/usr/bin/python3", "-c", DRIVER, str(loops), str(count)]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"the driver failed: {done.stderr}")
    return float(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--execs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--receivers", default="4",
                        help="comma-separated receiver counts to compare, e.g. 1,2,4,8")
    options = parser.parse_args()
    counts = [int(n) for n in options.receivers.split(",")]
    with tempfile.TemporaryDirectory(prefix="lnk-bench-") as cwd:
        spec = str(Path(cwd) / "watched.toml")
        Path(spec).write_text(WATCHED)
        timed(spec, 1, 50, cwd)
        timed(None, 1, 50, cwd)
        for receivers in counts:
            print(f"receivers: {receivers}")
            for loops in (1, 8, 16):
                count = options.execs if loops == 1 else max(options.execs // loops, 100)
                bare, watched = [], []
                for _ in range(options.rounds):
                    bare.append(timed(None, loops, count, cwd))
                    watched.append(timed(spec, loops, count, cwd, receivers))
                b, w = statistics.median(bare), statistics.median(watched)
                total = loops * count
                line = (f"  {loops:2d} loop(s), {total} execs: unwatched {total / b:7.0f}/s, "
                        f"watched {total / w:7.0f}/s, throughput ratio {b / w:.3f} "
                        f"({(1 - b / w) * 100:.1f}% less)")
                if loops == 1:
                    line += f"; added per exec {(w - b) / total * 1e6:.1f} us"
                print(line)


if __name__ == "__main__":
    main()
