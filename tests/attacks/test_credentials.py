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

from support.processes import WAIT_FOR_GO, wait_until, while_it_runs
from support.sandbox import LNK, Sandbox, Who

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


# Agents' sockets in folders of home without a dot: under a read grant of home its dot
# entries are hidden whole (test_home_config.py), so the walk by type is tested where the
# sandbox sees the folder.
AGENTS = "agents"


def test_an_agent_socket_no_table_names_is_not_reached(sandbox: Sandbox,
                                                       agents: list[Agent]) -> None:
    sock = sandbox.home / AGENTS / "bitwarden-ssh-agent.sock"
    sock.parent.mkdir()
    sandbox.chown()
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
    named = READ_HOME + f'[network]\nunix = ["~/{AGENTS}/bitwarden-ssh-agent.sock"]\n'
    done = sandbox.run("/bin/sh", "-c", LIST_KEYS.format(sock=sock), spec=named)
    assert done.returncode == 0, done
    assert agents[0].public in done.stdout and "ssh-add=0" in done.stdout


@pytest.mark.parametrize("where", ["agent.sock", "tool/agent.sock"])
def test_an_agent_in_another_network_namespace_is_not_reached(
        sandbox: Sandbox, agents: list[Agent], where: str) -> None:
    """Bound in a network namespace of its own, the socket is in no list of this one's:
    at home's top it is not shown at all (home's entries are bound back by kind, and a
    socket is none of them); one folder in, found by the walk of the grant and hidden,
    in both modes."""
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
    sock = sandbox.home / "work" / "tool" / "run" / "agent.sock"
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


def test_where_the_walk_stopped_is_said_at_launch(sandbox: Sandbox) -> None:
    """A plan's notes (what it could not do) are said on stderr when it runs, as the
    macOS profile's are, not only by `lnk sandbox plan`."""
    from supervisor.linux.sockets import MAX_FOLDERS

    for number in range(MAX_FOLDERS + 10):  # the folders in a grant are walked, one level
        (sandbox.home / f"d{number:04}").mkdir()
    sandbox.chown()
    done = sandbox.run("/bin/true", spec=READ_HOME)
    assert done.returncode == 0, done
    assert "lnk-sandbox: path sockets: the walk of the granted folders stopped" in done.stderr


# -- files: the table, and the name rule -------------------------------------------------------

# The red team's finds with read = ["~"] (issue 13), each in the table now.
TABLE_FILES = (
    ".kaggle/kaggle.json", ".config/containers/auth.json", ".s3cfg", ".boto",
    ".config/glab-cli/config.yml", ".databrickscfg", ".dbt/profiles.yml",
    ".pulumi/credentials.json",
    ".config/configstore/firebase-tools.json", ".gitcookies", ".huggingface/token",
    ".config/pip/pip.conf", ".viminfo", ".local/state/nvim/shada/main.shada",
    ".android/adbkey", ".subversion/auth/svn.simple/x", ".zsh_history", ".m2/settings.xml",
    ".gem/credentials",
)
# Places that joined the table after the red team, one file planted in each: the places
# docs/runs-as-you.md had left unverified, read at their tools' source since, and other
# widely used CLIs' (Linux's places only: the suite runs there).
ADDED_FILES = (
    ".config/hub", ".mongodb/mongosh/mongosh_repl_history",
    ".config/BraveSoftware/Brave-Browser/Default/Cookies",
    ".config/microsoft-edge/Default/Login Data", ".pki/nssdb/key4.db",
    ".local/share/pki/nssdb/key4.db",
    ".config/hcloud/cli.toml", ".config/linode-cli", ".linode-cli", ".supabase/access-token",
    ".snowflake/connections.toml", ".config/snowflake/config.toml", ".cloudflared/cert.pem",
    ".config/ngrok/ngrok.yml", ".config/helm/registry/config.json",
    ".config/pypoetry/auth.toml", ".local/share/uv/credentials/credentials.toml",
    ".bundle/config", ".ollama/id_ed25519", ".config/io.datasette.llm/keys.json",
)
# In no table: hidden by their names alone, where tools keep their files.
NAMED_FILES = (
    ".irb_history", ".rediscli_history", ".config/newtool/token",
    ".config/newtool/credentials.json", ".local/share/othertool/auth.json",
    ".config/editor/Cookies", ".local/state/shell/history.db", ".secrets/api.txt",
)
# What the rule leaves: settings, and files of the person's own without a dot at the top.
LEFT = (".config/newtool/settings.json", "notes/token.txt", ".local/share/othertool/data.db")

READER = ("import sys\nprint('STARTED', flush=True)\n"
          "for path in sys.argv[1:]:\n"
          "    try:\n        data = open(path).read()\n"
          "    except OSError as err:\n        data = f'errno {err.errno}'\n"
          "    print(path, 'SECRET' if 'SECRET' in data else 'nothing')\n")


def _plant_files(box: Sandbox, names: tuple[str, ...]) -> list[str]:
    paths = []
    for name in names:
        path = box.home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("SECRET of the person's\n")
        paths.append(str(path))
    box.chown()
    return paths


# Home's folders where XDG tools keep their files, named: the table and the name rule
# decide inside them (under read = ["~"] alone they are hidden whole, dot entries).
XDG_NAMED = '[files]\nread = ["~", "~/.config", "~/.local"]\nwrite = ["."]\n'


def test_the_red_teams_credential_files_are_not_read(sandbox: Sandbox) -> None:
    """read = ["~"]: each file the red team read, and one in each place added since, is
    not read inside (home's dot entries hidden whole); with ~/.config and ~/.local
    named, the table still hides each one there; named itself, it is read as outside;
    and check names what a spec shows."""
    from support.sandbox import PYTHON_INSIDE

    paths = _plant_files(sandbox, TABLE_FILES + ADDED_FILES)
    done = sandbox.run(PYTHON_INSIDE, "-c", READER, *paths, spec=READ_HOME)
    lines = done.stdout.splitlines()
    assert lines[0] == "STARTED", done
    assert lines[1:] == [f"{path} nothing" for path in paths], done.stdout
    xdg = [path for path in paths
           if path.startswith((f"{sandbox.home}/.config/", f"{sandbox.home}/.local/"))]
    assert len(xdg) > 15
    done = sandbox.run(PYTHON_INSIDE, "-c", READER, *xdg, spec=XDG_NAMED)
    assert done.stdout.splitlines()[1:] == [f"{path} nothing" for path in xdg], done.stdout
    named = READ_HOME.replace('["~"]', '["~", "~/.kaggle", "~/.zsh_history"]')
    zsh_history = paths[TABLE_FILES.index(".zsh_history")]
    done = sandbox.run(PYTHON_INSIDE, "-c", READER, paths[0], zsh_history, spec=named)
    assert done.stdout.splitlines()[1:] == [f"{paths[0]} SECRET", f"{zsh_history} SECRET"]
    check = sandbox.lnk("check", spec=named)
    assert "~/.kaggle: files.read[1] (~/.kaggle) names it" in check.stdout
    assert "~/.zsh_history: files.read[2] (~/.zsh_history) names it" in check.stdout


def test_secrets_no_table_lists_are_hidden_by_their_names(sandbox: Sandbox) -> None:
    from support.sandbox import PYTHON_INSIDE

    hidden = _plant_files(sandbox, NAMED_FILES)
    left = _plant_files(sandbox, LEFT)
    done = sandbox.run(PYTHON_INSIDE, "-c", READER, *hidden, *left, spec=XDG_NAMED)
    lines = done.stdout.splitlines()
    assert lines[0] == "STARTED", done
    assert lines[1:] == ([f"{path} nothing" for path in hidden]
                         + [f"{path} SECRET" for path in left]), done.stdout
    named = XDG_NAMED.replace('"~/.local"]', '"~/.local", "~/.config/newtool/token"]')
    done = sandbox.run(PYTHON_INSIDE, "-c", READER, hidden[2], hidden[3], spec=named)
    assert done.stdout.splitlines()[1:] == [f"{hidden[2]} SECRET", f"{hidden[3]} nothing"]
    check = sandbox.lnk("check", spec=named)
    assert ("~/.config/newtool/token: files.read[3] (~/.config/newtool/token) names it"
            in check.stdout), check.stdout


def test_a_secret_past_the_name_rules_bound_is_hidden_all_the_same(sandbox: Sandbox) -> None:
    """The name rule lists at most MAX_FOLDERS folders at launch; in a home with more
    tool folders, the ones it does not reach are hidden whole and the launch says so.
    Found by the red team with 530 folders before ~/.config/zzz/token, which was read
    while ~/.config/aaa-token, listed in time, was hidden."""
    from supervisor.secret_names import MAX_FOLDERS
    from support.sandbox import PYTHON_INSIDE

    config = sandbox.home / ".config"
    for number in range(MAX_FOLDERS + 10):
        (config / f"tool{number:05}").mkdir(parents=True)
    paths = _plant_files(sandbox, (".config/zzz/token", ".config/tool00000/token"))
    left = _plant_files(sandbox, (".config/tool00001/settings.json",))
    spec = '[files]\nread = ["~", "~/.config"]\nwrite = ["."]\n'
    done = sandbox.run(PYTHON_INSIDE, "-c", READER, *paths, *left, spec=spec)
    lines = done.stdout.splitlines()
    assert lines[:1] == ["STARTED"], done
    assert lines[1:] == [f"{path} nothing" for path in paths] + [f"{left[0]} SECRET"]
    assert "secrets by name: the listing of home's tool folders reached its bound" \
        in done.stderr


@pytest.fixture
def home_box(who: Who, tmp_path: Path) -> Iterator[Sandbox]:
    """A sandbox whose home is outside /tmp, as a person's is."""
    box = Sandbox.create(who, tmp_path, under="/var/tmp")
    yield box
    box.cleanup()


# Inside: say it started, wait until the person has acted outside, then read.
WAIT_AND_READ = (WAIT_FOR_GO + "cat ~/.git-credentials; echo cat=$?; "
                 "cat ~/.aws/credentials; echo cat=$?")


@pytest.mark.usefixtures("inner")  # the compiled inner and its Python fallback
def test_a_hidden_file_replaced_or_a_place_made_during_the_run_is_not_read(
        home_box: Sandbox) -> None:
    """The person's own git stores a credential while a sandbox reading home runs: git's
    credential-store writes a new ~/.git-credentials and renames it over the old one,
    which detaches the hide mounted there (the kernel takes a mount off a dentry renamed
    over in another mount namespace), and `aws configure` makes ~/.aws, missing at
    launch, where nothing was mounted. Neither the old nor the new secret is read: both
    are dot entries of home, which under a read grant of home is a folder of its own
    inside, so what the host makes or replaces there is not in it at all (Landlock or
    not); the same held, by Landlock, when home was bound whole (red team 24b)."""
    box = home_box
    creds = box.home / ".git-credentials"
    creds.write_text("https://person:ghp_OLDSECRET@github.com\n")
    creds.chmod(0o600)
    box.chown()
    command = [*box.who.prefix, LNK, "sandbox", "run", "--spec",
               str(box.write_spec(READ_HOME)), "--yes", "--", "/bin/sh", "-c",
               WAIT_AND_READ]

    def person_acts() -> None:
        person = {**box.env(), "GIT_CONFIG_NOSYSTEM": "1"}
        subprocess.run([*box.who.prefix, "git", "credential-store", "store"], env=person,
                       input="protocol=https\nhost=gitlab.com\nusername=person\n"
                       "password=glpat-NEWSECRET\n\n", text=True, check=True)
        assert "glpat-NEWSECRET" in creds.read_text()  # renamed over: a new inode
        aws = box.home / ".aws"
        aws.mkdir()
        (aws / "credentials").write_text("[default]\naws_secret_access_key=AKIALATER\n")
        box.chown()

    _, out, err = while_it_runs(command, cwd=box.project, env=box.env(), act=person_acts)
    assert out.splitlines()[0] == "STARTED", (out, err)
    assert "SECRET" not in out and "AKIALATER" not in out, out
    assert out.count("cat=1") == 2, (out, err)
    assert f"{creds}: No such file or directory" in err, err


# Inside: wait until the person has acted outside, then read both hidden files.
WAIT_AND_READ_BOTH = (WAIT_FOR_GO + "cat ~/.git-credentials; echo cat=$?; "
                      "cat ~/.config/secret; echo cat=$?")


@pytest.mark.usefixtures("inner")  # the compiled inner and its Python fallback
@pytest.mark.parametrize("reads", ['["/", "~", "~/.config"]', '["~", "~/.config"]'],
                         ids=["root-and-home", "home-and-config"])
def test_a_read_grant_above_the_one_holding_a_hidden_file_is_closed_too(
        home_box: Sandbox, reads: str) -> None:
    """Landlock's rights add up along a path, across mounts: with `read = ["/", "~"]` the
    rule on `/` reached ~/.git-credentials, and with `read = ["~", "~/.config"]` the rule
    on ~ (closed for its own hidden files, with full rights on its entry .config) reached
    a hidden file in ~/.config. Only the grant holding a hidden path was closed, so the
    person's new credential renamed over a hidden one was read (red team 24c). Since
    home's dot entries are hidden whole, ~/.git-credentials is not in the sandbox at all
    and ~/.config is named, so that the closing of the grants above it is still what
    holds its hidden file."""
    box = home_box
    creds = box.home / ".git-credentials"
    secret = box.home / ".config" / "secret"
    secret.parent.mkdir(exist_ok=True)
    for path in (creds, secret):
        path.write_text("OLDSECRET\n")
        path.chmod(0o600)
    box.chown()
    spec = f'[files]\nread = {reads}\nwrite = ["."]\nhide = ["~/.config/secret"]\n'
    command = [*box.who.prefix, LNK, "sandbox", "run", "--spec", str(box.write_spec(spec)),
               "--yes", "--", "/bin/sh", "-c", WAIT_AND_READ_BOTH]

    def person_acts() -> None:
        for path in (creds, secret):  # as git's credential-store and editors write
            new = path.with_name(path.name + ".new")
            new.write_text("NEWSECRET\n")
            new.chmod(0o600)
            os.replace(new, path)
        box.chown()

    _, out, err = while_it_runs(command, cwd=box.project, env=box.env(), act=person_acts)
    assert out.splitlines()[0] == "STARTED", (out, err)
    assert "SECRET" not in out, out
    assert out.count("cat=1") == 2, (out, err)
    assert f"{creds}: No such file or directory" in err, err
    assert f"{secret}: Permission denied" in err, err


WAIT_AND_LIST = WAIT_FOR_GO + "SSH_AUTH_SOCK={sock} ssh-add -L; echo ssh-add=$?"


def _refused_for_root(box: Sandbox, command: list[str], sock: Path) -> None:
    """Run by root, a socket a root process listens on in a grant refuses the launch
    (the sandbox would be its owner there): the agent is never reached at all."""
    done = subprocess.run(command, cwd=box.project, env=box.env(), text=True,
                          capture_output=True, timeout=60)
    assert done.returncode == 125 and "STARTED" not in done.stdout, done
    assert f"{sock} is a socket a root process listens on" in done.stderr, done.stderr


def test_an_agent_restarted_while_the_run_lasts_is_not_reached(
        sandbox: Sandbox, agents: list[Agent]) -> None:
    """An agent that restarts binds its socket at the same path again, which takes the
    hide off (the kernel detaches a mount from a dentry removed in another mount
    namespace); below Landlock ABI 9 connect() needs no right, so the read grant's
    closing does not hold it: the sandbox listed the person's keys from the new agent
    (red team 24c). The mount watch now watches sockets' hides under read grants too."""
    sock = sandbox.home / AGENTS / "bitwarden-ssh-agent.sock"
    sock.parent.mkdir()
    sandbox.chown()
    agents.append(Agent(sandbox, sock))
    command = [*sandbox.who.prefix, LNK, "sandbox", "run", "--spec",
               str(sandbox.write_spec(READ_HOME)), "--yes", "--", "/bin/sh", "-c",
               WAIT_AND_LIST.format(sock=sock)]
    if sandbox.who.is_root:
        _refused_for_root(sandbox, command, sock)
        return

    def agent_restarts() -> None:
        agents.pop().stop()
        assert wait_until(lambda: not sock.exists(), timeout=10)
        agents.append(Agent(sandbox, sock))  # the same path, a new socket

    status, out, err = while_it_runs(command, cwd=sandbox.project, env=sandbox.env(),
                                     act=agent_restarts, end_first=10)
    assert agents[0].public not in out, out
    assert status == 125, (out, err)
    assert f"{sock} was replaced or removed on the host while the run lasted" in err, err


def test_an_agent_that_ends_while_the_run_lasts_ends_the_run(
        sandbox: Sandbox, agents: list[Agent]) -> None:
    """An agent that ends removes its socket, which takes the hide off: the run ends
    then, not only when one listens there again. Letting it go on was tried and a red
    team reached a restarted agent within the 0.1 s before a poll saw the new socket
    (a rebind changes no mount), so the price stays: an agent's exit ends the runs
    that read its folder, with the path and the hint named."""
    sock = sandbox.home / AGENTS / "bitwarden-ssh-agent.sock"
    sock.parent.mkdir()
    sandbox.chown()
    agents.append(Agent(sandbox, sock))
    command = [*sandbox.who.prefix, LNK, "sandbox", "run", "--spec",
               str(sandbox.write_spec(READ_HOME)), "--yes", "--", "/bin/sh", "-c",
               WAIT_FOR_GO + "echo DONE"]
    if sandbox.who.is_root:
        _refused_for_root(sandbox, command, sock)
        return

    def agent_ends() -> None:
        agents.pop().stop()
        assert wait_until(lambda: not sock.exists(), timeout=10)

    status, out, err = while_it_runs(command, cwd=sandbox.project, env=sandbox.env(),
                                     act=agent_ends, end_first=10)
    assert (status, out.splitlines()) == (125, ["STARTED"]), (out, err)
    assert f"{sock} was replaced or removed on the host while the run lasted" in err, err
    assert "a program on the host listens there again" in err
