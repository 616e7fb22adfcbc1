"""The macOS profile's network rules for the keys of issue 16: ports and unix sockets.

Text only (no Mac here): `forward` and `expose` open single ports of localhost, and
`[network] unix` closes every path socket after the files rules but the named ones,
each a parameter."""

from __future__ import annotations

import os
from pathlib import Path

from supervisor.grants import Grant, Snapshot
from supervisor.macos.environment import sandbox_environment
from supervisor.macos.profile import MacHost, compile_profile
from supervisor.macos.system import network_rules, unix_socket_rules
from supervisor.netpolicy import NetworkRules, UnixSocket
from supervisor.policy import RunSettings
from support.views import mac_view


def _snapshot(tmp_path: Path, rules: NetworkRules) -> Snapshot:
    return Snapshot(
        version=1,
        source="spec.toml",
        home=str(tmp_path),
        cwd=str(tmp_path),
        lnk_home=str(tmp_path / ".lnk"),
        uid=os.geteuid(),
        grants=(Grant("~", str(tmp_path), "read", "files.read[0]", "files.read[0]", 2),),
        programs=None,
        settings=RunSettings("none", ("PATH",), (), None, None),
        network=rules)


def test_ports_in_none_mode() -> None:
    lines = network_rules("none", (), forward=(5432,), expose=(3000, 8080))
    assert lines[2:] == [
        "(allow system-socket (socket-domain AF_INET) (socket-domain AF_INET6))",
        '(allow network-outbound (remote ip "localhost:5432"))',
        '(allow network-bind (local ip "localhost:3000"))',
        '(allow network-inbound (local ip "localhost:3000"))',
        '(allow network-bind (local ip "localhost:8080"))',
        '(allow network-inbound (local ip "localhost:8080"))',
    ]
    assert network_rules("none", ()) == [
        ";; Network: none. No address at all; path sockets only in write grants."]


def test_unix_sockets_close_every_other_path_socket() -> None:
    assert unix_socket_rules(["UNIX_0", "UNIX_1"]) == [
        ";; [network] unix: no path socket but the named ones.",
        '(deny network-outbound (subpath "/"))',
        "(allow network-outbound",
        '    (literal (param "UNIX_0"))',
        '    (literal (param "UNIX_1")))',
    ]
    assert unix_socket_rules([])[1:] == ['(deny network-outbound (subpath "/"))']


def test_unix_rules_follow_the_files_rules_and_name_sockets_as_parameters(
        tmp_path: Path) -> None:
    sock = str(tmp_path / "agent.sock")
    rules = NetworkRules(unix=(UnixSocket("$SSH_AUTH_SOCK", False, "network.unix[0]", 3,
                                          sock, "SSH_AUTH_SOCK"),))
    profile = compile_profile(mac_view(_snapshot(tmp_path, rules), ()), MacHost(home=str(tmp_path)))
    text = profile.text
    files_rule = text.index('(allow file-read*')
    deny = text.index('(deny network-outbound (subpath "/"))')
    assert files_rule < deny < text.index("Keychain")
    assert '(literal (param "UNIX_0"))' in text[deny:]
    assert ("UNIX_0", sock) in profile.parameters
    # Without the key, nothing of it.
    plain = compile_profile(mac_view(_snapshot(tmp_path, NetworkRules()), ()),
                            MacHost(home=str(tmp_path)))
    assert "[network] unix" not in plain.text


def test_a_named_agent_socket_keeps_its_variable(tmp_path: Path) -> None:
    sock = str(tmp_path / "agent.sock")
    rules = NetworkRules(unix=(UnixSocket("$SSH_AUTH_SOCK", False, "network.unix[0]", 3,
                                          sock, "SSH_AUTH_SOCK"),))
    env = sandbox_environment(_snapshot(tmp_path, rules), None)
    assert env["SSH_AUTH_SOCK"] == sock
    assert "SSH_AUTH_SOCK" not in sandbox_environment(_snapshot(tmp_path, NetworkRules()),
                                                      None)
