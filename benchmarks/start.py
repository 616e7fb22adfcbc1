"""Start cost: `lnk sandbox run -- /bin/true` against bare bwrap with the same mounts.

Both are measured in the same run, as whole processes, alternating, and the medians
printed in milliseconds with their ratio. Bare bwrap gets the default spec's mounts in
path form (but the placeholders, which it would make on the host) and runs /bin/true
itself: what lnk-sandbox adds is the supervisor's start,
resolving and pinning, the inner confiner's interpreter, and waiting for the status.
The proxy row is the same start in proxy mode (an empty allow list): the proxy's
listeners, the network helper joining the sandbox, and the wait for it before the go.
`--baseline LNK` times another installation's `lnk` (an older checkout's venv) in the
same alternation, so that a before and an after share the machine's load.

    .venv/bin/python benchmarks/start.py [--runs N] [--baseline PATH/TO/lnk]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LNK = str(Path(sys.executable).parent / "lnk")


def bare_bwrap_args(workdir: str) -> list[str]:
    """The default spec's plan for `workdir`, with every bind in path form."""
    from supervisor.linux.plan import build_plan
    from supervisor.linux.run import plan_for  # noqa: F401  (same layout probe)
    from supervisor.stages import snapshot_for

    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        snapshot = snapshot_for(None)
        from supervisor.installation import inner_source, interpreter
        from supervisor.linux.plan import HostLayout

        python, prefix = interpreter()
        root_mode = os.geteuid() == 0
        layout = HostLayout.probe(inner_source(), python, prefix, snapshot, root_mode=root_mode)
        plan = build_plan(snapshot, layout, root_mode=root_mode)
    finally:
        os.chdir(cwd)
    args = ["bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--unshare-net", "--die-with-parent", "--cap-drop", "ALL",
            "--disable-userns"]
    for op in plan.ops:
        if op.source and op.kind in ("ro-bind", "bind") and not os.path.lexists(op.source):
            continue  # a placeholder lnk makes for the run: bwrap alone would make it here
        if op.kind in ("ro-bind", "bind"):
            args += [f"--{op.kind}", str(op.source), op.dest]
        elif op.kind == "symlink":
            args += ["--symlink", str(op.source), op.dest]
        elif op.kind in ("tmpfs", "dev", "proc", "remount-ro"):
            args += [f"--{op.kind}", op.dest]
        elif op.kind == "mask-folder":
            args += ["--perms", "0000", "--tmpfs", op.dest]
        elif op.kind in ("mask-file", "hide-file"):
            # An empty file from a pipe, as lnk does: DATA is replaced by a fresh fd per run.
            args += (["--perms", "0000"] if op.kind == "mask-file" else []) + [
                "--ro-bind-data", "DATA", op.dest]
    return [*args, "--chdir", workdir, "/bin/true"]


def timed(command: list[str], cwd: str) -> float:
    """One whole run of `command`; each DATA in it becomes a fresh empty pipe."""
    fds = []
    args = list(command)
    for index, arg in enumerate(args):
        if arg == "DATA":
            read_end, write_end = os.pipe()
            os.close(write_end)
            fds.append(read_end)
            args[index] = str(read_end)
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, stdout=subprocess.DEVNULL, check=False,
                          pass_fds=fds)
    elapsed = time.perf_counter() - start
    for fd in fds:
        os.close(fd)
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} failed with {done.returncode}")
    return elapsed * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--baseline", metavar="LNK")
    args = parser.parse_args()
    runs = args.runs
    with tempfile.TemporaryDirectory(prefix="lnk-bench-") as workdir:
        # The dot-file folders a start holds with placeholders exist already, for both:
        # bare bwrap then binds the same folders lnk does.
        for name in (".git", ".vscode", ".idea", ".husky"):
            os.mkdir(os.path.join(workdir, name))
        bare = bare_bwrap_args(workdir)
        lnk = [LNK, "sandbox", "run", "--", "/bin/true"]
        spec = os.path.join(workdir, "proxy.toml")
        with open(spec, "w") as handle:
            handle.write('[network]\nmode = "proxy"\nallow = []\n')
        proxy = [LNK, "sandbox", "run", "--yes", "--spec", spec, "--", "/bin/true"]
        commands = {"bare": bare, "lnk": lnk, "proxy": proxy}
        if args.baseline:
            commands["baseline lnk"] = [args.baseline, *lnk[1:]]
            commands["baseline proxy"] = [args.baseline, *proxy[1:]]
        for _ in range(3):
            for command in commands.values():
                timed(command, workdir)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, command in commands.items():
                times[name].append(timed(command, workdir))
    median = {name: statistics.median(found) for name, found in times.items()}
    b, s, p = median["bare"], median["lnk"], median["proxy"]
    print(f"bare bwrap, same mounts:        median {b:6.1f} ms  (n={runs})")
    print(f"lnk sandbox run -- /bin/true:   median {s:6.1f} ms  (n={runs})")
    print(f"  the same in proxy mode:       median {p:6.1f} ms  (n={runs})")
    if args.baseline:
        print(f"baseline lnk:                   median {median['baseline lnk']:6.1f} ms")
        print(f"  the same in proxy mode:       median {median['baseline proxy']:6.1f} ms")
    print(f"ratio: {s / b:.1f}x bare bwrap (target: at most 10x); proxy mode {p / b:.1f}x")


if __name__ == "__main__":
    main()
