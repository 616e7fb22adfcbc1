"""Red team, issue 30d: the mode without namespaces (LNK_NAMESPACES=off) attacked where
red team 30c's fix stands: the listener's walk without CAP_DAC_OVERRIDE/READ_SEARCH and
through no magic link (supervisor/linux/direct_metadata.py `as_caller`), and the run's
end that wakes the reaper first (direct_spawn._reaper_of).

Each attack runs inside a real sandbox (root mode and the unprivileged user) and proves
it ran (the harness's STARTED line, and a control the caller is refused).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attacks.test_red_team_nonamespace import WRITE, attack, victim
from support.red_team import need
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_landlock(abi=6), pytest.mark.requires_seccomp_notify]


def _probes(prefix: str, there: str, missing: str) -> dict[str, str]:
    """lchown and lutime (no link followed: the trailing magic link is opened, O_PATH)
    of a name `there` and of one `missing`."""
    return {f"{call} {label}": expression.format(path=f"{prefix}/{name}")
            for label, name in (("exists", there), ("missing", missing))
            for call, expression in (
                ("lchown", "os.chown('{path}', -1, os.getgid(), follow_symlinks=False)"),
                ("lutime", "os.utime('{path}', (0, 0), follow_symlinks=False)"))}


def _same(results: dict[str, str]) -> dict[str, tuple[str, str]]:
    calls = {name.split()[0] for name in results}
    return {call: (results[f"{call} exists"], results[f"{call} missing"]) for call in calls}


def test_where_another_process_maps_memory(sandbox: Sandbox) -> None:
    """/proc/PID/map_files names another process's mappings by address: an answer that
    differs for a range mapped and one not would tell its layout (ASLR). The caller is
    refused the folder (Landlock's ptrace scope; its fd folder, which the uid owns, it
    may list), the supervisor was not: EPERM against ENOENT before the fix."""
    other = victim(sandbox)
    try:
        first = Path(f"/proc/{other.pid}/maps").read_text().split()[0]
        start, end = (int(part, 16) for part in first.split("-"))
        fake = f"{start + 0x1000000000:x}-{end + 0x1000000000:x}"
        results = attack(sandbox, {
            "list": f"os.listdir('/proc/{other.pid}/map_files')",  # the control
            **_probes(f"/proc/{other.pid}/map_files", first, fake),
        })
    finally:
        other.kill()
        other.wait()
    control = results.pop("list")
    need(control in ("EACCES", "EPERM"), f"{control}: {results}")
    same = _same(results)
    assert all(exists == missing for exists, missing in same.values()), same


# -- the run's end: the reaper's kill(-1) reaches a daemon in a domain nested deeper ------

NESTED = r"""
import ctypes, os, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
out = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    attr = struct.pack("QQQ", 0, 0, 3)  # scoped: abstract sockets and signals
    fd = libc.syscall(444, attr, len(attr), 0)
    assert fd >= 0 and libc.syscall(446, fd, 0) == 0, ctypes.get_errno()
    while True:  # a daemon hopping pids, each in a domain nested below the sandbox's
        if os.fork():
            os._exit(0)
        with open(out, "w") as handle:
            handle.write(str(os.getpid()))
        time.sleep(0.01)
time.sleep(0.5)
print("STARTED", flush=True)
"""


def test_a_daemon_in_a_nested_domain_is_ended_with_the_run(sandbox: Sandbox) -> None:
    """A daemon that nests itself in a Landlock domain of its own (signals scoped: the
    reaper's kill(-1) from the enclosing domain still reaches it) and hops pids: gone
    once lnk-sandbox returns, not chased for seconds."""
    import json
    import time

    from attacks.test_red_team_nonamespace import OFF
    from support.sandbox import PYTHON_INSIDE

    out = sandbox.project / "pid"
    out.write_text("0")
    sandbox.chown()
    began = time.monotonic()
    done = sandbox.run(PYTHON_INSIDE, "-c", NESTED, str(out), spec=WRITE, env=OFF)
    took = time.monotonic() - began
    need("STARTED" in done.stdout and out.read_text() != "0", f"{done.returncode}: {done.stderr}")
    time.sleep(0.2)
    last = out.read_text()
    time.sleep(0.5)
    gone = not last or not Path(f"/proc/{last}").exists()
    assert out.read_text() == last and gone, json.dumps([last, took])
    assert took < 8, took

