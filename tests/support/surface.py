"""Run inside a sandbox: walk what it sees and report what it could write or read.

    python3 -c SOURCE TOP [TOP ...] -- SKIP [SKIP ...]

Prints `STARTED`, then for each entry under each TOP (not descending into links, nor into
a SKIP): `W path` when it could be opened for writing (a file) or an entry made in it (a
folder; the entry is removed at once), `R path` when it could be read (a file) or listed
(a folder); then `DONE count`. Opening for writing changes nothing: no byte is written,
and O_TRUNC is never asked. /proc's per-process entries are skipped: they are each
process's own.
"""

import os
import stat
import sys

PROBE = ".lnk-surface-probe"


def own_proc_entry(path: str) -> bool:
    parts = path.split("/")
    return len(parts) > 2 and parts[1] == "proc" and (
        parts[2].isdigit() or parts[2] in ("self", "thread-self"))


def check(path: str, mode: int) -> None:
    if stat.S_ISDIR(mode):
        try:
            os.listdir(path)
            print("R", path)
        except OSError:
            pass
        probe = os.path.join(path, PROBE)
        try:
            os.mkdir(probe)
        except OSError:
            return
        os.rmdir(probe)
        print("W", path)
    elif stat.S_ISREG(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        flags = os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        for access, tag in ((os.O_RDONLY, "R"), (os.O_WRONLY, "W")):
            try:
                fd = os.open(path, access | flags)
            except OSError:
                continue
            os.close(fd)
            print(tag, path)


def main() -> None:
    args = sys.argv[1:]
    split = args.index("--") if "--" in args else len(args)
    tops, skip = args[:split], set(args[split + 1:])
    print("STARTED", flush=True)
    count = 0
    stack = list(tops)
    while stack:
        path = stack.pop()
        if path in skip or own_proc_entry(path):
            continue
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if stat.S_ISLNK(mode):
            continue
        count += 1
        check(path, mode)
        if stat.S_ISDIR(mode):
            try:
                names = os.listdir(path)
            except OSError:
                continue
            stack.extend(os.path.join(path, name) for name in names)
    print("DONE", count, flush=True)


main()
