"""What bwrap costs for the two ways a home read grant could hide home's configuration.

linux/home.py renders `read = ["~"]` as a tmpfs at home with each entry without a dot
bound back; the other way is home bound whole with each dot entry hidden over it (a
tmpfs per dot folder, made read-only, an empty file per dot file). Both are timed here
as bare bwrap running /bin/true in a fresh home of N entries, in the same rounds, each
case's extra milliseconds over the round's plain bind of home printed as a median, as
benchmarks/start.py times its cases. docs/design.md keeps the figures and the choice.

    .venv/bin/python benchmarks/home_mounts.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time

BASE = ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
        "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev",
        "--tmpfs", "/tmp"]


def dots_hidden(home: str, folders: int, files: int) -> list[str]:
    """Home bound whole, each dot folder under a tmpfs and each dot file under an empty
    one, the tmpfses made read-only last (as plan.py hides)."""
    args = ["--ro-bind", home, home]
    args += [a for i in range(folders) for a in ("--tmpfs", f"{home}/.d{i}")]
    args += [a for i in range(files) for a in ("--ro-bind", "/dev/null", f"{home}/.f{i}")]
    args += [a for i in range(folders) for a in ("--remount-ro", f"{home}/.d{i}")]
    return args


def entries_shown(home: str, entries: int) -> list[str]:
    """Home a tmpfs with each entry without a dot bound back, made read-only last."""
    args = ["--tmpfs", home]
    args += [a for i in range(entries) for a in ("--ro-bind", f"{home}/p{i}", f"{home}/p{i}")]
    return [*args, "--remount-ro", home]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    base = tempfile.mkdtemp(prefix="lnk-home-bench-", dir="/var/tmp")
    home = os.path.join(base, "home")
    try:
        for i in range(200):
            os.makedirs(f"{home}/.d{i}")
        for i in range(100):
            open(f"{home}/.f{i}", "w").close()
        for i in range(300):
            os.makedirs(f"{home}/p{i}")
        cases = {
            "home bound whole": ["--ro-bind", home, home],
            "dots hidden: 30 folders, 15 files": dots_hidden(home, 30, 15),
            "dots hidden: 100 folders, 50 files": dots_hidden(home, 100, 50),
            "dots hidden: 200 folders, 100 files": dots_hidden(home, 200, 100),
            **{f"entries shown: {n}": entries_shown(home, n) for n in (10, 20, 40, 100, 300)},
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        names = list(cases)
        for round_number in range(runs):
            turned = names[round_number % len(names):] + names[:round_number % len(names)]
            for name in turned:
                started = time.perf_counter()
                subprocess.run([*BASE, *cases[name], "/bin/true"], check=True)
                times[name].append(time.perf_counter() - started)
        bare = statistics.median(times["home bound whole"])
        for name in names:
            median = statistics.median(times[name])
            print(f"{name:40} {median * 1000:8.2f} ms  +{(median - bare) * 1000:7.2f} ms  "
                  f"x{median / bare:.2f} of home bound whole")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
