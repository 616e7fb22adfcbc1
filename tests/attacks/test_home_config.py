"""A read grant of home shows the person's files, not their configuration (issue 26).

Every dot entry of home is hidden whatever its name, and so are the folders of programs'
profiles without a dot (~/snap, ~/Games), unless the spec names them; a short list of
places of code that hold no secret is reopened (supervisor/home_config.py). The tests
are by class: random names nobody listed, at one level and deeper, a profile under
~/snap nobody listed, what the host makes while the run lasts (with and without
Landlock: the rule holds by structure); each reader prints STARTED first, so "not read"
is never "never ran", and each has its control (the same file readable where the rule
shows it, or named). Then what real tools (git, pip, npm, ssh) still find in a
realistic home under `read = ["~"]`, and the hard-link gap, stated.
"""

from __future__ import annotations

import errno
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.processes import WAIT_FOR_GO, while_it_runs
from support.sandbox import LNK, PYTHON_INSIDE, SUPPORT, Sandbox, Who

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

READ_HOME = '[files]\nread = ["~"]\nwrite = ["."]\n'

# Prints STARTED, then each path with what reading it gave: SECRET (its content read),
# `errno N`, or `read` (read, no secret in it).
READER = ("import sys\nprint('STARTED', flush=True)\n"
          "for path in sys.argv[1:]:\n"
          "    try:\n        data = open(path).read()\n"
          "    except OSError as err:\n        print(path, 'errno', err.errno); continue\n"
          "    print(path, 'SECRET' if 'SECRET' in data else 'read')\n")


def _name() -> str:
    return secrets.token_hex(5)


def _plant(box: Sandbox, relative: list[str]) -> list[str]:
    paths = []
    for name in relative:
        path = box.home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"SECRET {secrets.token_hex(8)}\n")
        paths.append(str(path))
    box.chown()
    return paths


def _read(box: Sandbox, paths: list[str], spec: str) -> list[str]:
    done = box.run(PYTHON_INSIDE, "-c", READER, *paths, spec=spec)
    lines = done.stdout.splitlines()
    assert lines[:1] == ["STARTED"], done
    return lines[1:]


def _gone(paths: list[str]) -> list[str]:
    return [f"{path} errno {errno.ENOENT}" for path in paths]


@pytest.fixture
def home_box(who: Who, tmp_path: Path) -> Iterator[Sandbox]:
    """A sandbox whose home is outside /tmp, as a person's is."""
    box = Sandbox.create(who, tmp_path, under="/var/tmp")
    yield box
    box.cleanup()


def test_a_secret_at_a_dot_path_nobody_listed_is_hidden(sandbox: Sandbox) -> None:
    """Random dot names no table or name rule knows, at home's top, one folder in, two
    and three folders in: none is read. Without a dot, the same file is read (the
    control), and a spec naming one dot path reads exactly that one."""
    one, two, three = f".{_name()}", f".{_name()}", f".{_name()}"
    hidden = _plant(sandbox, [f".{_name()}", f"{one}/{_name()}", f"{two}/{_name()}/{_name()}",
                              f"{three}/{_name()}/{_name()}/{_name()}.conf"])
    sibling = _plant(sandbox, [f"{one}/{_name()}"])
    shown = _plant(sandbox, [f"{_name()}/{_name()}"])
    assert _read(sandbox, [*hidden, *sibling, *shown], READ_HOME) == [
        *_gone(hidden), *_gone(sibling), f"{shown[0]} SECRET"]
    named = f'[files]\nread = ["~", "~/{hidden[1][len(str(sandbox.home)) + 1:]}"]\n' \
            'write = ["."]\n'
    assert _read(sandbox, [*hidden, *sibling], named) == [
        *_gone(hidden[:1]), f"{hidden[1]} SECRET", *_gone(hidden[2:]), *_gone(sibling)]


RED_TEAMS = (  # issue 26's finds under read = ["~"], each at its tool's documented path
    ".config/tea/config.yml", ".config/stripe/config.toml", ".config/configstore/snyk.json",
    ".config/scw/config.yaml", ".config/atuin/key", ".config/Bitwarden CLI/data.json",
    ".config/filezilla/sitemanager.xml", ".config/aerc/accounts.conf",
    ".config/discord/Local Storage/leveldb/000005.ldb", ".config/doppler/.doppler.yaml",
    ".sentryclirc", ".mc/config.json", ".circleci/cli.yml", ".vagrant.d/insecure_private_key",
    ".purple/accounts.xml", ".fetchmailrc", ".msmtprc", ".mbsyncrc", ".irssi/config",
    ".ansible/vault_pass.txt", ".minikube/profiles/minikube/client.key", ".ssh-agent.env",
    ".config/op/config", ".var/app/org.mozilla.firefox/.mozilla/firefox/x.default/logins.json",
    ".var/app/com.google.Chrome/config/google-chrome/Default/Login Data",
    ".config/vivaldi/Default/Login Data", ".thunderbird/x.default/logins.json",
    "snap/firefox/common/.mozilla/firefox/x.default/logins.json",
    "snap/firefox/common/.mozilla/firefox/x.default/key4.db",
    "snap/chromium/common/chromium/Default/Login Data",
)


def test_the_red_teams_files_are_not_read(sandbox: Sandbox) -> None:
    paths = _plant(sandbox, list(RED_TEAMS))
    assert _read(sandbox, paths, READ_HOME) == _gone(paths)


def test_a_profile_of_a_program_without_a_dot_is_hidden(sandbox: Sandbox) -> None:
    """A snap nobody listed keeps its profile in ~/snap/NAME/REVISION and .../common; a
    Wine prefix under ~/Games keeps a Windows profile: none is read, and a spec naming
    one snap's common folder reads exactly that."""
    snap, game = f"snap-{_name()}", f"game-{_name()}"
    hidden = _plant(sandbox, [f"snap/{snap}/123/.config/{_name()}/session.json",
                              f"snap/{snap}/common/.local/share/{_name()}.db",
                              f"Games/{game}/drive_c/users/me/AppData/Roaming/x/login.dat"])
    assert _read(sandbox, hidden, READ_HOME) == _gone(hidden)
    named = f'[files]\nread = ["~", "~/snap/{snap}/common"]\nwrite = ["."]\n'
    assert _read(sandbox, hidden, named) == [
        hidden[0] + f" errno {errno.ENOENT}", f"{hidden[1]} SECRET",
        hidden[2] + f" errno {errno.ENOENT}"]


# Inside: wait until the person has acted outside, then read what they made.
def _wait_and_read(paths: list[str]) -> str:
    return WAIT_FOR_GO + f"{PYTHON_INSIDE} reader.py " + " ".join(f"'{p}'" for p in paths)


@pytest.mark.parametrize("landlock", [True, False], ids=["landlock", "no-landlock"])
def test_what_the_host_makes_in_home_while_the_run_lasts_is_not_seen(
        home_box: Sandbox, landlock: bool) -> None:
    """A tool makes a dot folder with a token in home, and a dot file, while the run
    lasts: neither is in the sandbox, with Landlock or without (home is a folder of its
    own inside, by structure). A file made in a folder of home the sandbox sees is seen
    (the control: home is read live where it is shown); a file made at home's top is
    not, until the next run (stated)."""
    box = home_box
    (box.home / "src").mkdir()
    (box.project / "reader.py").write_text(READER)
    box.chown()
    later = [str(box.home / f".{_name()}" / "token"), str(box.home / f".{_name()}"),
             str(box.home / "src" / "new.txt"), str(box.home / "top.txt")]
    spec = box.write_spec(READ_HOME)
    command = [*box.who.prefix, LNK, "sandbox", "run", "--spec", str(spec), "--yes", "--",
               "/bin/sh", "-c", _wait_and_read(later)]
    if not landlock:
        command = [*box.who.prefix, sys.executable, str(SUPPORT / "no_landlock.py"),
                   *command[len(box.who.prefix):]]

    def person_acts() -> None:
        for path in later:
            Path(path).parent.mkdir(exist_ok=True)
            Path(path).write_text("SECRET made during the run\n")
        box.chown()

    status, out, err = while_it_runs(command, cwd=box.project, env=box.env(),
                                     act=person_acts)
    assert status == 0, (out, err)
    assert out.splitlines() == ["STARTED", "STARTED", *_gone(later[:2]),
                                f"{later[2]} SECRET", *_gone(later[3:])], (out, err)


# A toolchain's files: (path in home, content); "#!" ones are programs run inside.
TOOLCHAINS = {
    ".rustup/toolchains/stable/bin/rustc": "#!/bin/sh\necho rustc-ran\n",
    ".rustup/settings.toml": 'default_toolchain = "stable"\n',
    ".cargo/bin/cargo-tool": "#!/bin/sh\necho cargo-tool-ran\n",
    ".cargo/registry/src/index/serde-1.0.0/src/lib.rs": "// serde\n",
    ".local/bin/mytool": "#!/bin/sh\necho mytool-ran\n",
    ".local/lib/python3.11/site-packages/mod.py": "X = 1\n",
    ".nvm/versions/node/v20.11.1/bin/node": "#!/bin/sh\necho node-ran\n",
    ".nvm/versions/node/v20.11.1/lib/node_modules/npm/package.json": "{}\n",
    ".nvm/versions/node/v22.1.0/include/node/node.h": "/* node */\n",
    ".pyenv/versions/3.12.1/bin/python3.12": "#!/bin/sh\necho pyenv-python-ran\n",
    ".pyenv/versions/3.12.1/lib/python3.12/os.py": "# os\n",
    ".pyenv/shims/python": "#!/bin/sh\necho shim-ran\n",
    ".pyenv/version": "3.12.1\n",
    ".local/share/uv/tools/ruff/bin/ruff": "#!/bin/sh\necho ruff-ran\n",
    ".local/share/uv/tools/ruff/pyvenv.cfg": "home = /usr/bin\n",
    ".local/share/pipx/venvs/black/bin/black": "#!/bin/sh\necho black-ran\n",
    ".local/share/pipx/venvs/black/lib/python3.11/site-packages/black.py": "# black\n",
}
# Beside them, what holds a secret: hidden, though its toolchain is shown.
BESIDE = (".cargo/credentials.toml", ".cargo/config.toml", ".rustup-token",
          ".nvm/versions/node/v20.11.1/etc/npmrc", ".nvm/alias/default",
          ".pyenv/versions/3.12.1/pip.conf", ".pyenv/versions/3.12.1/.condarc",
          ".local/share/uv/tools/ruff/uv-receipt.toml", ".local/share/uv/credentials/c.toml",
          ".local/share/pipx/venvs/black/pipx_metadata.json",
          ".local/share/pipx/logs/cmd_2026-01-01.log", ".local/share/other/token.txt")


def test_the_toolchains_reopened_run_and_their_secrets_stay_hidden(sandbox: Sandbox) -> None:
    for name, content in TOOLCHAINS.items():
        path = sandbox.home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        if content.startswith("#!"):
            path.chmod(0o755)
    (sandbox.home / ".local/bin/black").symlink_to("../share/pipx/venvs/black/bin/black")
    beside = _plant(sandbox, list(BESIDE))
    files = [str(sandbox.home / n) for n, c in TOOLCHAINS.items() if not c.startswith("#!")]
    assert _read(sandbox, [*files, *beside], READ_HOME) == [
        *(f"{path} read" for path in files), *_gone(beside)]
    programs = [n for n, c in TOOLCHAINS.items() if c.startswith("#!")]
    done = sandbox.run("/bin/sh", "-c", "echo STARTED; " + "; ".join(
        f"'{sandbox.home / n}'" for n in [*programs, ".local/bin/black"]),
        spec=READ_HOME)
    assert done.stdout.split() == ["STARTED", "rustc-ran", "cargo-tool-ran", "mytool-ran",
                                   "node-ran", "pyenv-python-ran", "shim-ran", "ruff-ran",
                                   "black-ran", "black-ran"], done


def test_a_hard_link_the_person_made_reads_a_hidden_file_the_sandbox_cannot_make_one(
        sandbox: Sandbox) -> None:
    """The stated gap, on Linux as on macOS: a hard link the person made before the run,
    in a folder the sandbox reads, reads the hidden file (a hide closes a path). The
    sandbox cannot make one: the hidden path is not there, and a hidden file shown as an
    empty one is another mount (EXDEV). `check` states the gap."""
    key = _plant(sandbox, [".ssh/id_ed25519"])[0]
    backup = sandbox.home / "backup"
    backup.mkdir()
    os.link(key, backup / "id_ed25519.bak")
    sandbox.chown()
    assert _read(sandbox, [key, str(backup / "id_ed25519.bak")], READ_HOME) == [
        f"{key} errno {errno.ENOENT}", f"{backup / 'id_ed25519.bak'} SECRET"]
    hidden = _plant(sandbox, ["work/secret.txt"])[0]
    linker = ("import os, sys\nprint('STARTED', flush=True)\n"
              "for i, path in enumerate(sys.argv[1:]):\n"
              "    try:\n        os.link(path, f'link{i}'); print('linked')\n"
              "    except OSError as err:\n        print('errno', err.errno)\n")
    spec = READ_HOME + 'hide = ["~/work/secret.txt"]\n'
    done = sandbox.run(PYTHON_INSIDE, "-c", linker, key, hidden, spec=spec)
    assert done.stdout.splitlines() == [
        "STARTED", f"errno {errno.ENOENT}", f"errno {errno.EXDEV}"], done
    check = sandbox.lnk("check", spec=READ_HOME)
    assert "a hard link made before the run, in a folder the sandbox reads, to a file " \
        "it hides" in check.stdout, check.stdout


def _realistic_home(box: Sandbox) -> None:
    """A home as a developer's looks: the usual folders, a project, a snap, the common
    tools' settings and logins, histories, a toolchain."""
    home = box.home
    for folder in ("Desktop", "Documents", "Downloads", "Music", "Pictures", "Public",
                   "Templates", "Videos", "src/app", "go/pkg/mod", "bin",
                   "snap/firefox/common/.mozilla/firefox/x.default"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    (home / "notes.txt").write_text("notes\n")
    files = {
        ".gitconfig": "[user]\n\tname = Person\n\temail = p@example.com\n[url "
                      '"https://SECRET-git@github.com/"]\n\tinsteadOf = https://github.com/\n'
                      "[credential]\n\thelper = store\n",
        ".git-credentials": "https://person:SECRET-ghp@github.com\n",
        ".config/pip/pip.conf": "[global]\nindex-url = https://u:SECRET-pip@pypi.example/simple\n",
        ".npmrc": "//registry.npmjs.org/:_authToken=npm_SECRET\n",
        ".ssh/id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----\nSECRET\n",
        ".ssh/config": "Host work\n  HostName SECRET-internal.example\n  User deploy\n",
        ".ssh/known_hosts": "SECRET-internal.example ssh-ed25519 AAAA\n",
        ".bashrc": "export PATH=$HOME/bin:$PATH\n", ".profile": "", ".bash_history": "SECRET\n",
        ".python_history": "SECRET\n", ".lesshst": "", ".viminfo": "SECRET\n",
        ".wget-hsts": "", ".aws/credentials": "aws_secret_access_key = SECRET\n",
        ".kube/config": "token: SECRET\n", ".docker/config.json": '{"auths": "SECRET"}\n',
        ".config/Code/User/settings.json": "{}\n", ".config/gh/hosts.yml": "SECRET\n",
        ".config/tea/config.yml": "token: SECRET\n", ".local/share/recently-used.xbel": "",
        ".cache/pip/http/x": "", ".mozilla/firefox/y.default/logins.json": "SECRET\n",
        ".vscode/extensions/x.json": "", ".sentryclirc": "token=SECRET\n",
        ".rustup/settings.toml": "version = \"12\"\n", ".cargo/bin/rg": "#!/bin/sh\n",
        ".cargo/credentials.toml": "token = \"SECRET\"\n",
        "snap/firefox/common/.mozilla/firefox/x.default/key4.db": "SECRET\n",
    }
    for name, content in files.items():
        path = home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    (home / ".ssh").chmod(0o700)
    (home / ".ssh" / "id_ed25519").chmod(0o600)
    box.chown()


TOOLS = (
    "echo STARTED; "
    "echo LS; ls -A ~; "
    "echo GIT; git config --global --list; "
    "echo PIP; python3 -m pip config list; "
    "echo NPM; npm config list 2>/dev/null | grep -vE '^;|^$'; "
    "echo SSH; ls ~/.ssh 2>&1; "
    "ssh -F ~/.ssh/config -G work 2>&1 | grep -E '^hostname |open user config'; "
    "echo END")


def _tools(box: Sandbox, spec: str) -> dict[str, list[str]]:
    done = box.run("/bin/sh", "-c", TOOLS, spec=spec,
                   env={"PATH": "/usr/local/bin:/usr/bin:/bin"})
    lines = done.stdout.splitlines()
    assert lines[:1] == ["STARTED"] and lines[-1:] == ["END"], done
    found: dict[str, list[str]] = {}
    section = ""
    for line in lines[1:-1]:
        if line in ("LS", "GIT", "PIP", "NPM", "SSH"):
            section = line
            found[section] = []
        else:
            found[section].append(line)
    return found


def test_what_git_pip_npm_and_ssh_find_in_a_realistic_home(sandbox: Sandbox) -> None:
    """`read = ["~"]` on a home as a developer's looks: what is shown of it, and what the
    person's own tools find inside. Nothing of the person's configuration: git sees only
    the identity lnk-sandbox gives it, pip and npm no settings, ssh no config, no key,
    no known host (pip and npm find the system's settings in /etc). Named (the control),
    each finds the person's own, so the tools do look there (npm shows a token it found
    as "(protected)")."""
    _realistic_home(sandbox)
    entries = sorted(os.listdir(sandbox.home))
    found = _tools(sandbox, READ_HOME)
    shown = sorted(found["LS"])
    # The entries without a dot but ~/snap, and the folders holding what is reopened.
    assert shown == sorted([*(e for e in entries if not e.startswith(".") and e != "snap"),
                            ".cargo", ".rustup"])
    assert found["GIT"] == ["user.name=Person", "user.email=p@example.com"]
    assert found["PIP"] == _system_pip_settings()  # the system's /etc, none of home's
    assert not any("_authToken" in line for line in found["NPM"]), found["NPM"]
    # ssh reads the passwd entry's home, the test user's own: its file is named.
    assert found["SSH"] == [f"ls: cannot access '{sandbox.home}/.ssh': No such file or "
                            "directory", f"Can't open user config file {sandbox.home}/.ssh/"
                            "config: No such file or directory"], found["SSH"]
    assert "SECRET" not in repr(found)
    print(f"\nHOME: {len(entries)} entries, {len(shown)} shown ({', '.join(shown)}); "
          f"git: {found['GIT']}; pip: {found['PIP']}; npm: {found['NPM']}; "
          f"ssh: {found['SSH']}")
    named = ('[files]\nread = ["~", "~/.gitconfig", "~/.config/pip/pip.conf", "~/.npmrc", '
             '"~/.ssh"]\nwrite = ["."]\n')
    found = _tools(sandbox, named)
    assert any("insteadof" in line for line in found["GIT"]), found
    assert any("SECRET-pip" in line for line in found["PIP"])
    assert "//registry.npmjs.org/:_authToken = (protected)" in found["NPM"]
    assert found["SSH"] == ["config", "id_ed25519", "known_hosts",
                            "hostname secret-internal.example"], found["SSH"]


def _system_pip_settings() -> list[str]:
    """What pip's system-wide settings files (/etc, a system folder) say, read outside."""
    done = subprocess.run([PYTHON_INSIDE, "-m", "pip", "config", "--global", "list"],
                          capture_output=True, text=True, check=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    return done.stdout.splitlines()
