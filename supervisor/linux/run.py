"""A run on Linux: the plan for this machine, the launch, the supervision."""

from __future__ import annotations

import os

from ..capabilities import CheckCache, bwrap_info
from ..environment import build_environment
from ..errors import SandboxError
from ..grants import Snapshot
from ..run import inner_source, interpreter
from .launch import spawn
from .plan import HostLayout, LaunchPlan, build_plan
from .supervise import Outcome, supervise


def plan_for(snapshot: Snapshot) -> LaunchPlan:
    python, prefix = interpreter()
    layout = HostLayout.probe(inner_source(), python, prefix)
    return build_plan(snapshot, layout, root_mode=os.geteuid() == 0)


def sandbox_environment(snapshot: Snapshot) -> dict[str, str]:
    return build_environment(os.environ, keep=snapshot.env_keep, assign=snapshot.env_assign)


def launch_and_supervise(snapshot: Snapshot, argv: list[str]) -> Outcome:
    cache = CheckCache(snapshot.lnk_home)
    info = bwrap_info(cache)
    plan = plan_for(snapshot)
    launched = spawn(plan, info, argv=argv, env=sandbox_environment(snapshot))
    return supervise(launched)


def run_linux(snapshot: Snapshot, argv: list[str]) -> int:
    outcome = launch_and_supervise(snapshot, argv)
    if outcome.problem is not None:
        raise outcome.problem
    if outcome.exec_failure is not None:
        failure = outcome.exec_failure
        reason = os.strerror(failure.errno) if failure.errno else "failed"
        if failure.status == 127:
            reason = "not found in the sandbox"
        _say(f"cannot run {failure.program}: {reason}")
    return outcome.status


def _say(text: str) -> None:
    os.write(2, f"lnk-sandbox: {text}\n".encode("utf-8", "replace"))


__all__ = ["SandboxError", "launch_and_supervise", "plan_for", "run_linux"]
