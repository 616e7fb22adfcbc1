"""The kernel matrix's results: one table per kernel from what each VM wrote back.

    python3 ci/kernels/table.py RESULTS_FOLDER

RESULTS_FOLDER holds one folder per boot (kernel.txt, junit.xml, pytest.txt, check.txt,
seconds, cpu; timed-out or stalled when it was killed). Standard library only: it runs
with the host's own python3. Exits 1 when a boot failed a test, was killed or brought
nothing back.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path


def read(path: Path) -> str:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return ""


def table(folder: Path) -> bool:
    """Print one boot's table; True when every test it ran passed or skipped."""
    kernel = dict(line.split(" ", 1) for line in read(folder / "kernel.txt").splitlines()
                  if " " in line)
    print(f"== {folder.name}: {kernel.get('release', 'unknown kernel')}  "
          f"(lsm={kernel.get('lsm', '?')})")
    boot = read(folder / "seconds")
    tests = read(folder / "pytest.seconds")
    junit = folder / "junit.xml"
    limit = read(folder / "timed-out")
    if limit:
        print(f"   TIMED OUT: killed after {limit} s (LNK_KERNELS_TIMEOUT); see console.log")
    stalled = read(folder / "stalled")
    if stalled:
        print(f"   HUNG: its console was silent for {stalled} s (LNK_KERNELS_STALL), so it "
              "was killed; see console.log")
    limit = limit or stalled
    if not junit.exists():
        print(f"   no results came back (the boot took {boot or '?'} s); see console.log")
        return False
    passed, failed, skipped = [], [], Counter[str]()
    seconds: Counter[str] = Counter()
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        seconds[case.get("classname", "").rpartition(".")[2]] += float(case.get("time") or 0)
        outcome = next((child for child in case if child.tag in
                        ("failure", "error", "skipped")), None)
        if outcome is None:
            passed.append(name)
        elif outcome.tag == "skipped":
            reason = (outcome.get("message") or "").removeprefix("Skipped: ")
            skipped[reason] += 1
        else:
            failed.append((name, (outcome.get("message") or "").splitlines()[:1]))
    cpu = read(folder / "cpu")
    try:
        cpu = f", QEMU's CPU {sum(float(part) for part in cpu.split('+')):.0f} s" if cpu else ""
    except ValueError:
        cpu = ""
    print(f"   passed {len(passed)}, failed {len(failed)}, skipped {sum(skipped.values())}"
          f"   tests {tests or '?'} s, boot to power-off {boot or '?'} s{cpu}")
    print("   seconds by module: " + ", ".join(f"{module} {spent:.0f}"
                                             for module, spent in seconds.most_common()))
    for reason, count in skipped.most_common():
        print(f"   skipped {count:3}: {reason}")
    for name, message in failed:
        print(f"   FAILED {name}: {message[0] if message else ''}"[:200])
    # What `lnk sandbox check` said there: the machine once, then each spec's verdict.
    blocks = read(folder / "check.txt").split("== lnk sandbox check ")[1:]
    for number, block in enumerate(blocks):
        title, *lines = block.splitlines()
        if number == 0:
            print("   check: " + "; ".join(" ".join(line.split()) for line in lines
                                          if line.startswith("  ") and ":" not in line[:20]
                                          and not line.startswith("  - ")))
        for line in lines:
            if line.startswith(("spec ", "  layer: memory", "  layer: exec", "  problem")):
                print(f"   check {title}: {line.strip()}"[:220])
    return not failed and not limit


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    folders = sorted(p for p in Path(sys.argv[1]).iterdir() if p.is_dir())
    ok = True
    for folder in folders:
        ok = table(folder) and ok
        print()
    return 0 if ok and folders else 1


if __name__ == "__main__":
    sys.exit(main())
