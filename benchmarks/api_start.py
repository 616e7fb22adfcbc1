"""Start cost of a call through the Python API, against the command line, in one run.

A harness that already runs Python can call `lnk_sandbox.run` instead of starting
`lnk sandbox run`. Both are timed here from the same asyncio loop, alternating, each
call to its end (`/bin/true` in the embedded default spec):

- cli: `lnk sandbox run -- /bin/true`, started with anyio.run_process (the baseline);
- api: `await lnk_sandbox.run(["/bin/true"])`, which validates and resolves the spec in
  the harness's process, then starts one supervisor (`python -I -c`, supervisor/child.py)
  and hands it the snapshot;
- session: `await sandbox.run(["/bin/true"])` in an open `lnk_sandbox.Sandbox` (the spec
  resolved once, a /tmp kept): what Inspect's provider and `lnk mcp` do per call.

Medians in milliseconds, and each ratio to the cli's median of the same run.

    .venv/bin/python benchmarks/api_start.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

import lnk_sandbox

LNK = str(Path(sys.executable).parent / "lnk")


async def main(runs: int) -> None:
    workdir = tempfile.mkdtemp(prefix="lnk-bench-api-")
    os.chdir(workdir)
    async with lnk_sandbox.Sandbox() as session:

        async def cli() -> None:
            done = await anyio.run_process([LNK, "sandbox", "run", "--", "/bin/true"],
                                           check=False)
            assert done.returncode == 0, done.stderr

        async def api() -> None:
            done = await lnk_sandbox.run(["/bin/true"])
            assert done.returncode == 0, done.stderr

        async def in_session() -> None:
            done = await session.run(["/bin/true"])
            assert done.returncode == 0, done.stderr

        ways: dict[str, Callable[[], Awaitable[None]]] = {
            "cli": cli, "api": api, "session": in_session}
        times: dict[str, list[float]] = {name: [] for name in ways}
        for way in ways.values():  # warm the caches (the per-boot checks, the page cache)
            await way()
        names = list(ways)
        for round_ in range(runs):
            for name in names[round_ % 3:] + names[: round_ % 3]:  # each first in turn
                start = time.perf_counter()
                await ways[name]()
                times[name].append((time.perf_counter() - start) * 1000)
    baseline = statistics.median(times["cli"])
    print(f"start cost of one call to /bin/true, {runs} rounds, medians "
          f"(uid {os.geteuid()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}):")
    for name, values in times.items():
        median = statistics.median(values)
        spread = statistics.quantiles(values, n=4) if len(values) >= 4 else [median] * 3
        print(f"  {name:<8} {median:7.1f} ms  (quartiles {spread[0]:.1f}-{spread[2]:.1f})"
              f"  x{median / baseline:.2f} of cli")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    anyio.run(main, parser.parse_args().runs)
