"""A test-only launch whose mounts are wider than its grants: one more folder is bound
writable, while the inner's Landlock rules are compiled from the real plan. It shows
Landlock holding the grants again where a mount is wide, and (under the no-Landlock
emulation) that the test can fail.

    python widened.py EXTRA_FOLDER -- COMMAND [ARG...]
"""

from __future__ import annotations

import sys

from supervisor.capabilities import CheckCache
from supervisor.errors import SandboxError
from supervisor.linux.capabilities import bwrap_info
from supervisor.linux.confine import inner_config
from supervisor.linux.launch import spawn
from supervisor.linux.placeholders import Placeholders
from supervisor.linux.plan import MountOp
from supervisor.linux.prepare import decide_layers, plan_for, program_loaders, sandbox_environment
from supervisor.linux.supervise import supervise
from supervisor.stages import snapshot_for


def main() -> int:
    extra, command = sys.argv[1], sys.argv[3:]
    try:
        snapshot = snapshot_for(None)
        cache = CheckCache(snapshot.lnk_home)
        plan = plan_for(snapshot)
        config = inner_config(plan, snapshot, decide_layers(snapshot, cache),
                              program_loaders(snapshot))
        ops = list(plan.ops)
        ops.insert(len(ops) - 1, MountOp("bind", extra, extra, "widened by the test"))
        wide = plan._replace(ops=tuple(ops))
        held = Placeholders(snapshot.lnk_home).hold(list(plan.holds))
        try:
            launched = spawn(wide, bwrap_info(cache), argv=command,
                             env=sandbox_environment(snapshot), inner_config=config)
            outcome = supervise(launched)
        finally:
            held.release()
    except SandboxError as err:
        sys.stderr.write(f"lnk-sandbox: {err.render()}\n")
        return 125
    if outcome.problem is not None:
        sys.stderr.write(f"lnk-sandbox: {outcome.problem.render()}\n")
    return outcome.status


if __name__ == "__main__":
    raise SystemExit(main())
