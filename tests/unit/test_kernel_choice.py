"""Which boots ci/kernels.sh makes (ci/kernels/choose.py): every label a root's kernels
give, `--only` refusing a label it has no kernel for (it once booted nothing and passed),
and CI's rotation: the stock kernel every run, the others in turn, the turn moved on only
by ci/kernels.sh after a pass, a fresh cache's turn chosen by the commit."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

CHOOSE = Path(__file__).resolve().parents[2] / "ci" / "kernels" / "choose.py"
# What Debian 12's root holds: the stock kernel and the security archive's newest series.
RELEASES = ["6.12.57+deb12-amd64", "6.1.0-41-amd64"]
LABELS = ["6.1", "6.1-no-landlock", "6.12", "6.12-no-landlock"]


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("choose", CHOOSE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["choose"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


choose = load()


@pytest.fixture
def boot_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "boot"
    folder.mkdir()
    for release in RELEASES:
        (folder / f"vmlinuz-{release}").write_bytes(b"")
        (folder / f"config-{release}").write_text("")  # not a kernel: never a label
    return folder


def test_each_kernel_boots_as_shipped_and_without_landlock_oldest_first() -> None:
    boots = choose.boots(RELEASES)
    assert [boot.line() for boot in boots] == [
        "6.1 6.1.0-41-amd64 landlock",
        "6.1-no-landlock 6.1.0-41-amd64 no-landlock",
        "6.12 6.12.57+deb12-amd64 landlock",
        "6.12-no-landlock 6.12.57+deb12-amd64 no-landlock",
    ]


def test_only_boots_the_labels_named_in_the_roots_order() -> None:
    boots = choose.only(choose.boots(RELEASES), "6.12-no-landlock,6.1")
    assert [boot.label for boot in boots] == ["6.1", "6.12-no-landlock"]


@pytest.mark.parametrize("chosen", ["6.2", "6.1,6.13", "6.1-nolandlock", "", "6.1,"])
def test_only_refuses_a_label_with_no_kernel_naming_those_there(chosen: str) -> None:
    with pytest.raises(choose.Refused) as refused:
        choose.only(choose.boots(RELEASES), chosen)
    assert str(refused.value).endswith(f"the labels are {', '.join(LABELS)}")


@pytest.mark.parametrize("chosen", ["6", "six.one", "6.1-landlock", "6.1 ", "--ci"])
def test_what_can_never_be_a_label_is_refused_before_building(chosen: str) -> None:
    with pytest.raises(choose.Refused):
        choose.check_syntax(chosen)


def test_ci_boots_the_stock_kernel_and_the_others_in_turn() -> None:
    available = choose.boots(RELEASES)
    state, seen = "6.1-no-landlock", []
    for _ in range(4):
        boots, state_after = choose.rotation(available, state, "0" * 40)
        assert boots[0].label == "6.1" and len(boots) == 2
        seen.append(boots[1].label)
        state = state_after
    assert seen == ["6.1-no-landlock", "6.12", "6.12-no-landlock", "6.1-no-landlock"]


def test_a_fresh_cache_takes_its_turn_from_the_commit() -> None:
    available = choose.boots(RELEASES)
    turns = {choose.rotation(available, "", commit)[0][1].label
             for commit in ("00000000", "00000001", "00000002", "deadbeef")}
    assert turns == {"6.1-no-landlock", "6.12", "6.12-no-landlock"}
    # A state naming a kernel the root no longer has falls back to the commit too.
    assert choose.rotation(available, "6.6", "00000001")[0][1].label == "6.12"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHOOSE), *args], capture_output=True,
                          text=True, check=False)


def test_the_script_prints_the_boots_and_refuses_with_exit_2(boot_folder: Path,
                                                            tmp_path: Path) -> None:
    assert run("--labels", str(boot_folder)).stdout == " ".join(LABELS) + "\n"
    assert run(str(boot_folder)).stdout.splitlines()[0] == "6.1 6.1.0-41-amd64 landlock"
    refused = run(str(boot_folder), "--only", "6.2")
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == ("ci/kernels.sh: --only 6.2: no such boot here; the labels are "
                              f"{', '.join(LABELS)}\n")
    state = tmp_path / "rotation"
    state.write_text("6.12\n")
    ci = run(str(boot_folder), "--ci", str(state), "0" * 40)
    assert ci.stdout == "6.1 6.1.0-41-amd64 landlock\n6.12 6.12.57+deb12-amd64 landlock\n"
    # The next turn is written beside the state, which ci/kernels.sh moves only on a pass.
    assert state.read_text() == "6.12\n"
    assert (tmp_path / "rotation.next").read_text() == "6.12-no-landlock\n"


TABLE = CHOOSE.parent / "table.py"
JUNIT = ('<testsuites><testsuite><testcase classname="tests.integration.test_check" '
         'name="test_a" time="1.5"/></testsuite></testsuites>')


def test_a_boot_killed_for_its_time_fails_the_table_even_with_results(tmp_path: Path) -> None:
    passed, slow = tmp_path / "6.1", tmp_path / "6.12"
    for folder in (passed, slow):
        folder.mkdir()
        (folder / "junit.xml").write_text(JUNIT)
        (folder / "kernel.txt").write_text(f"release {folder.name}.0\nlsm landlock\n")
    done = subprocess.run([sys.executable, str(TABLE), str(tmp_path)], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stdout
    (slow / "timed-out").write_text("900\n")
    done = subprocess.run([sys.executable, str(TABLE), str(tmp_path)], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 1
    assert ("   TIMED OUT: killed after 900 s (LNK_KERNELS_TIMEOUT); see console.log"
            in done.stdout.splitlines())
    # A guest killed for a silent console fails it the same way.
    (slow / "timed-out").unlink()
    (slow / "stalled").write_text("300\n")
    done = subprocess.run([sys.executable, str(TABLE), str(tmp_path)], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 1
    assert ("   HUNG: its console was silent for 300 s (LNK_KERNELS_STALL), so it was killed; "
            "see console.log") in done.stdout.splitlines()


# -- CI's budget (--fits): the stock kernel always, a later boot only if it ends in time --

def test_a_boot_fits_by_its_last_time_here_or_the_estimate() -> None:
    assert choose.fits("6.12", now=1000, deadline=2000, last="1000") is None
    assert choose.fits("6.12", now=1000, deadline=2000, last="1001") == (
        "ci/kernels.sh: 6.12 not booted: its last boot here took 1001 s, and CI's budget "
        "ends in 1000 s (LNK_KERNELS_DEADLINE); its turn is kept for the next run")
    # Never booted here: the estimate decides, and is named as one.
    assert choose.fits("6.1-no-landlock", now=0, deadline=choose.ESTIMATE, last="") is None
    assert choose.fits("6.1-no-landlock", now=10, deadline=choose.ESTIMATE, last="x") == (
        f"ci/kernels.sh: 6.1-no-landlock not booted: a boot takes about {choose.ESTIMATE} "
        f"s, and CI's budget ends in {choose.ESTIMATE - 10} s (LNK_KERNELS_DEADLINE); its "
        "turn is kept for the next run")
    # Past the deadline already: the time left is said as none, never negative.
    assert "budget ends in 0 s" in (choose.fits("6.12", now=5000, deadline=2000, last="1")
                                    or "")


def test_the_script_says_fits_by_its_exit_status(tmp_path: Path) -> None:
    last = tmp_path / "seconds-6.12"
    last.write_text("600\n")
    fits = run("--fits", "6.12", "1000", "1600", str(last))
    assert (fits.returncode, fits.stdout, fits.stderr) == (0, "", "")
    late = run("--fits", "6.12", "1001", "1600", str(last))
    assert (late.returncode, late.stdout) == (1, "")
    assert late.stderr.startswith("ci/kernels.sh: 6.12 not booted: its last boot here took "
                                  "600 s, and CI's budget ends in 599 s")
