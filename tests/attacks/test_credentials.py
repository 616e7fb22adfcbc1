"""Credentials and agent sockets under a read grant of home stay out of the sandbox's reach
unless the spec names them.

Agent sockets are found by type, not by a table of names: a real ssh-agent holding a key,
listening where no table lists it (`~/.bitwarden-ssh-agent.sock`, the red team's), in this
network namespace or another one, is not reached from a sandbox that reads home (root
mode refuses the launch outright for a socket root listens on); named in `[network]
unix` it works, which shows the agent and the key were there to reach.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

READ_HOME = '[files]\nread = ["~"]\nwrite = ["."]\n'
LIST_KEYS = "echo STARTED; SSH_AUTH_SOCK={sock} ssh-add -L; echo ssh-add=$?"


class Agent:
    """A real ssh-agent run by the test's user with one key, at `sock`; `other_network`
    starts it in a network namespace of its own (where /proc/net/unix does not list its
    socket: the walk of the grants must find it)."""

    def __init__(self, box: Sandbox, sock: Path, *, other_network: bool = False) -> None:
        self.sock = sock
        run = list(box.who.prefix)
        if other_network:
            run += ["unshare", "-n"] if box.who.is_root else ["unshare", "-rn"]
        key = box.base / f"key-{sock.name}"
        subprocess.run([*box.who.prefix, "ssh-keygen", "-q", "-t", "ed25519", "-N", "",
                        "-C", "the-persons-key", "-f", str(key)], check=True,
                       capture_output=True)
        started = subprocess.run([*run, "ssh-agent", "-a", str(sock), "-s"],
                                 capture_output=True, text=True, check=True)
        self.pid = int(started.stdout.split("SSH_AGENT_PID=")[1].split(";")[0])
        env = {"SSH_AUTH_SOCK": str(sock), "PATH": "/usr/bin:/bin"}
        subprocess.run([*box.who.prefix, "ssh-add", "-q", str(key)], check=True, env=env,
                       capture_output=True)
        self.public = Path(f"{key}.pub").read_text().split()[1]
        key.unlink()

    def stop(self) -> None:
        os.kill(self.pid, signal.SIGTERM)


@pytest.fixture
def agents(sandbox: Sandbox) -> Iterator[list[Agent]]:
    started: list[Agent] = []
    yield started
    for agent in started:
        agent.stop()


def test_an_agent_socket_no_table_names_is_not_reached(sandbox: Sandbox,
                                                       agents: list[Agent]) -> None:
    sock = sandbox.home / ".bitwarden-ssh-agent.sock"
    agents.append(Agent(sandbox, sock))
    done = sandbox.run("/bin/sh", "-c", LIST_KEYS.format(sock=sock), spec=READ_HOME)
    assert agents[0].public not in done.stdout
    if sandbox.who.is_root:
        # Run by root, a socket root listens on in a grant refuses the launch.
        assert done.returncode == 125, done
        assert f"{sock} is a socket a root process listens on" in done.stderr
    else:
        assert done.stdout.splitlines() == ["STARTED", "ssh-add=2"], done
        assert "Error connecting to agent: Connection refused" in done.stderr
    named = READ_HOME + '[network]\nunix = ["~/.bitwarden-ssh-agent.sock"]\n'
    done = sandbox.run("/bin/sh", "-c", LIST_KEYS.format(sock=sock), spec=named)
    assert done.returncode == 0, done
    assert agents[0].public in done.stdout and "ssh-add=0" in done.stdout


@pytest.mark.parametrize("where", [".agent.sock", ".tool/agent.sock"])
def test_an_agent_in_another_network_namespace_is_not_reached(
        sandbox: Sandbox, agents: list[Agent], where: str) -> None:
    """Bound in a network namespace of its own, the socket is in no list of this one's:
    found by the walk of the grant, at depth one and two, and hidden in both modes."""
    sock = sandbox.home / where
    sock.parent.mkdir(parents=True, exist_ok=True)
    sandbox.chown()
    agents.append(Agent(sandbox, sock, other_network=True))
    listed = subprocess.run([*sandbox.who.prefix, "ssh-add", "-L"], capture_output=True,
                            text=True, env={"SSH_AUTH_SOCK": str(sock), "PATH": "/usr/bin"})
    assert agents[0].public in listed.stdout  # reachable from outside, by path
    done = sandbox.run("/bin/sh", "-c", LIST_KEYS.format(sock=sock), spec=READ_HOME)
    assert done.stdout.splitlines() == ["STARTED", "ssh-add=2"], done
    assert agents[0].public not in done.stdout


def test_a_deep_agent_socket_in_this_network_is_not_reached(sandbox: Sandbox,
                                                             agents: list[Agent]) -> None:
    """Deeper than the walk looks, but listed by /proc/net/unix: hidden all the same."""
    sock = sandbox.home / ".local" / "share" / "tool" / "run" / "agent.sock"
    sock.parent.mkdir(parents=True)
    sandbox.chown()
    agents.append(Agent(sandbox, sock))
    done = sandbox.run("/bin/sh", "-c", LIST_KEYS.format(sock=sock), spec=READ_HOME)
    assert agents[0].public not in done.stdout
    if sandbox.who.is_root:
        assert done.returncode == 125 and "a root process listens on" in done.stderr, done
    else:
        assert done.stdout.splitlines() == ["STARTED", "ssh-add=2"], done


def test_a_stale_socket_in_a_written_folder_stays_removable(sandbox: Sandbox) -> None:
    """A socket file nobody listens on (a server's, from an earlier run) is left as it
    is: hiding it would keep a later server from removing it to bind again."""
    import socket

    stale = sandbox.project / "app.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(stale))
    server.close()
    sandbox.chown()
    sandbox.probe("unlink", str(stale), spec='[files]\nwrite = ["."]\n').expect(0)
    assert not stale.exists()
