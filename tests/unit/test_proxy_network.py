"""Proxy mode's plan, environment and helper, checked without privileges.

The plan gets a read-only /etc/resolv.conf naming 127.0.0.1, mounted where a link
leads when it is one; the environment names the helper's listeners; the helper imports
nothing that starts a thread; the allow list decides on names before any lookup.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from netns_helper.protocol import Job, Listen
from supervisor.environment import build_environment
from supervisor.errors import LaunchError
from supervisor.host_files import PrivateFolder
from supervisor.linux.network import (
    PLAN_SOURCE,
    ResolvConfHost,
    _read_status_line,
    _startup_error,
    proxy_environment,
)
from supervisor.linux.plan import LaunchPlan, MountOp, RunMounts, build_plan
from supervisor.proxy.rules import NetworkLists
from supervisor.proxy.runfolder import remove_stale
from support.views import linux_view

from .test_plan import CWD, INNER, LATE, LAYOUT, ROOT, settings, snapshot, spec_grant

PROJECT = MountOp("bind", CWD, CWD, "files.write[0]: .")
HIDDEN = MountOp("tmpfs", f"{CWD}/hidden", reason="files.hide[0]: ./hidden")
HIDDEN_RO = MountOp("remount-ro", f"{CWD}/hidden", reason="hidden folder")
REASON = "proxy mode: names are asked of the helper on 127.0.0.1"


RUN = RunMounts(resolv_conf="/r/resolv")


def _plan(host: ResolvConfHost, *, network: str = "proxy", run: RunMounts = RUN) -> LaunchPlan:
    """A project written, a folder in it hidden, and where this host's resolv.conf leads."""
    snap = snapshot(spec_grant(".", CWD, "write", "files.write[0]"),
                    spec_grant("./hidden", f"{CWD}/hidden", "hide", "files.hide[0]"),
                    settings(), network=network)
    return build_plan(linux_view(snap), LAYOUT._replace(resolv_conf=host), run,
                      root_mode=False)


def test_resolv_conf_is_mounted_before_the_closing_remounts() -> None:
    plan = _plan(ResolvConfHost("/etc/resolv.conf", True))
    assert plan.ops == (*ROOT, PROJECT, HIDDEN, INNER,
                        MountOp("ro-bind", "/etc/resolv.conf", "/r/resolv", REASON),
                        HIDDEN_RO, *LATE)


def test_a_linked_resolv_conf_is_mounted_where_the_link_leads() -> None:
    target = "/run/systemd/resolve/stub-resolv.conf"
    plan = _plan(ResolvConfHost(target, False))
    assert plan.ops == (*ROOT, PROJECT, HIDDEN, INNER,
                        MountOp("ro-bind", target, "/r/resolv",
                                f"{REASON} (/etc/resolv.conf leads here)"), HIDDEN_RO, *LATE)


def test_a_link_to_nothing_inside_a_mount_refuses_the_launch() -> None:
    with pytest.raises(LaunchError) as caught:
        _plan(ResolvConfHost("/etc/resolvconf/run/resolv.conf", False))
    assert "does not exist" in caught.value.message
    assert caught.value.hint is not None and "network mode" in caught.value.hint


def test_no_resolv_conf_on_the_host_leaves_the_resolvers_default() -> None:
    plan = _plan(ResolvConfHost(None, False), network="none")
    changed = _plan(ResolvConfHost(None, False))
    assert changed.ops == plan.ops
    assert len(changed.notes) == 1 and "127.0.0.1" in changed.notes[0]


def test_a_plan_without_a_run_names_the_runs_resolv_conf_by_a_stand_in() -> None:
    plan = _plan(ResolvConfHost("/etc/resolv.conf", True), run=RunMounts())
    assert MountOp("ro-bind", "/etc/resolv.conf", PLAN_SOURCE, REASON) in plan.ops


def test_resolv_conf_host_probe(tmp_path: Path) -> None:
    assert ResolvConfHost.probe(str(tmp_path / "missing")) == ResolvConfHost(None, False)
    real = tmp_path / "real.conf"
    real.write_text("nameserver 192.0.2.1\n")
    assert ResolvConfHost.probe(str(real)) == ResolvConfHost(str(real), True)
    link = tmp_path / "resolv.conf"
    link.symlink_to("stub/resolv.conf")
    assert ResolvConfHost.probe(str(link)) == ResolvConfHost(
        str(tmp_path / "stub" / "resolv.conf"), False)


def test_the_plan_placeholder_is_the_one_a_launch_replaces() -> None:
    assert PLAN_SOURCE.endswith("resolv.conf") and not PLAN_SOURCE.startswith("/")


def test_proxy_environment() -> None:
    http, socks = "http://127.0.0.1:3128", "socks5h://127.0.0.1:1080"
    loopback = "localhost,127.0.0.1,::1"
    assert proxy_environment() == {
        "HTTP_PROXY": http, "HTTPS_PROXY": http, "ALL_PROXY": socks, "NO_PROXY": loopback,
        "http_proxy": http, "https_proxy": http, "all_proxy": socks, "no_proxy": loopback,
        "NODE_USE_ENV_PROXY": "1",
    }
    # The caller's own proxy is replaced; a value the spec sets wins.
    env = build_environment({"PATH": "/bin", "HTTP_PROXY": "http://corp:8080"},
                            keep=("PATH", "HTTP_PROXY"), assign=(("NO_PROXY", "x"),),
                            extra=proxy_environment())
    assert env["HTTP_PROXY"] == http and env["NO_PROXY"] == "x"


def test_the_job_round_trips() -> None:
    job = Job(pid=42, net_inode=4026531840,
              listen=(Listen("http", "127.0.0.1", 3128),
                      Listen("dns-udp", "127.0.0.1", 53, "udp"),
                      Listen("forward-5432", "::1", 5432, optional=True)))
    assert Job.decode(job.encode()) == job


def test_importing_the_helper_starts_no_thread() -> None:
    """A second thread would make joining the user namespace fail (EINVAL); and it loads
    the standard library only (its start is on every proxy-mode start's path)."""
    code = ("import os, sys, netns_helper.main; "
            "print(len(os.listdir('/proc/self/task')), "
            "sorted({m.split('.')[0] for m in sys.modules} & "
            "{'anyio', 'asyncio', 'uvloop', 'pyroute2', 'dns', 'supervisor'}))")
    done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True,
                          text=True, check=True)
    assert done.stdout == "1 []\n"


def test_the_helper_refuses_a_bad_command_line() -> None:
    done = subprocess.run([sys.executable, "-I", "-m", "netns_helper", "x"],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert "usage: python -m netns_helper CTL_FD SUPERVISOR_PID" in done.stderr


def test_stale_run_folders_are_removed(tmp_path: Path) -> None:
    gone_pid = _a_dead_pid()
    (tmp_path / f"net-{gone_pid}-abc").mkdir()
    (tmp_path / f"net-{os.getpid()}-def").mkdir()
    (tmp_path / "other").mkdir()
    base = PrivateFolder.lnk_home(str(tmp_path))
    assert base is not None
    with base:
        remove_stale(base)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"net-{os.getpid()}-def", "other"]


def _a_dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


@pytest.mark.parametrize(("host", "port", "allowed"), [
    ("pypi.org", 443, True),
    ("PyPI.org.", 443, True),
    ("files.pypi.org", 443, False),
    ("raw.githubusercontent.com", 443, True),
    ("githubusercontent.com", 443, False),
    ("internal.example", 8443, True),
    ("internal.example", 443, False),
    ("127.0.0.1", 80, False),
    ("10.0.0.1", 80, True),
    ("[::1]", 80, True),
    ("0:0:0:0:0:0:0:1", 80, True),
])
def test_the_allow_list(host: str, port: int, allowed: bool) -> None:
    allow = NetworkLists.from_texts(["pypi.org", "*.githubusercontent.com", "internal.example:8443",
                                  "10.0.0.1", "[::1]"])
    decision = allow.decide(host, port)
    assert decision.allowed is allowed
    assert decision.subject.endswith(f":{port}")


def test_names_for_dns_ignore_the_port_and_never_match_an_address() -> None:
    allow = NetworkLists.from_texts(["internal.example:8443", "10.0.0.1"])
    assert allow.decide_name("internal.example").allowed
    assert not allow.decide_name("10.0.0.1").allowed
    assert allow.decide_name("Internal.Example.").subject == "internal.example"


def test_a_helper_that_cannot_join_says_why_and_what_to_do() -> None:
    error = _startup_error({"ready": False, "step": "setns user", "errno": 1,
                            "error": "joining the sandbox's user namespace: Operation not "
                            "permitted"})
    assert error.message == ("the network helper could not set up the sandbox's network: "
                             "joining the sandbox's user namespace: Operation not permitted "
                             "(step: setns user)")
    assert error.hint is not None and error.hint.startswith("the supervisor must own")
    assert error.errno == 1
    assert error.exit_status == 125


def test_only_bwraps_first_status_record_is_read() -> None:
    """The exit-code record stays in the pipe for the supervision's finish."""
    read_end, write_end = os.pipe()
    os.write(write_end, b'{"child-pid": 7, "net-namespace": 9}\n{"exit-code": 3}\n')
    try:
        first = _read_status_line(read_end)
        assert first == {"child-pid": 7, "net-namespace": 9}
        assert os.read(read_end, 100) == b'{"exit-code": 3}\n'
        os.close(write_end)
        write_end = -1
        assert _read_status_line(read_end) is None
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)
