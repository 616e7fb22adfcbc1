"""Resolve a spec, wait for a line on stdin, then launch: a window for a test to change
the file system between the snapshot and the launch, as a later run of a saved wrapped
command would find it.

    python two_stage.py SPEC -- COMMAND [ARG...]
"""

from __future__ import annotations

import sys

from supervisor.errors import SandboxError
from supervisor.run import run_snapshot
from supervisor.stages import snapshot_for


def main() -> int:
    spec, command = sys.argv[1], sys.argv[3:]
    snapshot = snapshot_for(spec)
    sys.stdout.write("RESOLVED\n")
    sys.stdout.flush()
    sys.stdin.readline()
    try:
        return run_snapshot(snapshot, command)
    except SandboxError as err:
        sys.stderr.write(f"lnk-sandbox: {err.render()}\n")
        return err.exit_status


if __name__ == "__main__":
    raise SystemExit(main())
