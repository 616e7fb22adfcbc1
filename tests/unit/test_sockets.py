"""Path sockets under the grants: found by type on real folders (this network's list and
a bounded walk), and hidden by the plan unless the spec names them."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from supervisor.grants import Grant
from supervisor.linux.plan import HostLayout, MountOp, RunMounts, build_plan
from supervisor.linux.sockets import FoundSockets, bound_here, find
from supervisor.netpolicy import NetworkRules, UnixSocket
from support.views import linux_view

from .test_plan import CWD, HOME, INNER, LATE, LAYOUT, ROOT, snapshot, spec_grant

HIDDEN = "a socket in a granted folder, not named in [network] unix: hidden"


@pytest.fixture
def listening() -> Iterator[list[socket.socket]]:
    made: list[socket.socket] = []
    yield made
    for sock in made:
        sock.close()


def _listen(path: Path, made: list[socket.socket]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(1)
    made.append(sock)
    return path


def _stale(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.close()  # the file stays, nobody listens
    return path


def test_sockets_bound_here_are_found_at_any_depth(tmp_path: Path,
                                                   listening: list[socket.socket]) -> None:
    home = tmp_path.resolve()
    deep = _listen(home / "a" / "b" / "c" / "d" / "agent.sock", listening)
    assert str(deep) in bound_here()
    assert find([str(home)]).sockets == (str(deep),)


def test_a_socket_bound_through_a_link_is_found_where_it_is(
        tmp_path: Path, listening: list[socket.socket]) -> None:
    home = tmp_path.resolve()
    (home / "real" / "x" / "y").mkdir(parents=True)
    (home / "link").symlink_to(home / "real")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(home / "link" / "x" / "y" / "agent.sock"))
    sock.listen(1)
    listening.append(sock)
    assert find([str(home / "real")]).sockets == (str(home / "real/x/y/agent.sock"),)


@pytest.mark.requires_userns
def test_the_walk_finds_a_socket_of_another_network_at_depth_one_and_two(
        tmp_path: Path) -> None:
    """Bound in a network namespace of its own (unshare -rn), the socket is in no list
    of this namespace's: the walk finds it, listening, near the top of the grant."""
    home = tmp_path.resolve()
    (home / ".tool").mkdir()
    (home / ".config" / "deep").mkdir(parents=True)
    script = ("import socket, sys, time\nmade = []\nfor p in sys.argv[1:]:\n"
              "    s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen(1); made.append(s)\n"
              "print('up', flush=True)\ntime.sleep(30)\n")
    paths = [home / ".a.sock", home / ".tool" / "b.sock", home / ".config" / "deep" / "c.sock"]
    with subprocess.Popen(["unshare", "-rn", "/usr/bin/python3", "-c", script,
                           *map(str, paths)], stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout is not None and child.stdout.readline() == "up\n"
            assert not {str(p) for p in paths} & bound_here()
            assert find([str(home)]).sockets == (str(paths[0]), str(paths[1]))
        finally:
            child.kill()


def test_a_socket_nobody_listens_on_is_left(tmp_path: Path) -> None:
    home = tmp_path.resolve()
    _stale(home / "app.sock")
    assert find([str(home)]).sockets == ()


def test_no_link_is_followed_and_hidden_folders_are_not_looked_in(
        tmp_path: Path, listening: list[socket.socket]) -> None:
    home = tmp_path.resolve()
    elsewhere = _listen(tmp_path.parent.resolve() / f"{tmp_path.name}-x" / "s.sock", listening)
    (home / "to-elsewhere").symlink_to(elsewhere.parent)
    hidden = _listen(home / ".ssh" / "agent" / "s.sock", listening)
    assert find([str(home)], [str(home / ".ssh")]).sockets == ()
    assert find([str(home)]).sockets == (str(hidden),)


def test_the_walk_stops_at_its_bound_and_says_where(tmp_path: Path) -> None:
    home = tmp_path.resolve()
    for name in ("a", "b", "c", "d"):
        (home / name).mkdir()
    found = find([str(home)], max_folders=3)
    assert found.unwalked == (str(home / "c"), str(home / "d"))


# -- the plan ------------------------------------------------------------------------------

READ_HOME = spec_grant("~", HOME, "read", "files.read[0]")


def _hides(*grants: Grant, sockets: tuple[str, ...],
           network: NetworkRules | None = None) -> list[MountOp]:
    layout = HostLayout(**{**LAYOUT._asdict(), "sockets": FoundSockets(sockets)})
    snap = snapshot(*grants)._replace(network=network or NetworkRules())
    return [op for op in build_plan(linux_view(snap), layout, root_mode=False).ops
            if op.kind == "hide-file"]


def test_every_socket_found_is_hidden_but_the_named_ones() -> None:
    agent, named, granted = (f"{HOME}/.bitwarden-ssh-agent.sock", f"{HOME}/.x/named.sock",
                             f"{HOME}/granted.sock")
    unix = NetworkRules(unix=(UnixSocket("~/.x/named.sock", False, "network.unix[0]", 4,
                                         named),))
    hides = _hides(READ_HOME, spec_grant("~/granted.sock", granted, "read", "files.read[1]",
                                         is_dir=False),
                   sockets=(agent, named, granted), network=unix)
    assert hides == [MountOp("hide-file", agent, reason=HIDDEN)]


def test_a_socket_in_a_hidden_folder_needs_no_hide_of_its_own() -> None:
    hides = _hides(READ_HOME, spec_grant("~/.1password", f"{HOME}/.1password", "hide",
                                         "files.hide[0]"),
                   sockets=(f"{HOME}/.1password/agent.sock",))
    assert hides == []


def test_unwalked_folders_are_noted() -> None:
    layout = HostLayout(**{**LAYOUT._asdict(),
                           "sockets": FoundSockets((), (f"{HOME}/big",))})
    plan = build_plan(linux_view(snapshot(READ_HOME)), layout, root_mode=False)
    assert plan.notes and f"{HOME}/big" in plan.notes[0]


# -- [network] unix: the run's own mounts, judged as every other mount ----------------------

NAMED = "network.unix"


def _named(path: str, index: int) -> UnixSocket:
    return UnixSocket(path.replace(HOME, "~", 1), False, f"{NAMED}[{index}]", 4, path)


def test_a_named_socket_in_a_written_folder_gets_the_anchors_any_mount_there_gets() -> None:
    """The folders between the written folder and a socket bound inside it are bound onto
    themselves first (a mount point cannot be renamed): else the sandbox could rename the
    folder holding the socket away and put a socket of its own at that path, where the
    person's tools connect. None above a socket in a read grant, a hidden folder, or in no
    grant: the sandbox renames nothing there."""
    deep, read, hidden, outside = (f"{CWD}/run/agent/s.sock", f"{CWD}/ro/x/s.sock",
                                   f"{CWD}/.secret/x/s.sock", "/run/user/1000/s.sock")
    snap = snapshot(spec_grant(".", CWD, "write", "files.write[0]"),
                    spec_grant("./ro", f"{CWD}/ro", "read", "files.read[0]"),
                    spec_grant("./.secret", f"{CWD}/.secret", "hide", "files.hide[0]"))
    unix = NetworkRules(unix=tuple(_named(p, i) for i, p in enumerate(
        (deep, read, hidden, outside))))
    plan = build_plan(linux_view(snap._replace(network=unix)), LAYOUT, root_mode=False)
    anchor = "a mount point, so it cannot be renamed, since it holds " + deep
    assert list(plan.ops) == [
        *ROOT,
        MountOp("bind", CWD, CWD, "files.write[0]: ."),
        MountOp("ro-bind", f"{CWD}/ro", f"{CWD}/ro", "files.read[0]: ./ro"),
        MountOp("tmpfs", f"{CWD}/.secret", reason="files.hide[0]: ./.secret"),
        MountOp("bind", f"{CWD}/run", f"{CWD}/run", anchor),
        MountOp("bind", f"{CWD}/run/agent", f"{CWD}/run/agent", anchor),
        INNER,
        *(MountOp("ro-bind", p, p, f"{NAMED}[{i}]: {p.replace(HOME, '~', 1)}")
          for i, p in enumerate((deep, read, hidden, outside))),
        MountOp("remount-ro", f"{CWD}/.secret", reason="hidden folder"),
        *LATE,
    ]


def test_a_relayed_socket_is_anchored_where_it_is_bound() -> None:
    """Run by root the named socket's relay is bound in its place (socket_relay.py): the
    anchors are where it is bound, whatever it is bound from."""
    sock = f"{CWD}/run/s.sock"
    snap = snapshot(spec_grant(".", CWD, "write", "files.write[0]"))._replace(
        network=NetworkRules(unix=(_named(sock, 0),)))
    plan = build_plan(linux_view(snap), LAYOUT, RunMounts(relays={sock: "/r/relay.sock"}),
                      root_mode=True)
    assert MountOp("bind", f"{CWD}/run", f"{CWD}/run", "a mount point, so it cannot be "
                   f"renamed, since it holds {sock}", idmapped=True) in plan.ops
    assert plan.ops.index(MountOp("ro-bind", sock, "/r/relay.sock", f"{NAMED}[0]: "
                                  "~/proj/run/s.sock", idmapped=True)) == len(plan.ops) - 3
