"""`lnk sandbox check` on a Mac, against the stand-in sandbox-exec and log: sandbox-exec
present and accepting the spec's own profile, `log stream` allowed for this account,
nesting detected, each failure with its fix; and on a Mac no Linux probe is ever called."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import supervisor.check as shared
import supervisor.system
from supervisor import backends
from supervisor.linux import check as linux_check
from supervisor.macos import check as mac
from supervisor.macos.check import MacMachine, MacTools, check_macos, render_macos
from supervisor.macos.programs import Toolchain

STANDINS = Path(__file__).resolve().parent.parent / "support" / "macos_standins"
NO_TOOLS = Toolchain(xcrun="/nonexistent/xcrun", select_sh="/nonexistent/sh",
                     developer_links=())


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A spec listing sh, run from a project in a home of its own; the stand-ins' folder
    in the supervisor's environment (for `log`) and the sandbox's (for sandbox-exec)."""
    folder = tmp_path / "standin"
    folder.mkdir()
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("LNK_HOME", str(tmp_path / ".lnk"))
    monkeypatch.setenv("LNK_STANDIN_DIR", str(folder))
    monkeypatch.chdir(project)
    path = tmp_path / "spec.toml"
    path.write_text('[files]\nwrite = ["."]\n[commands]\nprograms = ["sh"]\n'
                    f'[env]\nset = {{ LNK_STANDIN_DIR = "{folder}" }}\n')
    return str(path)


def tools(*, nested: bool = False, **paths: str) -> MacTools:
    return MacTools(sandbox_exec=paths.get("sandbox_exec", str(STANDINS / "sandbox-exec")),
                    log=paths.get("log", str(STANDINS / "log")), toolchain=NO_TOOLS,
                    nested=lambda: nested, log_wait=10.0)


def standin(spec: str) -> Path:
    return Path(spec).parent / "standin"


def test_a_mac_that_holds_everything_can_launch(spec: str) -> None:
    report = check_macos(spec, tools=tools())
    machine = report.machine
    assert isinstance(machine, MacMachine)
    assert report.can_launch and report.problems == []
    assert machine.sandbox_exec == str(STANDINS / "sandbox-exec")
    assert machine.profile_accepted is True and machine.sandboxed is False
    assert machine.log_stream == "allowed for this account"
    # The probe applied this spec's own profile, with /usr/bin/true allowed last.
    (call,) = [json.loads(x) for x in (standin(spec) / "calls.jsonl").read_text().split("\n")
               if x]
    assert call["probe"] and call["command"] == ["/usr/bin/true"]
    assert '(literal (param "PROGRAM_0"))' in call["profile"]
    assert any("programs: only sh" in layer for layer in report.layers)
    assert any("named from Seatbelt's reports" in layer for layer in report.layers)
    assert mac.GAP_GROUP in report.gaps and shared.GAP_SOCKETS not in report.gaps
    text = render_macos(report)
    assert "accepts this spec's profile: yes" in text and "already sandboxed   no" in text
    assert f"spec {spec}: can launch here" in text


def test_nesting_is_a_problem_with_its_fix(spec: str) -> None:
    report = check_macos(spec, tools=tools(nested=True))
    assert not report.can_launch
    assert any("sandboxes do not nest" in str(p) and "hint: run lnk-sandbox outside" in str(p)
               for p in report.problems)
    (standin(spec) / "sandbox-exec-mode").write_text("nested")
    report = check_macos(spec, tools=tools())
    machine = report.machine
    assert isinstance(machine, MacMachine) and machine.profile_accepted is False
    assert any("sandbox_apply: Operation not permitted" in str(p) for p in report.problems)


def test_a_rejected_profile_or_a_missing_sandbox_exec_is_a_problem(spec: str,
                                                                   tmp_path: Path) -> None:
    (standin(spec) / "sandbox-exec-mode").write_text("reject")
    report = check_macos(spec, tools=tools())
    assert not report.can_launch
    assert any("refused this launch's profile (exit 65)" in str(p)
               and "tools/macos_probe.py" in str(p) for p in report.problems)
    report = check_macos(spec, tools=tools(sandbox_exec=str(tmp_path / "none")))
    machine = report.machine
    assert isinstance(machine, MacMachine) and machine.sandbox_exec is None
    assert any("is missing: it ships with every macOS" in str(p) for p in report.problems)
    assert "sandbox-exec        missing" in render_macos(report)


def test_a_log_refused_to_this_account_is_a_stated_gap_with_its_fix(spec: str) -> None:
    (standin(spec) / "log-mode").write_text("not-admin")
    report = check_macos(spec, tools=tools())
    machine = report.machine
    assert isinstance(machine, MacMachine)
    assert report.can_launch  # the list still holds; only naming and learn need the log
    assert "only for members of the admin group" in machine.log_stream
    (gap,) = [g for g in report.gaps if "go unnamed" in g]
    assert "learn cannot run" in gap and "dseditgroup" in gap
    assert not any("named from Seatbelt's reports" in layer for layer in report.layers)
    (standin(spec) / "log-mode").write_text("exit")
    report = check_macos(spec, tools=tools())
    assert isinstance(report.machine, MacMachine)
    assert "refuses to run inside a sandbox" in report.machine.log_stream


def test_a_bad_spec_is_said_before_anything_is_asked(tmp_path: Path, spec: str) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[files]\nread = 5\n")
    report = check_macos(str(bad), tools=tools())
    assert not report.can_launch and report.problems[0].key == "files.read"
    assert not (standin(spec) / "calls.jsonl").exists()


def test_check_on_a_mac_never_calls_a_linux_probe(spec: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from supervisor.linux import probes

    def linux(*args: object) -> object:
        raise AssertionError("a Linux probe was called on a Mac")

    for name in ("user_namespaces", "listener", "addfd_send", "memfd_noexec_seal",
                 "landlock_abi"):
        monkeypatch.setattr(probes, name, linux)
    monkeypatch.setattr(linux_check, "probe_machine", linux)
    monkeypatch.setattr(mac, "DEFAULT_TOOLS", tools())
    monkeypatch.setattr(supervisor.system, "SYSTEM", "macos")
    report = backends.backend().check(spec)
    assert isinstance(report.machine, MacMachine) and report.can_launch
    assert backends.render_check(report).startswith("machine: macOS ")
    assert json.loads(json.dumps(report.to_dict()))["machine"]["log_stream"] == \
        "allowed for this account"
