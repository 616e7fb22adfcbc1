"""Which boots a kernel-matrix run makes (ci/kernels.sh): labels, `--only`, CI's rotation.

    python3 ci/kernels/choose.py BOOT_FOLDER [--only LABEL,...] [--ci STATE_FILE COMMIT]
    python3 ci/kernels/choose.py --labels BOOT_FOLDER
    python3 ci/kernels/choose.py --fits LABEL NOW DEADLINE LAST_SECONDS_FILE

Prints one boot a line, `LABEL RELEASE MODE` (MODE `landlock` or `no-landlock`), in the
order to boot them; `--labels` prints the labels alone. Exits 2 with the labels listed
when `--only` names one the root filesystem has no kernel for: a typo must not boot
nothing and pass.

Every kernel in BOOT_FOLDER (its vmlinuz-RELEASE files) gives two labels: its series as
shipped (`6.1`) and without Landlock in `lsm=` (`6.1-no-landlock`). `--ci` is the run CI
makes every time, within its budget: the oldest kernel as shipped (Debian 12's own 6.1,
the most unlike a developer's host) and one of the others in turn. The turn is kept in
STATE_FILE (ci/kernels.sh keeps it in the cache beside the root filesystem and moves it
on only after a run that passed, so a failing configuration is booted again until it is
fixed); with no state yet (a fresh machine, whose cache is new each time) the commit
chooses, so that fresh machines too cover every configuration over a few commits.

`--fits` is CI's budget (.ci/run gives a deadline, LNK_KERNELS_DEADLINE): a boot after
the first is made only if its last time on this machine (kept in the cache; ESTIMATE
seconds where it has none) still ends before the deadline; else it prints why it is left
for a later run, and exits 1. The first boot, the stock kernel, is always made.

Standard library only: it runs with the host's own python3 before any venv exists.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

LABEL = re.compile(r"[0-9]+\.[0-9]+(-no-landlock)?")


@dataclass(frozen=True)
class Boot:
    label: str
    release: str
    landlock: bool

    def line(self) -> str:
        return f"{self.label} {self.release} {'landlock' if self.landlock else 'no-landlock'}"


class Refused(Exception):
    """A selection that names what is not there; the message lists what is."""


def version_key(text: str) -> tuple[int, ...]:
    """`6.12.57+deb12-amd64` -> (6, 12, 57, 12): sort as `sort -V` does, near enough."""
    return tuple(int(number) for number in re.findall(r"[0-9]+", text))


def boots(releases: list[str]) -> list[Boot]:
    """Every boot the kernels allow: each series as shipped, then without Landlock."""
    found: list[Boot] = []
    for release in sorted(releases, key=version_key):
        series = ".".join(release.split(".")[:2])
        found.append(Boot(series, release, True))
        found.append(Boot(f"{series}-no-landlock", release, False))
    return found


def releases_in(folder: Path) -> list[str]:
    return [path.name.removeprefix("vmlinuz-") for path in folder.glob("vmlinuz-*")]


def check_syntax(only: str) -> None:
    """Before the root filesystem exists: refuse what can never be a label."""
    for label in only.split(","):
        if not LABEL.fullmatch(label):
            raise Refused(f"--only {label!r} is not a label: a kernel series as shipped "
                          "(6.1) or without Landlock (6.1-no-landlock)")


def only(available: list[Boot], chosen: str) -> list[Boot]:
    names = [boot.label for boot in available]
    wanted = chosen.split(",")
    unknown = [label for label in wanted if label not in names]
    if unknown or not chosen:
        raise Refused(f"--only {','.join(unknown) or repr(chosen)}: no such boot here; "
                      f"the labels are {', '.join(names)}")
    return [boot for boot in available if boot.label in wanted]


def rotation(available: list[Boot], state: str, commit: str) -> tuple[list[Boot], str]:
    """CI's boots, and the state to keep once they pass."""
    if not available:
        raise Refused("the root filesystem holds no kernel")
    stock, others = available[0], available[1:]
    if not others:
        return [stock], ""
    names = [boot.label for boot in others]
    if state in names:
        turn = names.index(state)
    else:
        turn = int(commit[:8], 16) % len(others) if re.fullmatch(r"[0-9a-f]{8,}", commit) else 0
    return [stock, others[turn]], names[(turn + 1) % len(others)]


# A boot's time where this machine has none yet: 6.1-no-landlock and 6.12-no-landlock
# took 5 to 10 minutes here, 6.12 about 12, with every CPU busy (README, the kernel part).
ESTIMATE = 720


def fits(label: str, now: int, deadline: int, last: str) -> str | None:
    """None when a boot of `label` may start at `now`, its last time being `last` (a
    number of seconds, or "" when unknown); else what is said when it is left out."""
    seconds = int(last) if last.isdigit() else ESTIMATE
    if now + seconds <= deadline:
        return None
    how = f"its last boot here took {seconds} s" if last.isdigit() else \
        f"a boot takes about {seconds} s"
    return (f"ci/kernels.sh: {label} not booted: {how}, and CI's budget ends in "
            f"{max(deadline - now, 0)} s (LNK_KERNELS_DEADLINE); its turn is kept for the "
            "next run")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--fits"] and len(argv) == 5:
        last = Path(argv[4])
        said = fits(argv[1], int(argv[2]), int(argv[3]),
                    last.read_text().strip() if last.exists() else "")
        if said is not None:
            print(said, file=sys.stderr)
        return 0 if said is None else 1
    try:
        if argv[:1] == ["--labels"] and len(argv) == 2:
            print(" ".join(boot.label for boot in boots(releases_in(Path(argv[1])))))
            return 0
        if argv[:1] == ["--syntax"] and len(argv) == 2:
            check_syntax(argv[1])
            return 0
        folder, options = Path(argv[0]), argv[1:]
        available = boots(releases_in(folder))
        if options[:1] == ["--only"] and len(options) == 2:
            chosen = only(available, options[1])
        elif options[:1] == ["--ci"] and len(options) == 3:
            state_file = Path(options[1])
            state = state_file.read_text().strip() if state_file.exists() else ""
            chosen, after = rotation(available, state, options[2])
            # Written beside the state, taken up by ci/kernels.sh when the run passed.
            state_file.with_name(state_file.name + ".next").write_text(after + "\n")
        elif not options:
            chosen = available
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except Refused as refused:
        print(f"ci/kernels.sh: {refused}", file=sys.stderr)
        return 2
    except IndexError:
        print(__doc__, file=sys.stderr)
        return 2
    for boot in chosen:
        print(boot.line())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
