"""`[network]`'s keys of issue 16 in the spec: deny, forward, expose, unix. What each
accepts, and every refusal naming the file, the key and the line (exit 125 comes from
SpecError being a SandboxError; the command line is checked in the integration tests)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from supervisor.errors import SpecError
from supervisor.netpolicy import NetworkRules, UnixSocket, resolve_unix
from supervisor.spec import Network, parse_spec
from support.snapshots import a_snapshot

SOURCE = "net.toml"


def parse(text: str) -> Network:
    return parse_spec(text.encode(), SOURCE).network


def test_every_key() -> None:
    network = parse('[network]\nmode = "proxy"\nallow = ["a.org", "10.0.0.0/8:5432"]\n'
                    'deny = ["*.com", "[2001:db8::/32]"]\nforward = [5432, 6379]\n'
                    'expose = [3000]\nunix = ["$SSH_AUTH_SOCK", { path = "/run/docker.sock", '
                    'optional = true }, "~/.app/sock", "$XDG_RUNTIME_DIR/bus"]\n')
    assert [p.text for p in network.allow] == ["a.org", "10.0.0.0/8:5432"]
    assert [p.text for p in network.deny] == ["*.com", "[2001:db8::/32]"]
    assert (network.forward, network.expose) == ((5432, 6379), (3000,))
    assert network.unix == (
        UnixSocket("$SSH_AUTH_SOCK", False, "network.unix[0]", 7),
        UnixSocket("/run/docker.sock", True, "network.unix[1]", 7),
        UnixSocket("~/.app/sock", False, "network.unix[2]", 7),
        UnixSocket("$XDG_RUNTIME_DIR/bus", False, "network.unix[3]", 7),
    )


def test_absent_and_empty_differ_for_unix_only() -> None:
    assert parse("[network]\n").unix is None
    assert parse("[network]\nunix = []\n").unix == ()
    assert parse("[network]\nforward = []\n").forward == ()
    assert parse('[network]\nmode = "none"\nforward = [1]\nexpose = [2]\n').expose == (2,)


@pytest.mark.parametrize(("text", "key", "line", "message"), [
    ('[network]\ndeny = ["a.org"]\n', "network.deny", 2,
     "a deny list applies only in proxy mode, and mode is 'none'"),
    ('[network]\nmode = "proxy"\ndeny = ["*"]\n', "network.deny[0]", 3,
     "'*': '*' alone is no name; to reach nothing, leave allow empty or use mode = \"none\""),
    ('[network]\nmode = "proxy"\ndeny = ["a.org", "a.org"]\n', "network.deny", 3,
     "a name is listed twice"),
    ('[network]\nmode = "proxy"\nallow = ["10.0.0.1/8"]\n', "network.allow[0]", 3,
     "'10.0.0.1/8': '10.0.0.1/8' has bits set past its prefix; write 10.0.0.0/8"),
    ('[network]\nmode = "proxy"\nallow = ["0.0.0.0/0"]\n', "network.allow[0]", 3,
     "'0.0.0.0/0': '0.0.0.0/0' opens every address; list the ranges the command needs"),
    ('[network]\nforward = 5432\n', "network.forward", 2,
     "must be a list of port numbers, not a number"),
    ('[network]\nforward = ["5432"]\n', "network.forward[0]", 2,
     "must be a port number, not a string"),
    ('[network]\nforward = [true]\n', "network.forward[0]", 2,
     "must be a port number, not a boolean"),
    ('[network]\nexpose = [0]\n', "network.expose[0]", 2,
     "0 is not a port number from 1 to 65535"),
    ('[network]\nexpose = [65536]\n', "network.expose[0]", 2,
     "65536 is not a port number from 1 to 65535"),
    ('[network]\nforward = [22, 22]\n', "network.forward", 2, "port 22 is listed twice"),
    ('[network]\nmode = "host"\nforward = [22]\n', "network.forward", 3,
     "host mode shares the host's network, whose loopback ports the sandbox reaches (and "
     "serves) already"),
    ('[network]\nmode = "proxy"\nforward = [3128]\n', "network.forward[0]", 3,
     "port 3128 is the proxy's own inside the sandbox"),
    ('[network]\nmode = "proxy"\nexpose = [53]\n', "network.expose[0]", 3,
     "port 53 is the proxy's own inside the sandbox"),
    ('[network]\nforward = [8080]\nexpose = [8080]\n', "network.expose[0]", 3,
     "port 8080 is also forwarded"),
    ('[network]\nforward = [' + ", ".join(str(p) for p in range(1000, 1065)) + ']\n',
     "network.forward", 2, "at most 64 ports"),
    ('[network]\nunix = "/run/x.sock"\n', "network.unix", 2,
     "must be a list of paths, not a string"),
    ('[network]\nunix = ["run/x.sock"]\n', "network.unix[0]", 2,
     "'run/x.sock' is a relative path"),
    ('[network]\nunix = ["./x.sock"]\n', "network.unix[0]", 2,
     "'./x.sock': a socket is named by an absolute path, '~/...', or $NAME (a variable "
     "holding its path)"),
    ('[network]\nunix = ["$1BAD"]\n', "network.unix[0]", 2,
     "'$1BAD': $1BAD is not a variable name"),
    ('[network]\nunix = ["$X/../y"]\n', "network.unix[0]", 2, "'/../y' contains '..'"),
    ('[network]\nunix = ["/a.sock", "/a.sock/"]\n', "network.unix[1]", 2,
     "'/a.sock' is listed twice"),
    ('[network]\nunix = [{ path = "/a.sock", optional = 1 }]\n', "network.unix[0].optional",
     2, "must be true or false, not a number"),
    ('[network]\nports = [1]\n', "network.ports", 2, "unknown key 'ports'"),
])
def test_refusals_name_file_key_and_line(text: str, key: str, line: int,
                                         message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse(text)
    error = caught.value
    assert (error.file, error.key, error.line, error.message) == (SOURCE, key, line, message)
    assert error.exit_status == 125


# -- resolving the unix sockets into the snapshot -----------------------------------------

def _resolve(tmp_path: Path, *entries: UnixSocket, environ: dict[str, str]) -> NetworkRules:
    return resolve_unix(NetworkRules(unix=entries), home=str(tmp_path / "home"),
                        lnk_home=str(tmp_path / "home" / ".lnk"), source=SOURCE,
                        environ=environ)


def _socket(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    return sock


def test_unix_sockets_resolve_once(tmp_path: Path) -> None:
    (tmp_path / "home" / ".lnk").mkdir(parents=True)
    (tmp_path / "real").mkdir()
    agent = tmp_path / "real" / "agent.sock"
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with _socket(agent), _socket(tmp_path / "home" / "app.sock"):
        rules = _resolve(
            tmp_path,
            UnixSocket("$SSH_AUTH_SOCK", False, "network.unix[0]", 2),
            UnixSocket(str(tmp_path / "link" / "agent.sock"), False, "network.unix[1]", 2),
            UnixSocket("~/app.sock", False, "network.unix[2]", 2),
            UnixSocket("$MISSING", True, "network.unix[3]", 2),
            UnixSocket("/nowhere.sock", True, "network.unix[4]", 2),
            environ={"SSH_AUTH_SOCK": str(tmp_path / "link" / "agent.sock")})
    assert rules.unix is not None
    assert [(u.target, u.variable) for u in rules.unix] == [
        (str(agent), "SSH_AUTH_SOCK"),
        (str(agent), "SSH_AUTH_SOCK"),  # the agent's socket, named by its path
        (str(tmp_path / "home" / "app.sock"), None),
        (None, None), (None, None)]
    assert rules.environment() == {"SSH_AUTH_SOCK": str(agent)}


@pytest.mark.parametrize(("entry", "message"), [
    ("$UNSET", "'$UNSET': $UNSET is not set"),
    ("/nowhere.sock", "'/nowhere.sock': /nowhere.sock cannot be reached: No such file or "
     "directory"),
    ("~/file", "'~/file': {tmp}/home/file is not a socket"),
    ("~/.lnk/x.sock", "'~/.lnk/x.sock': {tmp}/home/.lnk/x.sock is inside lnk-sandbox's "
     "settings ($LNK_HOME), which every sandbox is denied"),
])
def test_unix_sockets_that_cannot_be_named(tmp_path: Path, entry: str, message: str) -> None:
    (tmp_path / "home" / ".lnk").mkdir(parents=True)
    (tmp_path / "home" / "file").write_text("")
    with _socket(tmp_path / "home" / ".lnk" / "x.sock"), pytest.raises(SpecError) as caught:
        _resolve(tmp_path, UnixSocket(entry, False, "network.unix[0]", 4), environ={})
    error = caught.value
    assert (error.key, error.line, error.message) == (
        "network.unix[0]", 4, message.format(tmp=tmp_path))


def test_a_snapshot_keeps_the_network_keys_through_json(tmp_path: Path) -> None:
    """A wrapped command's snapshot carries them to `exec` without resolving again."""
    from supervisor.grants import Snapshot
    from supervisor.hostnames import parse_host_pattern

    rules = NetworkRules(deny=(parse_host_pattern("*.evil.example", deny=True),),
                         forward=(5432,), expose=(3000,),
                         unix=(UnixSocket("$SSH_AUTH_SOCK", False, "network.unix[0]", 3,
                                          "/tmp/agent.sock", "SSH_AUTH_SOCK"),))
    snapshot = a_snapshot(network_mode="proxy", allow=("a.org",), network=rules)
    assert Snapshot.from_json(snapshot.to_json()) == snapshot
    older = snapshot._replace(network=NetworkRules())
    data = json.loads(older.to_json())
    del data["network"]  # saved before these keys existed
    assert Snapshot.from_json(json.dumps(data)) == older


def test_remembered_permissions_of_specs_without_the_keys_hold(tmp_path: Path) -> None:
    from supervisor.permissions import digest

    plain = a_snapshot()
    # The digest of a snapshot without the new keys is what it was before them (computed
    # by the checkout before this work, f4ba6c8, for this very snapshot).
    assert digest(plain) == "3840805eb74063387075176e51f61badbb10bf6ce5a4f4acd4112c658b0be195"
    forwarded = plain._replace(network=NetworkRules(forward=(5432,)))
    assert digest(forwarded) != digest(plain)
    moved = plain._replace(network=NetworkRules(unix=(UnixSocket(
        "$X", False, "network.unix[0]", 3, "/a.sock"),)))
    same_elsewhere = plain._replace(network=NetworkRules(unix=(UnixSocket(
        "$X", False, "network.unix[0]", 9, "/a.sock"),)))
    assert digest(moved) == digest(same_elsewhere)  # where the spec wrote it: no matter


# -- Landlock's RESOLVE_UNIX (ABI 9): compiled here; run only on a kernel that has it -------

def _landlock_rules(unix: tuple[UnixSocket, ...] | None, *, socket_granted: bool = False
                    ) -> list[tuple[str, list[str]]]:
    from supervisor.grants import Grant
    from supervisor.linux.confine import landlock_rules
    from supervisor.linux.plan import LaunchPlan, MountOp

    plan = LaunchPlan(ops=(MountOp("ro-bind", "/usr", "/usr"), MountOp("bind", "/p", "/p"),
                           MountOp("ro-bind", "/run/agent.sock", "/run/agent.sock")),
                      chdir="/p", root_mode=False, share_net=False,
                      interpreter="/usr/bin/python3")
    grants = (Grant("/run/agent.sock", "/run/agent.sock", "read", "files.read[0]",
                    "files.read[0]", 2, is_dir=False),) if socket_granted else ()
    snapshot = a_snapshot(*grants, cwd="/p", keep=(), network=NetworkRules(unix=unix))
    return landlock_rules(plan, snapshot, {})


def test_without_the_key_no_folder_resolves_a_socket_made_outside() -> None:
    """A socket made outside the sandbox under a granted folder, found at launch or made
    after it, is reached only by name: no folder's rule holds RESOLVE_UNIX."""
    rules = dict(_landlock_rules(None))
    assert "resolve_unix" not in rules["/usr"] and "resolve_unix" not in rules["/p"]
    assert "resolve_unix" not in rules["/run/agent.sock"]


def test_a_socket_named_as_a_grant_is_resolved() -> None:
    rules = dict(_landlock_rules(None, socket_granted=True))
    assert "resolve_unix" in rules["/run/agent.sock"]
    assert "resolve_unix" not in rules["/usr"] and "resolve_unix" not in rules["/p"]


def test_with_the_key_only_the_named_sockets_may_be_resolved() -> None:
    named = UnixSocket("$SSH_AUTH_SOCK", False, "network.unix[0]", 2, "/run/agent.sock",
                       "SSH_AUTH_SOCK")
    rules = _landlock_rules((named,))
    assert [dest for dest, rights in rules if "resolve_unix" in rights] == ["/run/agent.sock"]
    assert ("/run/agent.sock", ["resolve_unix"]) in rules
    from inner import landlock

    # On a file, as the kernel takes it there (ACCESS_FILE holds RESOLVE_UNIX); dropped
    # on a kernel before ABI 9, which neither knows nor refuses it.
    assert landlock.access_mask(["resolve_unix"], abi=9, directory=False) == 1 << 16
    assert landlock.access_mask(["resolve_unix"], abi=7, directory=False) == 0
    assert landlock.handled_fs(9) & (1 << 16)
    assert not landlock.handled_fs(7) & (1 << 16)
