"""Start cost of `/bin/true` in a sandbox, each way lnk starts one, against bare bwrap.

Every case is timed as a whole process (but the API's, timed as a harness sees its call)
in the same rounds, in an order that turns each round so that none is always first or
last; each round's time is divided by that round's bare bwrap, and the medians of those
ratios are printed, with the milliseconds: the machine's load moves the milliseconds,
much less the ratios of neighbouring runs. Bare bwrap gets the default spec's mounts in
path form (but the placeholders, which it would make on the host) and runs /bin/true
itself: what lnk-sandbox adds is the supervisor's start, resolving and pinning, the inner
confiner, and waiting for the status.

The cases (issue 21 sets the goals printed beside them):

- default: `lnk sandbox run -- /bin/true`, the embedded default spec;
- python inner: the same with the Python inner (`LNK_INNER=python`), the fallback of the
  compiled one where nothing compiled it (issue 29);
- spec file: the same spec given as a file (`--spec`, allowed once before the rounds);
- programs: a program list, `[commands] programs = ["true"]` (the exec watch runs);
- proxy: proxy mode with an empty allow list (the network helper, its listeners);
- api: `lnk_sandbox.run` from a harness whose event loop runs already (this process,
  the API's modules loaded once), and `session`: a call in an open `lnk_sandbox.Sandbox`;
- user: the default spec run by the unprivileged user `lnk-test` (root only; through
  setpriv, as tests/support does), against root's own run of the same;
- server, server api, server session, server user: the same through the start server
  (`LNK_START_SERVER=required`, opt-in; started in the warm-up rounds, then reused);
- firejail --noprofile, `codex sandbox linux`, and srt, when installed.

`--baseline TREE` also times another source tree (an older checkout, run by the same
venv with PYTHONPATH=TREE) for every case but the API's, in the same rounds, so that a
before and an after share the machine's load; its rows' "x default" is against its own
default. The tree timed is always the one this file is in.

    .venv/bin/python benchmarks/start.py [--runs N] [--baseline TREE] [--only CASE,...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
LNK = str(Path(sys.executable).parent / "lnk")
TEST_USER = "lnk-test"
AS_TEST_USER = ["setpriv", f"--reuid={TEST_USER}", f"--regid={TEST_USER}", "--init-groups"]
DEFAULT_TOML = '[files]\nwrite = ["."]\n\n[network]\nmode = "none"\n'

# Issue 21's goals: (the case measured against, at most this ratio).
GOALS: dict[str, tuple[str, float]] = {
    "default": ("bare", 5.0), "spec file": ("default", 1.1), "programs": ("default", 1.2),
    "proxy": ("default", 1.3), "api": ("bare", 3.0), "session": ("bare", 3.0),
    "user": ("default", 1.1),
    # Issue 29's, for the start server: the command line at most 4x bare bwrap, the API
    # at most 2.5x.
    "server": ("bare", 4.0), "server user": ("bare as user", 4.0),
    "server api": ("bare", 2.5), "server session": ("bare", 2.5)}


def bare_bwrap_args(workdir: str) -> list[str]:
    """The default spec's plan for `workdir`, with every bind in path form."""
    from supervisor.installation import inner_source, interpreter
    from supervisor.linux.bwrap import _op_args
    from supervisor.linux.plan import SYSTEM_FOLDERS, HostLayout, build_plan
    from supervisor.stages import snapshot_for
    from supervisor.view import view_for

    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        snapshot = snapshot_for(None)
        python, prefix = interpreter()
        root_mode = os.geteuid() == 0
        layout = HostLayout.probe(inner_source(), python, prefix, snapshot, root_mode=root_mode)
        plan = build_plan(view_for(snapshot, SYSTEM_FOLDERS), layout, root_mode=root_mode)
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
        elif op.kind == "hide-file":
            # An empty file from a pipe, as lnk does: DATA is replaced by a fresh fd per run.
            args += ["--ro-bind-data", "DATA", op.dest]
        else:  # a tmpfs (its size and mode), a link, /dev, /proc, a remount: as lnk's
            args += _op_args(op, fd_of=str)
    return [*args, "--chdir", workdir, "/bin/true"]


def timed(command: list[str], cwd: str, env: dict[str, str]) -> float:
    """One whole run of `command`, in ms; each DATA in it becomes a fresh empty pipe."""
    fds = []
    args = list(command)
    for index, arg in enumerate(args):
        if arg == "DATA":
            read_end, write_end = os.pipe()
            os.close(write_end)
            fds.append(read_end)
            args[index] = str(read_end)
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, check=False, pass_fds=fds)
    elapsed = time.perf_counter() - start
    for fd in fds:
        os.close(fd)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])}... failed with {done.returncode}: "
                         f"{done.stderr.decode(errors='replace')[-800:]}")
    return elapsed * 1000


def tree_env(tree: Path, home: str) -> dict[str, str]:
    """The environment a case runs in: `tree`'s code, a home of the benchmark's own."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8",
            "PYTHONPATH": str(tree)}


class Api:
    """This process as a harness: an event loop running in a thread (anyio's blocking
    portal), the API imported once; each call timed from the harness's side."""

    def __init__(self, workdir: str) -> None:
        import anyio.from_thread

        import lnk_sandbox

        self.lnk_sandbox = lnk_sandbox
        self.workdir = workdir
        self.portal_cm = anyio.from_thread.start_blocking_portal()
        self.portal = self.portal_cm.__enter__()
        self.session = lnk_sandbox.Sandbox(cwd=workdir)
        self.portal.call(self.session.__aenter__)

    def _check(self, done: Any) -> None:
        if done.returncode != 0:
            raise SystemExit(f"the API's run failed: {done.returncode} {done.stderr!r}")

    def run(self) -> float:
        start = time.perf_counter()
        done = self.portal.call(lambda: self.lnk_sandbox.run(["/bin/true"], cwd=self.workdir))
        elapsed = time.perf_counter() - start
        self._check(done)
        return elapsed * 1000

    def in_session(self) -> float:
        start = time.perf_counter()
        done = self.portal.call(lambda: self.session.run(["/bin/true"]))
        elapsed = time.perf_counter() - start
        self._check(done)
        return elapsed * 1000

    def served(self, call: Callable[[], float]) -> Callable[[], float]:
        """`call` with the start server required (the switch is read at each call)."""
        def timed_served() -> float:
            os.environ["LNK_START_SERVER"] = "required"
            try:
                return call()
            finally:
                del os.environ["LNK_START_SERVER"]
        return timed_served

    def close(self) -> None:
        self.portal.call(self.session.aclose)
        self.portal_cm.__exit__(None, None, None)


def peers(workdir: str) -> dict[str, list[str]]:
    """The other sandboxes, when installed, running /bin/true with what they offer."""
    found: dict[str, list[str]] = {}
    if shutil.which("firejail"):
        found["firejail"] = ["firejail", "--noprofile", "--quiet", "/bin/true"]
    if shutil.which("codex"):
        found["codex sandbox"] = ["codex", "sandbox", "linux", "--", "/bin/true"]
    if shutil.which("srt"):
        found["srt"] = ["srt", "/bin/true"]
    return found


# Run in a process of its own with a tree's code first on the path (this one's, or the
# baseline's), as each start is: what a start of the default spec holds in `workdir`,
# bwrap's binds, and one Placeholders.hold and release timed (the state left by the
# process before is this one's, as a harness's runs follow each other).
MEASURE_HOLDS = r'''
import json, os, sys, time
from supervisor.installation import inner_source, interpreter
from supervisor.linux.placeholders import Placeholders
from supervisor.linux.plan import SYSTEM_FOLDERS, HostLayout, build_plan
from supervisor.stages import snapshot_for
from supervisor.view import view_for

workdir = sys.argv[1]
os.chdir(workdir)
before = set(json.loads(sys.argv[2]))
snapshot = snapshot_for(None)
python, prefix = interpreter()
root_mode = os.geteuid() == 0
layout = HostLayout.probe(inner_source(), python, prefix, snapshot, root_mode=root_mode)
view = view_for(snapshot, SYSTEM_FOLDERS)
plan = build_plan(view, layout, root_mode=root_mode)
binds = sum(op.kind in ("bind", "ro-bind") for op in plan.ops)
from supervisor.linux.gitrun import GitRun
git = GitRun.prepare(view)
if git is not None:
    binds += sum(op.kind in ("bind", "ro-bind") for op in git.ops)
    git.close()
placeholders = Placeholders(snapshot.lnk_home)
c0, t0 = time.process_time(), time.perf_counter()
held = placeholders.hold(list(plan.holds))
t1 = time.perf_counter()
during = sorted(os.listdir(workdir))
t2 = time.perf_counter()
held.release()
t3, c3 = time.perf_counter(), time.process_time()
print(json.dumps({
    "holds": len(plan.holds), "binds": binds,
    "made": [n for n in during if n not in before],
    "stays": [n for n in os.listdir(workdir) if n not in before],
    "hold": (t1 - t0) * 1000, "release": (t3 - t2) * 1000, "cpu": (c3 - c0) * 1000}))
'''


def placeholder_figures(base: str, trees: dict[str, Path], runs: int) -> None:
    """Print, per tree, what the default spec's start holds in an empty folder and in a
    repository: placeholders, bwrap's binds, the names made without a dot (and how many
    are left after the run), and Placeholders.hold and release: the first start's, and
    the medians of the `runs` starts after it, each a process of its own, the trees and
    folders taking turns round by round as the start rounds do (the machine's load
    moves them alike)."""
    import json

    cases = []
    for label, tree in trees.items():
        home = os.path.join(base, f"holds-home-{label.split()[0]}")
        os.makedirs(home, exist_ok=True)
        for shape in ("empty folder", "repository"):
            folder = os.path.join(base, f"holds-{label.split()[0]}-{shape.split()[0]}")
            os.makedirs(folder)
            if shape == "repository":
                git = ["git", "-C", folder, "-c", "user.name=b", "-c", "user.email=b@b.invalid"]
                subprocess.run([*git, "init", "-q"], check=True)
                Path(folder, "README").write_text("x\n")
                subprocess.run([*git, "add", "README"], check=True)
                subprocess.run([*git, "commit", "-qm", "x"], check=True)
            cases.append((label, shape, tree, home, folder, json.dumps(os.listdir(folder))))
    got: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for round_ in range(runs + 1):
        turn = round_ % len(cases)
        for label, shape, tree, home, folder, before in cases[turn:] + cases[:turn]:
            done = subprocess.run([sys.executable, "-c", MEASURE_HOLDS, folder, before],
                                  env=tree_env(tree, home), cwd=folder, capture_output=True,
                                  text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"measuring {label}'s placeholders failed: {done.stderr}")
            got.setdefault((label, shape), []).append(json.loads(done.stdout))
    print(f"placeholders of the default spec, the first start then the median of {runs} "
          "(Placeholders.hold and release in ms, wall and CPU):")
    for (label, shape), rows in got.items():
        first, rest = rows[0], rows[1:]
        plain = [n for n in first["made"] if not n.startswith(".")]

        def median(key: str, rows: list[dict[str, Any]] = rest) -> float:
            return statistics.median(row[key] for row in rows)

        print(f"  {label:<9} {shape:<13} {first['holds']:3d} held, {first['binds']:3d} binds; "
              f"first {first['hold'] + first['release']:6.2f}; then hold {median('hold'):5.2f} "
              f"+ release {median('release'):5.2f}, CPU {median('cpu'):5.2f}; without a dot: "
              f"{' '.join(plain) or 'none'}; left after: {len(rest[-1]['stays'])}")


def user_folders(base: str, prefix: str = "user") -> tuple[str, str]:
    """A working directory and a home owned by the test user (made if missing)."""
    import pwd

    try:
        entry = pwd.getpwnam(TEST_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                        "/usr/sbin/nologin", TEST_USER], check=True, capture_output=True)
        entry = pwd.getpwnam(TEST_USER)
    os.chmod(base, 0o755)
    folders = []
    for name in (f"{prefix}-work", f"{prefix}-home"):
        path = os.path.join(base, name)
        os.mkdir(path)
        os.chown(path, entry.pw_uid, entry.pw_gid)
        folders.append(path)
    for name in (".git", ".vscode", ".idea", ".husky"):
        os.mkdir(os.path.join(folders[0], name))
        os.chown(os.path.join(folders[0], name), entry.pw_uid, entry.pw_gid)
    return folders[0], folders[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--baseline", metavar="TREE", type=Path,
                        help="another source tree to time in the same rounds")
    parser.add_argument("--only", help="the cases to time (comma-separated; bare always); "
                        "`placeholders` alone prints only what the starts hold")
    parser.add_argument("--holds", type=int, default=30, metavar="N",
                        help="starts back to back for the placeholders' figures")
    args = parser.parse_args()
    base = tempfile.mkdtemp(prefix="lnk-bench-")
    try:
        if args.only != "placeholders":
            report(base, args.runs, args.baseline, args.only)
        trees = {"this tree": ROOT}
        if args.baseline is not None:
            trees["baseline"] = args.baseline.resolve()
        placeholder_figures(base, trees, args.holds)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def report(base: str, runs: int, baseline: Path | None, only: str | None) -> None:
    workdir, home = os.path.join(base, "work"), os.path.join(base, "home")
    os.mkdir(workdir)
    os.mkdir(home)
    # The dot-file folders a start holds with placeholders exist already, for both:
    # bare bwrap then binds the same folders lnk does.
    for name in (".git", ".vscode", ".idea", ".husky"):
        os.mkdir(os.path.join(workdir, name))
    env = tree_env(ROOT, home)
    os.environ["HOME"] = home  # the API's $LNK_HOME, as the command line's
    specs = {}
    for name, text in (("default", DEFAULT_TOML),
                       ("programs", '[files]\nwrite = ["."]\n\n[commands]\nprograms = '
                        '["true"]\n'),
                       ("proxy", '[files]\nwrite = ["."]\n\n[network]\nmode = "proxy"\n'
                        'allow = []\n')):
        specs[name] = os.path.join(base, f"{name}.toml")
        with open(specs[name], "w") as handle:
            handle.write(text)
    run = [LNK, "sandbox", "run"]
    commands: dict[str, Callable[[], float]] = {}

    def process(command: list[str], cwd: str = workdir, environ: dict[str, str] = env
                ) -> Callable[[], float]:
        return lambda: timed(command, cwd, environ)

    commands["bare"] = process(bare_bwrap_args(workdir))
    commands["default"] = process([*run, "--", "/bin/true"])
    commands["python inner"] = process([*run, "--", "/bin/true"],
                                       environ={**env, "LNK_INNER": "python"})
    commands["spec file"] = process([*run, "--yes", "--spec", specs["default"], "--",
                                     "/bin/true"])
    commands["programs"] = process([*run, "--yes", "--spec", specs["programs"], "--",
                                    "/bin/true"])
    commands["proxy"] = process([*run, "--yes", "--spec", specs["proxy"], "--", "/bin/true"])
    served = {**env, "LNK_START_SERVER": "required"}
    commands["server"] = process([*run, "--", "/bin/true"], environ=served)
    api = None
    if only is None or "api" in only or "session" in only:
        api = Api(workdir)
        commands["api"] = api.run
        commands["session"] = api.in_session
        commands["server api"] = api.served(api.run)
        commands["server session"] = api.served(api.in_session)
    if os.geteuid() == 0 and (only is None or "user" in only):
        user_work, user_home = user_folders(base)
        user_env = tree_env(ROOT, user_home)
        commands["bare as user"] = process([*AS_TEST_USER, *bare_bwrap_args(user_work)],
                                           user_work, user_env)
        commands["user"] = process([*AS_TEST_USER, *run, "--", "/bin/true"], user_work,
                                   user_env)
        commands["server user"] = process([*AS_TEST_USER, *run, "--", "/bin/true"],
                                          user_work, {**user_env, "LNK_START_SERVER": "required"})
    if baseline is not None:
        # A folder and a $LNK_HOME of its own: each tree's placeholders are its own (one
        # tree's left for its next run would be the other's to bind, or to remove).
        old_work, old_home = os.path.join(base, "baseline-work"), os.path.join(base,
                                                                               "baseline-home")
        os.mkdir(old_work)
        os.mkdir(old_home)
        for name in (".git", ".vscode", ".idea", ".husky"):
            os.mkdir(os.path.join(old_work, name))
        old_env = tree_env(baseline.resolve(), old_home)
        commands["baseline default"] = process([*run, "--", "/bin/true"], old_work, old_env)
        for name in ("spec file", "programs", "proxy"):
            spec = specs["default" if name == "spec file" else name]
            commands[f"baseline {name}"] = process(
                [*run, "--yes", "--spec", spec, "--", "/bin/true"], old_work, old_env)
        if "user" in commands:
            old_user_work, old_user_home = user_folders(base, "baseline-user")
            commands["baseline user"] = process(
                [*AS_TEST_USER, *run, "--", "/bin/true"], old_user_work,
                tree_env(baseline.resolve(), old_user_home))
    for name, command in peers(workdir).items():
        commands[name] = process(command)
    if only is not None:
        wanted = {"bare", *only.split(",")}
        commands = {k: v for k, v in commands.items() if k in wanted
                    or (k.startswith("baseline") and "baseline" in wanted)}
    load_before = os.getloadavg()
    try:
        times = rounds(commands, runs)
    finally:
        if api is not None:
            api.close()
    load_after = os.getloadavg()
    print_table(times, runs, load_before, load_after)


def rounds(commands: dict[str, Callable[[], float]], runs: int) -> dict[str, list[float]]:
    for _ in range(2):  # warm the caches (the per-boot checks, the page cache, allowing)
        for command in commands.values():
            command()
    names = list(commands)
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(runs):
        turn = round_ % len(names)
        for name in names[turn:] + names[:turn]:
            times[name].append(commands[name]())
    return times


def print_table(times: dict[str, list[float]], runs: int, load_before: tuple[float, ...],
                load_after: tuple[float, ...]) -> None:
    def ratio(name: str, against: str) -> float:
        return statistics.median(a / b for a, b in zip(times[name], times[against], strict=True))

    print(f"start of /bin/true, {runs} rounds, uid {os.geteuid()}, {os.cpu_count()} CPUs, "
          f"load {load_before[0]:.2f} before, {load_after[0]:.2f} after "
          f"(uptime: {', '.join(f'{x:.2f}' for x in load_after)})")
    print(f"{'case':<18} {'median ms':>9} {'x bare':>7} {'x default':>9}   goal")
    for name, values in times.items():
        case = name.removeprefix("baseline ")
        own = "baseline " if name.startswith("baseline ") else ""
        against_bare = "bare as user" if case == "user" and "bare as user" in times else "bare"
        x_bare = ratio(name, against_bare)
        x_default = (f"{ratio(name, own + 'default'):9.2f}" if own + "default" in times
                     else f"{'':9}")
        goal = ""
        of, most = GOALS.get(case, ("", 0.0))
        reference = of if of == "bare" else own + of
        if of and reference in times:
            got = x_bare if of == "bare" else ratio(name, reference)
            goal = f"at most {most}x {of}: {'met' if got <= most else 'NOT met'}"
        print(f"{name:<18} {statistics.median(values):9.1f} {x_bare:7.2f} {x_default}   {goal}")
    if "user" in times:
        print("(user's x bare is against bare bwrap run by the same user)")


if __name__ == "__main__":
    main()
