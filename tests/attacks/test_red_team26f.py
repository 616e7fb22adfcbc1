"""Red team 26f (issue 26): an independent attack on the rules that fail closed, with
instances the suite did not use, by class.

1. Secrets under `read = ["~"]` (home_config.py, home_hidden.py, linux/home.py): a
   tool's secret kept where no dot and no list is (a conda environment's variables, an
   AppImage's portable home and config, a browser bundle's own profile), what a Stow
   dotfiles repository keeps beside the link targets it hides (its history, its other
   packages), and home reached by a path that is no link (a bind mount).
2. What runs as the person afterwards (person_settings.py, dotfiles.py, below_top.py):
   a readline macro one `$include` away, a PATH folder fish's universal variables add
   (`fish_add_path`), what a held hook runs from the work tree (pre-commit's stub in
   the project's venv, a hook delegating to a tracked script) and what the person's
   global hooks folder runs from a grant, a venv's `Activate.ps1`, and a repository
   past the launch walk's bound under the default spec, which is never asked about.
3. This host's addresses through the proxy (proxy/own.py): addresses the kernel
   delivers here by a `local` route no interface holds (AnyIP), IPv4 and IPv6.
4. The terminal: the folder `lnk sandbox allow` asks about, named by a sandbox.

Each plants or reads inside a real sandbox (root mode and the unprivileged user), after
proving it started there, then runs the person's real tool outside (git, bash at a
terminal, fish, lnk's own question at a terminal) and looks for the planted marker; a
control makes the same change on the host and sees the tool run it. What gets out is
a strict xfail under `escaped(...)` (support/red_team.py); what held stays as a
regression test.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest

from support.actions import SCRIPT
from support.capabilities import missing
from support.processes import at_terminal
from support.red_team import (
    HOME_READ,
    SYSTEM_PATH,
    escaped,
    host,
    marker,
    markers,
    need,
    ok,
    payload,
    person_git,
    plant,
    plant_or_refused,
    ran,
    repository,
)
from support.sandbox import PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

NOTES = "the person's notes\n"

# Walks each root inside (no link followed) and reports which of the wanted texts any
# readable file holds, as it is or zlib-inflated (git's loose objects).
FINDER = r"""
import json, os, sys, zlib
print("STARTED", flush=True)
wanted, roots = json.loads(sys.argv[1]), sys.argv[2:]
found, notes = {}, {}
for root in roots:
    try:
        with open(os.path.join(root, "notes.txt")) as handle:
            notes[root] = handle.read()
    except OSError as err:
        notes[root] = str(err)
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as handle:
                    data = handle.read(1 << 20)
            except OSError:
                continue
            texts = [data]
            try:
                texts.append(zlib.decompress(data))
            except Exception:
                pass
            for text in wanted:
                if any(text.encode() in t for t in texts):
                    found.setdefault(text, []).append(path)
print("FOUND " + json.dumps({"found": found, "notes": notes}), flush=True)
"""


def find_inside(box: Sandbox, wanted: list[str], *roots: Path,
                spec: str = HOME_READ) -> dict[str, list[str]]:
    """Where inside a sandbox each wanted text was read, once it is known to have
    started there and read the person's notes at each root."""
    done = box.run(PYTHON_INSIDE, "-c", FINDER, json.dumps(wanted), *map(str, roots),
                   spec=spec)
    lines = done.stdout.splitlines()
    need(lines[:1] == ["STARTED"] and lines[-1:] and lines[-1].startswith("FOUND "),
         f"the finder never ran inside (exit {done.returncode}):\n{done.stderr}")
    result = json.loads(lines[-1][6:])
    need(all(text == NOTES for text in result["notes"].values()),
         f"the person's own files were not shown: {result['notes']}")
    found: dict[str, list[str]] = result["found"]
    return found


def token() -> str:
    return f"tok-{secrets.token_hex(10)}"


def person(box: Sandbox, *command: str, cwd: Path) -> None:
    """A command of the person's on the host, which must succeed."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(box.home), "LANG": "C",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "P", "GIT_AUTHOR_EMAIL": "p@x",
           "GIT_COMMITTER_NAME": "P", "GIT_COMMITTER_EMAIL": "p@x"}
    done = subprocess.run([*box.who.prefix, *command], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)
    need(done.returncode == 0, f"the person's {command}: {done.stderr}")


# == 1. secrets under a read grant of home ===================================================

@pytest.mark.parametrize("copy", [
    "its history",
    *(pytest.param(layout, marks=escaped(
        "home_hidden hides the repository a dot link leads into; a folder that is no "
        "repository hides the target alone, since nothing tells Stow's folder from a "
        "synced one holding the person's documents (~/.bashrc -> Dropbox/.bashrc)"))
      for layout in ("a package not linked, Stow's own layout",
                     "a package not linked on this machine")),
])
def test_hidden_configuration_kept_in_the_dotfiles_repository(sandbox: Sandbox,
                                                            copy: str) -> None:
    """GNU Stow's layout, `~/.config/TOOL -> ../dotfiles/TOOL`, ~/dotfiles a git
    repository (as Stow's users keep it): home_hidden hides ~/dotfiles/TOOL, the link's
    target, as configuration. The same bytes are in ~/dotfiles/.git/objects, one
    zlib.decompress away (git show HEAD:TOOL/hosts.yml); and the repository's other
    packages, the ones not stowed on this machine, are configuration as well."""
    tool, secret = "t" + secrets.token_hex(4), token()
    dotfiles = sandbox.home / "dotfiles"
    (dotfiles / tool).mkdir(parents=True)
    (dotfiles / tool / "hosts.yml").write_text(
        f"oauth_token: {secret}\n" if copy == "its history" else "editor: nvim\n")
    (sandbox.home / ".config").mkdir()
    if copy == "a package not linked, Stow's own layout":  # stow -d ~/dotfiles TOOL
        package = dotfiles / tool / ".config" / tool
        package.mkdir(parents=True)
        (dotfiles / tool / "hosts.yml").rename(package / "hosts.yml")
        (sandbox.home / ".config" / tool).symlink_to(f"../dotfiles/{tool}/.config/{tool}")
    else:
        (sandbox.home / ".config" / tool).symlink_to(f"../dotfiles/{tool}")
    if copy != "its history":
        aws = dotfiles / "aws" / ".aws" / "credentials"
        aws.parent.mkdir(parents=True)
        aws.write_text(f"[default]\naws_secret_access_key = {secret}\n")
    (sandbox.home / "notes.txt").write_text(NOTES)
    sandbox.chown()
    person(sandbox, "git", "init", "-q", cwd=dotfiles)
    person(sandbox, "git", "add", "-A", cwd=dotfiles)
    person(sandbox, "git", "commit", "-q", "-m", "dotfiles", cwd=dotfiles)
    if copy != "its history":
        shutil.rmtree(dotfiles / ".git")
    found = find_inside(sandbox, [secret], sandbox.home)
    need(not any(p.endswith("/hosts.yml") for p in found.get(secret, [])),
         f"the link's target itself was shown: {found}")
    assert found == {}, found


# Each: the secret's path (relative to home), what the tool writes there, and the files
# that make the layout what it is (relative path -> text).
PLACES: dict[str, tuple[str, str, dict[str, str]]] = {
    # conda's own docs ("Saving environment variables"): export MY_KEY='secret-key-value'
    # in the environment's etc/conda/activate.d/env_vars.sh; conda activate runs it.
    "conda activate.d": (
        "miniconda3/envs/ml/etc/conda/activate.d/env_vars.sh",
        "export OPENAI_API_KEY='{secret}'\n",
        {"miniconda3/bin/python3": "#!/bin/sh\n", "miniconda3/conda-meta/history": "",
         "miniconda3/envs/ml/bin/python3": "#!/bin/sh\n",
         "miniconda3/envs/ml/conda-meta/history": ""}),
    # `conda env config vars set KEY=VALUE` keeps them in the prefix's conda-meta/state
    "conda env config vars": (
        "miniconda3/envs/ml/conda-meta/state",
        '{{"env_vars": {{"DATABASE_URL": "postgresql://me:{secret}@db/x"}}}}\n',
        {"miniconda3/bin/python3": "#!/bin/sh\n", "miniconda3/conda-meta/history": "",
         "miniconda3/envs/ml/bin/python3": "#!/bin/sh\n"}),
    # AppImage's portable mode (docs.appimage.org, user-guide/portable-mode): a folder
    # APPIMAGE.home beside it is the application's $HOME, its dot files there
    "AppImage portable home": (
        "Applications/Tool-1.2.AppImage.home/.config/tool/hosts.yml",
        "oauth_token: {secret}\n",
        {"Applications/Tool-1.2.AppImage": "\x7fELF"}),
    # AppImage's portable mode's APPIMAGE.config: the application's XDG_CONFIG_HOME
    "AppImage portable config": (
        "Applications/Tool-1.2.AppImage.config/tool/credentials.json",
        '{{"refresh_token": "{secret}"}}\n',
        {"Applications/Tool-1.2.AppImage": "\x7fELF"}),
    # Tor Browser's Linux bundle keeps its Firefox profile inside its own folder
    "browser bundle profile": (
        "tor-browser/Browser/TorBrowser/Data/Browser/profile.default/logins.json",
        '{{"logins": [{{"encryptedPassword": "{secret}"}}]}}\n',
        {"tor-browser/Browser/firefox": "\x7fELF",
         "tor-browser/Browser/start-tor-browser": "#!/bin/sh\n"}),
}
PLACE_REASONS = {
    "browser bundle profile": (
        "home_config.PROFILE_PLACES is a list: a browser bundle that keeps its profile "
        "in its own folder (Tor Browser's Browser/TorBrowser/Data) is a profile without "
        "a dot nobody listed"),
}


@pytest.mark.parametrize("place", [
    pytest.param(p, marks=escaped(PLACE_REASONS[p])) if p in PLACE_REASONS else p
    for p in PLACES])
def test_a_tools_secret_where_no_dot_and_no_list_is(sandbox: Sandbox, place: str) -> None:
    """A real tool's secret at its documented place in home, with no dot on its way
    from home's top: configuration by what it is, hidden by no rule."""
    where, text, layout = PLACES[place]
    secret = token()
    for relative, content in layout.items():
        path = sandbox.home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    path = sandbox.home / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.format(secret=secret))
    (sandbox.home / "notes.txt").write_text(NOTES)
    sandbox.chown()
    found = find_inside(sandbox, [secret], sandbox.home)
    assert found == {}, found


@pytest.mark.requires_root
def test_home_reached_by_a_bind_mount(sandbox: Sandbox) -> None:
    """The person's home is also at another path that is no link: a bind mount (a
    second disk's /data/home/me bound at /home/me, a container's volume). A read grant
    of that path, of a folder holding it, or inside it, reached home's dot entries by a
    path home's rules do not follow: each is refused, by the folder's identity."""
    secret = token()
    (sandbox.home / ".config" / "tool").mkdir(parents=True)
    (sandbox.home / ".config" / "tool" / "hosts.yml").write_text(f"oauth_token: {secret}\n")
    (sandbox.home / "notes.txt").write_text(NOTES)
    other = sandbox.base / "data-home"
    other.mkdir()
    sandbox.chown()
    subprocess.run(["mount", "--bind", str(sandbox.home), str(other)], check=True)
    try:
        control = find_inside(sandbox, [secret], sandbox.home)
        need(control == {}, f"home's own grant showed the secret: {control}")
        need((other / ".config" / "tool" / "hosts.yml").read_text().endswith(f"{secret}\n"),
             "the bind mount does not show home")
        refusals = {}
        for name, spec in {"the alias": f'read = ["{other}"]',
                           "a folder above it": f'read = ["{sandbox.base}"]',
                           "inside it": f'read = ["{other}/.config"]'}.items():
            done = sandbox.run(PYTHON_INSIDE, "-c", "print('STARTED')",
                               spec=f"[files]\n{spec}\nwrite = [\".\"]\n")
            refusals[name] = (done.returncode, "by another path" in done.stderr,
                              "STARTED" in done.stdout)
    finally:
        subprocess.run(["umount", "-l", str(other)], check=False)
    assert refusals == dict.fromkeys(refusals, (125, True, False)), refusals


@pytest.mark.requires_root
def test_home_that_is_a_bind_mount_is_also_at_its_source(sandbox: Sandbox) -> None:
    """Home itself bound from elsewhere (a second disk's folder bound at /home/me):
    the source is home again, by a path no link leads to. A read grant holding the
    source, or the source itself, is refused; one beside it reads."""
    secret = token()
    source = sandbox.base / "disk" / "me"
    (source / ".config" / "tool").mkdir(parents=True)
    (source / ".config" / "tool" / "hosts.yml").write_text(f"oauth_token: {secret}\n")
    (source / "notes.txt").write_text(NOTES)
    beside = sandbox.base / "disk" / "other"
    beside.mkdir()
    sandbox.chown()
    subprocess.run(["mount", "--bind", str(source), str(sandbox.home)], check=True)
    try:
        need((sandbox.home / "notes.txt").read_text() == NOTES, "home is not the bind")
        results = {}
        for name, folder in {"the source": source, "the disk": source.parent,
                             "beside it": beside}.items():
            done = sandbox.run(PYTHON_INSIDE, "-c", "print('STARTED')",
                               spec=f'[files]\nread = ["{folder}"]\nwrite = ["."]\n')
            results[name] = (done.returncode, "by another path" in done.stderr)
    finally:
        subprocess.run(["umount", "-l", str(sandbox.home)], check=False)
    assert results == {"the source": (125, True), "the disk": (125, True),
                       "beside it": (0, False)}, results


# == 2. what runs as the person afterwards ===================================================

def _team_script(box: Sandbox, relative: str, text: str = "#!/bin/sh\n") -> Path:
    path = box.home / "work" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _bash_at_terminal(box: Sandbox) -> None:
    """The person's interactive bash at a terminal: one command, then Enter, then exit."""
    env = {"PATH": SYSTEM_PATH, "HOME": str(box.home), "LANG": "C.UTF-8",
           "TERM": "xterm", "PS1": "$ "}
    _status, output = at_terminal([*box.who.prefix, "bash", "--norc", "--noprofile", "-i"],
                                  cwd=box.home, env=env,
                                  typed=((b"$ ", b"echo FIRST\r"), (b"FIRST", b"exit\r")))
    need(b"FIRST" in output, output)


def test_a_readline_macro_in_an_included_file(sandbox: Sandbox) -> None:
    """~/.inputrc is one line, `$include ~/.config/readline/keys` (readline's manual,
    "Conditional Init Constructs"), and that file binds Enter to a macro that types a
    team script's path and accepts the line (red team 3's macro, one include away). A
    run writing ~/work appends to the script; the person's next Enter in bash at a
    terminal must run nothing planted (the control appends on the host, and it runs).
    Fixed: person_settings read an included file whose name lacks `inputrc` as a shell
    script, where `~/work/team/NAME.sh\\C-j` is the word ~/work/team/NAME.shC-j."""
    name = "r" + secrets.token_hex(3)
    shared = _team_script(sandbox, f"team/{name}.sh")
    (sandbox.home / ".inputrc").write_text("$include ~/.config/readline/keys\n")
    keys = sandbox.home / ".config" / "readline" / "keys"
    keys.parent.mkdir(parents=True)
    keys.write_text(f'"\\C-m": "\\C-e; ~/work/team/{name}.sh\\C-j"\n')
    markers(sandbox)
    sandbox.chown()
    line = f"echo readline >> {marker(sandbox, name)}\n"
    results = plant(sandbox, [("append", f"team/{name}.sh", line)],
                    cwd=sandbox.home / "work")
    _bash_at_terminal(sandbox)
    assert ran(sandbox) == [], results
    with open(shared, "a") as planted:
        planted.write(line)
    _bash_at_terminal(sandbox)
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


@pytest.mark.parametrize("written", ["as the red team wrote it", "by fish_add_path"])
def test_a_path_folder_fishs_universal_variables_add(sandbox: Sandbox, written: str
                                                      ) -> None:
    """The person ran `fish_add_path ~/work/bin` once (fish 3.2+: a universal variable,
    kept in ~/.config/fish/fish_variables); lnk starts from an agent's environment,
    whose PATH lacks it. A run writing ~/work makes ~/work/bin/git; the person's next
    `git` in fish must be the system's (the control makes it on the host). The file is
    written by hand, and by the person's real fish (its own escapes: `\\x2d`...)."""
    if shutil.which("fish") is None:
        missing("fish is not installed here")
    bin_folder = sandbox.home / "work" / "bin"
    bin_folder.mkdir(parents=True)
    variables = sandbox.home / ".config" / "fish" / "fish_variables"
    variables.parent.mkdir(parents=True)
    markers(sandbox)
    if written == "by fish_add_path":
        sandbox.chown()
        ok(host(sandbox, "fish", "-c", "fish_add_path ~/work/bin"), "fish_add_path")
        need("fish_user_paths:" in variables.read_text(), variables.read_text())
    else:
        variables.write_text("# This file contains fish universal variable definitions.\n"
                             f"# VERSION: 3.0\nSETUVAR fish_user_paths:{bin_folder}\n")
    sandbox.chown()
    name = "fish-git"
    # Held by refusing the grant: ~/work holds a folder of the person's PATH in fish, a
    # holder (fish_variables.py, home_places.py), as a launch PATH's folder is.
    results = plant_or_refused(sandbox, [("make", "bin/git", payload(sandbox, name))],
                               refusal="a folder of your PATH in fish",
                               cwd=sandbox.home / "work")

    def person() -> None:
        ok(host(sandbox, "fish", "-c", "git --version", cwd=sandbox.base), "fish")

    person()
    assert ran(sandbox) == [], results
    (bin_folder / "git").write_text(payload(sandbox, name))
    (bin_folder / "git").chmod(0o755)
    sandbox.chown()
    person()
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


# pre-commit's own hook template (pre_commit/resources/hook-tmpl), as `pre-commit
# install` writes it with pre-commit installed in the project's virtual environment.
PRE_COMMIT_STUB = """#!/usr/bin/env bash
# File generated by pre-commit: https://pre-commit.com
# ID: 138fd403232d2ddd5efb44317e38bf03

# start templated
INSTALL_PYTHON={python}
ARGS=(hook-impl --config=.pre-commit-config.yaml --hook-type=pre-commit)
# end templated

HERE="$(cd "$(dirname "$0")" && pwd)"
ARGS+=(--hook-dir "$HERE" -- "$@")

if [ -x "$INSTALL_PYTHON" ]; then
    exec "$INSTALL_PYTHON" -mpre_commit "${{ARGS[@]}}"
elif command -v pre-commit > /dev/null; then
    exec pre-commit "${{ARGS[@]}}"
else
    echo '`pre-commit` not found.  Did you forget to activate your virtualenv?' 1>&2
    exit 1
fi
"""


def _work_repository(box: Sandbox) -> Path:
    work = box.home / "work"
    work.mkdir(exist_ok=True)
    (work / "README").write_text("the project\n")
    box.chown()
    person_git(box, work, "init", "-q", "-b", "main")
    person_git(box, work, "add", "README")
    person_git(box, work, "commit", "-q", "-m", "first")
    return work


@pytest.mark.parametrize("hook", ["pre-commit in the project's venv",
                                  "a hook delegating to the work tree"])
def test_what_a_held_hook_runs_from_the_work_tree(sandbox: Sandbox, hook: str) -> None:
    """The repository's hook is held; what it runs on the person's next `git commit`
    is a file of the work tree the sandbox writes. The control makes the same change on
    the host, and the commit runs it. Fixed (hook_text.py): dotfiles.hook_managers read
    a hook for a known manager's stub only; each hook is now read as a script from the
    top, so `exec ./scripts/pre-commit.sh` keeps the script read-only, and the
    INSTALL_PYTHON of pre-commit's stub, a program of the project's .venv, keeps that
    environment read-only whole (a .pth in its site-packages ran at its start)."""
    work = _work_repository(sandbox)
    name = "h" + secrets.token_hex(3)
    markers(sandbox)
    line = f"echo {name} >> {marker(sandbox, name)}\n"
    if hook == "a hook delegating to the work tree":
        _team_script(sandbox, "scripts/pre-commit.sh", "#!/bin/sh\n")
        stub = "#!/bin/sh\nexec ./scripts/pre-commit.sh \"$@\"\n"
        target, text = "scripts/pre-commit.sh", line
    else:
        person_git(sandbox, work, "status")  # the person's own python makes the venv
        done = host(sandbox, "/usr/bin/python3", "-m", "venv", str(work / ".venv"))
        ok(done, "python3 -m venv")
        site = next((work / ".venv" / "lib").glob("python3*/site-packages"))
        (site / "pre_commit").mkdir()
        (site / "pre_commit" / "__main__.py").write_text("raise SystemExit(0)\n")
        (work / ".pre-commit-config.yaml").write_text("repos: []\n")
        stub = PRE_COMMIT_STUB.format(python=work / ".venv" / "bin" / "python3")
        target = str((site / "zz_team.pth").relative_to(work))
        text = f"import os; os.system({line.strip()!r})\n"
    (work / ".git" / "hooks" / "pre-commit").write_text(stub)
    (work / ".git" / "hooks" / "pre-commit").chmod(0o755)
    sandbox.chown()
    results = plant(sandbox, [("append" if hook.startswith("a hook") else "write", target,
                               text)], cwd=work)

    def person() -> None:
        person_git(sandbox, work, "commit", "-q", "--allow-empty", "-m", "next")

    person()
    assert ran(sandbox) == [], results
    with open(work / target, "a") as planted:
        planted.write(text)
    person()
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


@escaped("below_top's walk stops at MAX_FOLDERS (256) and only `describe` and the "
         "question name what it did not list; the default spec is never asked about, and "
         "the launch says only the socket walk's stop (\"a socket bound in this network "
         "namespace there is hidden\"): the person's repository past the bound is written")
def test_a_repository_past_the_walks_bound_under_the_default_spec(sandbox: Sandbox) -> None:
    """`cd ~/src && lnk sandbox run -- ...` with the default spec, which is never asked
    about: ~/src holds 300 folders of the person's and, listed last, their repository
    zz-app. The launch walk stops at 256 folders; `describe` names what it did not list,
    but nothing is asked or said on this run. The sandbox writes zz-app/.git/hooks; the
    person's next `git checkout` there must run nothing planted, or the launch must say
    where the walk stopped."""
    src = sandbox.home / "src"
    for index in range(300):
        (src / f"p{index:03d}").mkdir(parents=True)
    app = repository(sandbox, src / "zz-app")
    markers(sandbox)
    sandbox.chown()
    name = "walk"
    done = sandbox.run(PYTHON_INSIDE, "-c", SCRIPT, json.dumps(
        [["make", "zz-app/.git/hooks/post-checkout", payload(sandbox, name)]]), cwd=src)
    lines = done.stdout.splitlines()
    need(lines and lines[0].startswith("STARTED "), done.stderr)
    said = done.stderr
    person_git(sandbox, app, "checkout", "-q", "-b", "side")
    assert ran(sandbox) == [], (lines, said)


# == 3. this host's addresses through the proxy ==============================================

HOST_PORT = 8090
FAR_PORT = 8080
ANYIP_V4, ANYIP_V6 = "198.51.100.9", "2001:db8:77::9"
NET_SPEC = '[network]\nmode = "proxy"\nallow = ["*.allowed.test"]\n'


def test_addresses_a_local_route_delivers_here(sandbox: Sandbox) -> None:
    """Held or not: AnyIP, a `local` route for a whole range (`ip route add local
    198.51.100.0/24 dev lo`, and IPv6's), which Linux delivers to the host's own
    sockets though no interface holds the address (used to serve many addresses, or a
    prefix, from one host). An allowed name answering one of them must not reach the
    host's service bound to every address (the proof: the host's own curl does)."""
    from attacks.test_network_attacks import ATTACKER, LOG_VARIABLE, _results
    from support.lab import FAR_V4
    from support.netlab import Lab

    log = sandbox.base / "resolver.log"
    log.write_text("")
    sandbox.chown(log)
    zone = {"anyip.allowed.test.": [[ANYIP_V4]], "anyip6.allowed.test.": [[ANYIP_V6]],
            "far.allowed.test.": [[FAR_V4]]}
    lab = Lab(sandbox.base, zone, [], port=FAR_PORT, host_port=HOST_PORT)
    supervised = lab.supervised(sandbox)
    proof = sandbox.base / "anyip-proof"
    rule = (f"ip route add local 198.51.100.0/24 dev lo && ip -6 route add local "
            f"2001:db8:77::/64 dev lo && curl -s --max-time 10 "
            f"http://{ANYIP_V4}:{HOST_PORT}/proof > {proof} && curl -s --max-time 10 "
            f"'http://[{ANYIP_V6}]:{HOST_PORT}/proof6' >> {proof}; exec \"$@\"")
    prefix = supervised.who.prefix
    split = prefix.index("--") + 1
    import dataclasses
    who = dataclasses.replace(supervised.who, prefix=(*prefix[:split], "sh", "-c", rule,
                                                      "sh", *prefix[split:]))
    supervised = dataclasses.replace(supervised, who=who)
    attacks: list[dict[str, object]] = [
        {"op": "http", "send": f"GET http://far.allowed.test:{FAR_PORT}/far HTTP/1.1\r\n"
                               "Host: far.allowed.test\r\n\r\n"}]
    for name in ("anyip", "anyip6"):
        attacks.append({"op": "http", "send": f"GET http://{name}.allowed.test:{HOST_PORT}"
                        f"/{name} HTTP/1.1\r\nHost: {name}.allowed.test\r\n\r\n"})
        attacks.append({"op": "socks", "atyp": 3, "host": f"{name}.allowed.test",
                        "port": HOST_PORT, "send": f"GET /{name}-socks HTTP/1.0\r\n\r\n"})
    done = supervised.lnk("run", "--", PYTHON_INSIDE, "-c", ATTACKER, json.dumps(attacks),
                          spec=NET_SPEC, env={LOG_VARIABLE: str(log)}, timeout=180)
    results = _results(done.stdout, len(attacks), done.stderr)
    need(proof.read_text().count("served by this host") == 2, proof.read_text())
    need(results[0] == {"status": "HTTP/1.1 200 OK", "body": f"served by {FAR_V4}\n"},
         results[0])
    served = sorted(path for _, _, path in lab.log()["requests"] if path != "/far")
    assert [p for p in served if "proof" not in p] == [], (served, results)


# == 4. the terminal ==========================================================================

ESCAPES = "\x1b]0;PWNED\x07\x1b[2J"


def test_the_folder_allow_asks_for_reaches_the_terminal_escaped(sandbox: Sandbox) -> None:
    """A run makes a folder whose name is escape sequences (a window title, a screen
    clear) and points `sub`, a folder of the project the person uses, at it. The person
    then asks, in `sub`, `lnk sandbox allow --spec FILE` at a terminal: what lnk writes
    there must hold no raw escape (the kernel's working directory is the real path).
    Fixed: api.allow wrote that folder raw, the rest of its question escaped."""
    from support.processes import in_terminal
    from support.sandbox import LNK

    (sandbox.project / "sub").mkdir()
    sandbox.chown()
    done = sandbox.run(PYTHON_INSIDE, "-c", "import os, sys; print('STARTED'); "
                       "os.rmdir('sub'); os.mkdir(sys.argv[1]); os.symlink(sys.argv[1], 'sub')",
                       ESCAPES)
    need(done.stdout.startswith("STARTED") and done.returncode == 0, done.stderr)
    spec = sandbox.write_spec('[files]\nwrite = ["."]\n', "allow.toml")
    env = {**sandbox.env(), "TERM": "xterm"}
    shown = in_terminal([*sandbox.who.prefix, LNK, "sandbox", "allow", "--spec", str(spec)],
                        cwd=sandbox.project / "sub", env=env,
                        typed=((b"[y/N] ", b"n\r"),))
    need(b"[y/N]" in shown.output, shown.output)
    assert b"\x1b]0;PWNED" not in shown.output and b"\x1b[2J" not in shown.output, \
        shown.output


def test_every_activation_script_of_a_venv_is_held(sandbox: Sandbox) -> None:
    """The project's .venv, made by `python3 -m venv` before the run: each activation
    script it wrote (activate, activate.csh, activate.fish, and PowerShell's
    Activate.ps1, capitalized) is what the person's shell sources to use it. A run
    writing the project appends to each; every one must stay as it was (PowerShell is
    in no Debian archive, so the harm judged is the file pwsh would source). Fixed:
    below_top.activation_scripts matched `activate*` in lower case only, and
    Activate.ps1 was written."""
    venv = sandbox.project / ".venv"
    ok(host(sandbox, "/usr/bin/python3", "-m", "venv", "--without-pip", str(venv)),
       "python3 -m venv")
    scripts = sorted(p.name for p in (venv / "bin").iterdir()
                     if p.name.lower().startswith("activate"))
    need("Activate.ps1" in scripts and "activate" in scripts, scripts)
    before = {name: (venv / "bin" / name).read_text() for name in scripts}
    sandbox.chown()
    results = plant(sandbox, [("append", f".venv/bin/{name}", "\n# planted\n")
                              for name in scripts])
    after = {name: (venv / "bin" / name).read_text() for name in scripts}
    assert after == before, results


def test_what_the_persons_global_hook_runs_from_a_grant(sandbox: Sandbox) -> None:
    """The person's ~/.gitconfig sets `core.hooksPath = ~/.config/git/hooks` (hooks for
    every repository); their pre-commit there runs a team's ~/work/team/lint.sh. A run
    writing ~/work appends to it; the person's next commit in any repository must run
    nothing planted (the control appends on the host, and the commit runs it). Fixed:
    person_settings.value_paths read core.hooksPath as a folder to hold, not what the
    hooks in it name; settings_named now reads each as a script (hook_text.py)."""
    shared = _team_script(sandbox, "team/lint.sh")
    hooks = sandbox.home / ".config" / "git" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "pre-commit").write_text("#!/bin/sh\n~/work/team/lint.sh\n")
    (hooks / "pre-commit").chmod(0o755)
    (sandbox.home / ".gitconfig").write_text("[core]\n\thooksPath = ~/.config/git/hooks\n")
    markers(sandbox)
    sandbox.chown()
    line = f"echo lint >> {marker(sandbox, 'lint')}\n"
    results = plant(sandbox, [("append", "team/lint.sh", line)], cwd=sandbox.home / "work")
    other = repository(sandbox, sandbox.base / "elsewhere")

    def person() -> None:
        person_git(sandbox, other, "commit", "-q", "--allow-empty", "-m", "next")

    person()
    assert ran(sandbox) == [], results
    with open(shared, "a") as planted:
        planted.write(line)
    person()
    need(ran(sandbox) == ["lint"], f"the control did not run: {ran(sandbox)}")


def test_a_global_hook_chaining_to_the_repositorys_own_starts(sandbox: Sandbox) -> None:
    """The control of the rule above: the person's global pre-commit runs the
    repository's own hook, found as hooks find git's folders (`$(git rev-parse
    --git-dir)`, `$GIT_DIR`). The launch writing the repository starts (no refusal:
    that is the held .git), the repository's hook stays as it was, and the person's
    next commit runs it through the chain."""
    hooks = sandbox.home / ".config" / "git" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "pre-commit").write_text(
        '#!/bin/sh\nh="$(git rev-parse --git-dir)/hooks/$(basename "$0")"\n'
        '[ -f "$GIT_DIR/hooks/pre-commit.local" ] && . "$GIT_DIR/hooks/pre-commit.local"\n'
        '[ -x "$h" ] && exec "$h" "$@"\nexit 0\n')
    (hooks / "pre-commit").chmod(0o755)
    (sandbox.home / ".gitconfig").write_text("[core]\n\thooksPath = ~/.config/git/hooks\n")
    work = _work_repository(sandbox)
    markers(sandbox)
    local = work / ".git" / "hooks" / "pre-commit"
    local.write_text(f"#!/bin/sh\necho local >> {marker(sandbox, 'local')}\n")
    local.chmod(0o755)
    sandbox.chown()
    results = plant(sandbox, [("append", ".git/hooks/pre-commit",
                               f"echo planted >> {marker(sandbox, 'planted')}\n")], cwd=work)
    person_git(sandbox, work, "commit", "-q", "--allow-empty", "-m", "next")
    assert ran(sandbox) == ["local"], results
    assert (marker_path := Path(marker(sandbox, "local"))).read_text() == "local\n", \
        marker_path


def test_a_global_hook_lnk_cannot_bound_refuses_a_writing_launch(sandbox: Sandbox) -> None:
    """The person's global pre-commit sources a file whose folder only the running
    shell knows (`. "$(cat ~/.team-hooks)/pre-commit"`): it may be any file a run
    writes, so a launch that writes anything is refused (125), naming the hook's line;
    nothing starts inside."""
    hooks = sandbox.home / ".config" / "git" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "pre-commit").write_text('#!/bin/sh\n. "$(cat ~/.team-hooks)/pre-commit"\n')
    (sandbox.home / ".gitconfig").write_text("[core]\n\thooksPath = ~/.config/git/hooks\n")
    work = sandbox.home / "work"
    work.mkdir()
    sandbox.chown()
    results = plant_or_refused(sandbox, [("make", "x", "planted\n")], cwd=work,
                               refusal="~/.config/git/hooks/pre-commit line 2")
    assert "refused" in results, results
    assert not (work / "x").exists()
