"""A run on Linux: the plan for this machine, the launch, the supervision."""

from __future__ import annotations

import os

from ..capabilities import CheckCache, bwrap_info, landlock_abi
from ..environment import build_environment
from ..errors import ConfinementError, SandboxError
from ..grants import Snapshot
from ..run import inner_source, interpreter
from .confine import Layers, inner_config
from .elf import interpreter_of
from .launch import spawn
from .plan import HostLayout, LaunchPlan, build_plan
from .supervise import Outcome, supervise


def plan_for(snapshot: Snapshot) -> LaunchPlan:
    python, prefix = interpreter()
    layout = HostLayout.probe(inner_source(), python, prefix)
    return build_plan(snapshot, layout, root_mode=os.geteuid() == 0)


def sandbox_environment(snapshot: Snapshot) -> dict[str, str]:
    return build_environment(os.environ, keep=snapshot.env_keep, assign=snapshot.env_assign)


def decide_layers(snapshot: Snapshot, cache: CheckCache) -> Layers:
    """What this launch applies; refuses what the machine cannot enforce (fail closed)."""
    abi = landlock_abi(cache)
    if snapshot.programs is not None and abi == 0:
        raise ConfinementError(
            "the spec's program list ([commands] programs) is enforced by Landlock, and "
            "this kernel has no Landlock",
            hint="run on a kernel with Landlock (Linux 5.13+, with landlock in the lsm= "
            "list), or remove [commands] programs so that any program may run",
        )
    memfd = "allow" if snapshot.programs is None else "enosys"
    return Layers(landlock_abi=abi, memfd=memfd)


def program_loaders(snapshot: Snapshot) -> dict[str, str | None]:
    """The dynamic loader of each listed program, resolved to its own file."""
    loaders: dict[str, str | None] = {}
    for program in snapshot.programs or ():
        loader = interpreter_of(program.target)
        loaders[program.target] = os.path.realpath(loader) if loader else None
    return loaders


def launch_and_supervise(snapshot: Snapshot, argv: list[str]) -> Outcome:
    cache = CheckCache(snapshot.lnk_home)
    info = bwrap_info(cache)
    layers = decide_layers(snapshot, cache)
    plan = plan_for(snapshot)
    config = inner_config(plan, snapshot, layers, program_loaders(snapshot))
    launched = spawn(plan, info, argv=argv, env=sandbox_environment(snapshot),
                     inner_config=config)
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
