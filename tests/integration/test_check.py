"""`lnk sandbox check`: the machine's layers for a spec, the launch refused where a layer
the spec needs is missing, the stated gaps, and the per-boot cache of passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.capabilities import missing
from support.sandbox import Sandbox

pytestmark = [pytest.mark.kernel_matrix, pytest.mark.requires_bwrap,
              pytest.mark.requires_userns]

REPO = Path(__file__).resolve().parents[2]
LISTED = '[files]\nwrite = ["."]\n[commands]\nprograms = ["sh"]\n'


def test_check_reports_the_machine_and_the_gaps(sandbox: Sandbox) -> None:
    done = sandbox.lnk("check", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    machine = report["machine"]
    assert machine["bind_fd"] is True
    assert machine["user_namespaces"] is True
    assert report["can_launch"] is True
    gaps = " ".join(report["gaps"])
    assert "ld.so ./x" in gaps
    assert "LD_PRELOAD" in gaps
    text = sandbox.lnk("check")
    assert "open gaps" in text.stdout and "ld.so ./x" in text.stdout


@pytest.mark.requires_landlock(abi=1)
def test_check_with_landlock_names_its_abi_and_the_program_list(sandbox: Sandbox) -> None:
    done = sandbox.lnk("check", "--json", spec=LISTED)
    report = json.loads(done.stdout)
    assert done.returncode == 0
    assert report["machine"]["landlock_abi"] >= 1
    assert any("programs: only sh" in layer for layer in report["layers"])


def test_check_without_landlock_refuses_a_program_list(sandbox: Sandbox) -> None:
    done = sandbox.lnk("check", "--json", spec=LISTED, landlock=False)
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["machine"]["landlock_abi"] == 0
    assert report["can_launch"] is False
    assert any("no Landlock" in problem["message"] for problem in report["problems"])
    unrestricted = sandbox.lnk("check", "--json", landlock=False)
    assert unrestricted.returncode == 0
    assert "no Landlock" in " ".join(json.loads(unrestricted.stdout)["layers"])


def test_check_reports_a_bad_spec_without_a_traceback(sandbox: Sandbox) -> None:
    done = sandbox.lnk("check", spec="[files]\nwrite = ['relative']\n")
    assert done.returncode == 1
    assert "files.write[0]" in done.stdout
    assert "Traceback" not in done.stderr + done.stdout


def test_start_checks_are_kept_for_the_boot_passes_only(sandbox: Sandbox) -> None:
    assert sandbox.run("/bin/true").returncode == 0
    cache = json.loads((sandbox.lnk_home / "cache" / "checks.json").read_text())
    with open("/proc/sys/kernel/random/boot_id") as handle:
        assert cache["boot_id"] == handle.read().strip()
    assert cache["passed"]["bwrap"]["bind_fd"] is True
    assert all(value not in (False, 0, None) for value in cache["passed"].values())
    # A cache of another boot is not believed: it is probed again and replaced.
    cache["boot_id"] = "another-boot"
    cache["passed"]["bwrap"]["path"] = "/nonexistent/bwrap"
    (sandbox.lnk_home / "cache" / "checks.json").write_text(json.dumps(cache))
    assert sandbox.run("/bin/true").returncode == 0
    fresh = json.loads((sandbox.lnk_home / "cache" / "checks.json").read_text())
    assert fresh["boot_id"] != "another-boot"
    assert fresh["passed"]["bwrap"]["path"] != "/nonexistent/bwrap"


def test_check_names_the_host_modes_abstract_socket_gap_without_scopes(sandbox: Sandbox
                                                                       ) -> None:
    spec = '[files]\nwrite = ["."]\n[network]\nmode = "host"\n'
    without = json.loads(sandbox.lnk("check", "--json", spec=spec, landlock=False).stdout)
    assert any("abstract unix sockets" in gap for gap in without["gaps"])
    none = json.loads(sandbox.lnk("check", "--json", landlock=False).stdout)
    assert not any("abstract unix sockets" in gap for gap in none["gaps"])


@pytest.mark.requires_landlock(abi=1)
@pytest.mark.requires_seccomp_notify
@pytest.mark.requires_memfd_noexec_seal
def test_check_says_memory_files_are_made_sealed_under_a_list_where_the_kernel_can(
        sandbox: Sandbox) -> None:
    report = json.loads(sandbox.lnk("check", "--json", spec=LISTED).stdout)
    assert report["machine"]["memfd_noexec_seal"] is True
    assert [layer for layer in report["layers"] if layer.startswith("memory files:")] == [
        "memory files: made by the exec watch with MFD_NOEXEC_SEAL added and handed over "
        "with ADDFD_FLAG_SEND: writable and mappable executable, never run"]


@pytest.mark.requires_landlock(abi=1)
def test_check_says_memory_files_are_refused_under_a_list_without_the_seal(
        sandbox: Sandbox) -> None:
    """As on a kernel before Linux 6.3 (emulated: MFD_NOEXEC_SEAL answered EINVAL)."""
    report = json.loads(sandbox.lnk("check", "--json", spec=LISTED, memfd_seal=False).stdout)
    assert report["machine"]["memfd_noexec_seal"] is False
    memory = [layer for layer in report["layers"] if layer.startswith("memory files:")]
    assert len(memory) == 1
    assert memory[0].startswith("memory files: refused with ENOSYS")
    assert "MFD_NOEXEC_SEAL (Linux 6.3)" in memory[0]
    unrestricted = json.loads(sandbox.lnk("check", "--json", memfd_seal=False).stdout)
    assert "programs: any program may run; memory files are made as asked" in (
        unrestricted["layers"])


@pytest.mark.requires_landlock(abi=1)
@pytest.mark.requires_seccomp_notify
def test_check_names_the_exec_watch_that_runs(sandbox: Sandbox) -> None:
    from supervisor.linux.watch import compiled_available

    if not compiled_available():
        pytest.fail("the compiled exec watch was not built (setup.py needs gcc and "
                    "Python's headers)")
    watches = {
        "compiled": sandbox.lnk("check", "--json", spec=LISTED),
        "python": sandbox.lnk("check", "--json", spec=LISTED,
                              env={"LNK_EXEC_WATCH": "python"}),
        "none": sandbox.lnk("check", "--json", spec=LISTED, other_listener=True),
    }
    for expected, done in watches.items():
        report = json.loads(done.stdout)
        assert report["machine"]["exec_watch"] == expected
    none = json.loads(watches["none"].stdout)
    assert none["machine"]["listener_taken"] is True
    assert ("exec watch: none (another seccomp listener holds this process): refused "
            "programs go unnamed") in none["layers"]
    assert "refused with ENOSYS, since the exec watch cannot seal them without a seccomp " \
        "listener of its own" in " ".join(none["layers"])
    text = sandbox.lnk("check", spec=LISTED).stdout
    assert "  exec watch          compiled\n" in text
    assert "layer: exec watch: compiled" in text


def test_check_names_the_inner_confiner_that_runs(sandbox: Sandbox) -> None:
    from supervisor.linux.inner_program import compiled_problem

    if (problem := compiled_problem()) is not None:
        missing(f"the compiled inner confiner cannot run: {problem}")
    compiled = json.loads(sandbox.lnk("check", "--json").stdout)["machine"]
    assert (compiled["inner"], compiled["inner_why"]) == (
        "compiled", "compiled (C, built by setup.py; a harness's file operations use the "
        "Python one)")
    python = json.loads(sandbox.lnk("check", "--json", env={"LNK_INNER": "python"}).stdout)
    assert (python["machine"]["inner"], python["machine"]["inner_why"]) == (
        "python", "python (LNK_INNER=python)")
    assert "  inner confiner      compiled (C, built by setup.py" in sandbox.lnk("check").stdout


def test_check_says_how_each_limit_holds(sandbox: Sandbox) -> None:
    done = sandbox.lnk("check", "--json", spec='[limits]\npids = 100\ntmp = "64M"\ncpu = "none"\n')
    report = json.loads(done.stdout)
    limits = [layer for layer in report["layers"] if layer.startswith("limit: ")]
    assert "limit: /tmp 64 MiB, by the size of its tmpfs" in limits
    assert "limit: CPU time per process: no limit" in limits
    processes = next(line for line in limits if line.startswith("limit: processes 100"))
    memory = next(line for line in limits if line.startswith("limit: memory"))
    if sandbox.who.is_root:
        assert "pids.max" in processes and "by a cgroup of the run's own" in memory
    else:
        assert "RLIMIT_NPROC" in processes
    asked = sandbox.lnk("check", "--json", spec='[limits]\nmemory = "1G"\n')
    held = "by a cgroup" in next(line for line in json.loads(asked.stdout)["layers"]
                                 if line.startswith("limit: memory"))
    assert asked.returncode == (0 if held else 1)
    assert held or any(p["key"] == "limits.memory"
                       for p in json.loads(asked.stdout)["problems"])


def test_check_json_problems_are_objects_that_follow_the_schema(sandbox: Sandbox) -> None:
    """A harness reads where and what to change as fields, not text to split: each
    problem is {message, file, line, key, hint} (docs/check.schema.json), and the text
    form says the same, as the error renders."""
    import jsonschema

    schema = json.loads((REPO / "docs" / "check.schema.json").read_text())
    bad_spec = '[files]\nread = ["~"]\nwrite = "."\n'
    bad = sandbox.lnk("check", "--json", spec=bad_spec)
    assert bad.returncode == 1
    report = json.loads(bad.stdout)
    jsonschema.validate(report, schema)
    spec_file = str(sandbox.base / "spec.toml")
    assert report["problems"] == [{
        "message": "must be a list of paths, not a string", "file": spec_file, "line": 3,
        "key": "files.write", "hint": 'write a list, even of one: write = ["."]'}]
    text = sandbox.lnk("check", spec=bad_spec)
    assert (f"  problem: {spec_file}:3: key files.write: must be a list of paths, not a "
            "string\n  hint: write a list, even of one: write = [\".\"]\n") in text.stdout
    no_landlock = sandbox.lnk("check", "--json", spec=LISTED, landlock=False)
    report = json.loads(no_landlock.stdout)
    jsonschema.validate(report, schema)
    (problem,) = report["problems"]
    assert (problem["file"], problem["key"]) == (spec_file, "commands.programs")
    assert problem["line"] == 4  # programs = [...], in LISTED
    jsonschema.validate(json.loads(sandbox.lnk("check", "--json").stdout), schema)
