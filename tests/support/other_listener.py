"""Run a command under a seccomp filter that already has a listener.

A second NEW_LISTENER in one filter chain fails with EBUSY, so the sandbox's own filter
cannot have one: its exec watch is missing, as under another supervisor's listener.
The record says what must hold then: memory files refused with ENOSYS, the program list
still enforced by Landlock. Usage:
    python other_listener.py COMMAND [ARG...]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if not __package__:  # run by path: `support` is the folder above this file's
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.seccomp_filter import ALLOW, RETURN, install, stmt

NEW_LISTENER = 8  # SECCOMP_FILTER_FLAG_NEW_LISTENER


def main() -> None:
    listener = install(stmt(RETURN, ALLOW), NEW_LISTENER)  # allows everything
    os.set_inheritable(listener, True)  # kept open: a closed listener frees its place
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
