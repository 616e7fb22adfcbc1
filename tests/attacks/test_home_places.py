"""Home's places reached another way than by their names: through the links of a
dotfiles repository (GNU Stow, yadm, rcm), and through what PATH's commands run.

Each attack plants from inside a real sandbox (root mode and the unprivileged user),
then runs the person's real tools outside as the same user (bash -ic, git, nvim, the
python a PATH command starts) and shows nothing planted ran; a control runs the same
plants where the spec opens them (files.write_dot_files, or PATH without the command),
and they do run, so the tests pass because the sandbox refused, not because the plants
or the triggers were broken. Grants that would reach a place whole are refused before
anything starts: those tests show the command never started and the exit is 125.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
from pathlib import Path

import pytest

from support.actions import SCRIPT, key, name
from support.git_host import attack, git_env, markers, ran
from support.sandbox import PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

OK, EROFS = 0, errno.EROFS
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def host(box: Sandbox, *command: str, cwd: Path | None = None,
         path: str = SYSTEM_PATH) -> subprocess.CompletedProcess[str]:
    """A real program on the host, as the sandbox's user, in its home."""
    env = {"PATH": path, "HOME": str(box.home), "LANG": "C.UTF-8", "TERM": "dumb"}
    return subprocess.run([*box.who.prefix, *command], cwd=cwd or box.home, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)


def mark(box: Sandbox, name: str) -> str:
    return f"{box.base}/markers/{name}"


# -- a dotfiles repository linked into home -----------------------------------------------------

def _stow(box: Sandbox) -> Path:
    """~/.bashrc, ~/.config/git and neovim's data folder kept in ~/dotfiles, linked into
    home as GNU Stow does."""
    dotfiles = box.home / "dotfiles"
    (dotfiles / "git").mkdir(parents=True)
    (dotfiles / "nvim-data" / "site").mkdir(parents=True)
    (dotfiles / "bashrc").write_text("# the person's bashrc\n")
    (dotfiles / "git" / "config").write_text("[user]\n\tname = Person\n")
    (box.home / ".config").mkdir()
    (box.home / ".local" / "share").mkdir(parents=True)
    (box.home / ".bashrc").symlink_to("dotfiles/bashrc")
    (box.home / ".config" / "git").symlink_to("../dotfiles/git")
    (box.home / ".local" / "share" / "nvim").symlink_to("../../dotfiles/nvim-data")
    markers(box)
    box.chown()
    return dotfiles


def _dotfile_plants(box: Sandbox, expected: int) -> dict[tuple[str, ...], int | str]:
    evil = f"#!/bin/sh\necho git >> {mark(box, 'git-fsmonitor')}\nexit 0\n"
    fsmonitor = f'[core]\n\tfsmonitor = "{box.home}/dotfiles/evil.sh"\n'
    lua = f'vim.fn.writefile({{}}, "{mark(box, "nvim-site-plugin")}")\n'
    return {
        ("make", "evil.sh", evil): OK,  # the repository's own files stay writable
        ("append", "bashrc", f"echo bash >> {mark(box, 'bashrc')}\n"): expected,
        ("append", "git/config", fsmonitor): expected,
        ("makedirs", "nvim-data/site/plugin"): expected,
        ("write", "nvim-data/site/plugin/zz.lua", lua): errno.ENOENT if expected else OK,
    }


def _run_the_persons_tools(box: Sandbox) -> None:
    host(box, "bash", "-ic", "true")
    repo = box.base / "other"
    repo.mkdir()
    box.chown(repo)
    for args in (("init", "-q"), ("status",)):
        subprocess.run([*box.who.prefix, "git", *args], cwd=repo, env=git_env(box),
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    done = host(box, "nvim", "--headless", "+qa")
    assert done.returncode == 0, done.stderr


def test_a_dotfiles_repository_keeps_what_runs_read_only(sandbox: Sandbox) -> None:
    """write = ["~/dotfiles"], where ~/.bashrc, ~/.config/git and ~/.local/share/nvim
    lead: the grant is accepted, and each stays read-only in it."""
    dotfiles = _stow(sandbox)
    attack(sandbox, _dotfile_plants(sandbox, EROFS), spec='files.write = ["~/dotfiles"]\n',
           cwd=dotfiles)
    _run_the_persons_tools(sandbox)
    assert ran(sandbox) == []
    assert (dotfiles / "bashrc").read_text() == "# the person's bashrc\n"
    assert (dotfiles / "git" / "config").read_text() == "[user]\n\tname = Person\n"


def test_with_write_dot_files_the_dotfiles_plants_run(sandbox: Sandbox) -> None:
    """The control: the same plants with the folder's protections opened run as the
    person in bash, git and nvim."""
    dotfiles = _stow(sandbox)
    attack(sandbox, _dotfile_plants(sandbox, OK),
           spec='files.write = ["~/dotfiles"]\nfiles.write_dot_files = ["~/dotfiles"]\n',
           cwd=dotfiles)
    _run_the_persons_tools(sandbox)
    assert ran(sandbox) == ["bashrc", "git-fsmonitor", "nvim-site-plugin"]


def _refused(box: Sandbox, spec: str, path: str = SYSTEM_PATH) -> str:
    done = box.run("/bin/sh", "-c", "echo STARTED", spec=spec, env={"PATH": path})
    assert done.returncode == 125, done
    assert "STARTED" not in done.stdout
    assert "files.write[0]" in done.stderr  # the key, with the file and line
    return done.stderr


def test_a_link_on_the_way_in_the_grant_is_refused(sandbox: Sandbox) -> None:
    """~/.bashrc -> dotfiles/bashrc -> elsewhere: the second link lies in the grant,
    and a sandbox could point it at a bashrc of its own."""
    dotfiles = _stow(sandbox)
    (dotfiles / "bashrc").rename(sandbox.home / "bashrc.real")
    (dotfiles / "bashrc").symlink_to(f"{sandbox.home}/bashrc.real")
    sandbox.chown()
    stderr = _refused(sandbox, 'files.write = ["~/dotfiles"]\n')
    assert "a link on the way from ~/.bashrc" in stderr
    assert "replace the link" in stderr


def test_a_path_folder_behind_a_link_is_refused(sandbox: Sandbox) -> None:
    """~/bin -> dotfiles/bin on PATH: any file the sandbox put there would be a command
    the person types."""
    dotfiles = _stow(sandbox)
    (dotfiles / "bin").mkdir()
    (sandbox.home / "bin").symlink_to("dotfiles/bin")
    sandbox.chown()
    stderr = _refused(sandbox, 'files.write = ["~/dotfiles"]\n',
                      path=f"{sandbox.home}/bin:{SYSTEM_PATH}")
    assert f"{dotfiles}/bin, where ~/bin leads" in stderr
    assert f"does not hold {dotfiles}/bin" in stderr


# -- what PATH's commands run --------------------------------------------------------------------

def _venv_tool(box: Sandbox) -> Path:
    """A tool installed in a virtual environment, its entry point linked into
    ~/.local/bin: pipx's and uv's layout (the script's #! names the environment's
    python, which reads the environment's site-packages)."""
    venv = box.home / "apps" / "venv"
    subprocess.run([PYTHON_INSIDE, "-m", "venv", "--without-pip", str(venv)], check=True,
                   capture_output=True, timeout=60)
    entry = venv / "bin" / "mytool"
    entry.write_text(f"#!{venv}/bin/python\nimport sys\nsys.exit(0)\n")
    entry.chmod(0o755)
    (box.home / ".local" / "bin").mkdir(parents=True)
    (box.home / ".local" / "bin" / "mytool").symlink_to(entry)
    markers(box)
    box.chown()
    version = subprocess.run([PYTHON_INSIDE, "-c", "import sys; print("
                              "f'python{sys.version_info[0]}.{sys.version_info[1]}')"],
                             capture_output=True, text=True, check=True).stdout.strip()
    return venv / "lib" / version / "site-packages"


def test_what_a_path_command_runs_is_read_only(sandbox: Sandbox) -> None:
    """write = ["~/apps"], which holds the environment ~/.local/bin/mytool runs: a .pth
    planted in its site-packages would run in every start of the tool. Read-only."""
    site = _venv_tool(sandbox)
    pth = f"import os; open({mark(sandbox, 'pth')!r}, 'w')\n"
    plants: dict[tuple[str, ...], int | str] = {
        ("write", f"{site.relative_to(sandbox.home / 'apps')}/zz.pth", pth): EROFS,
        ("write", "notes.txt", "the folder stays writable\n"): OK,
    }
    path = f"{sandbox.home}/.local/bin:{SYSTEM_PATH}"
    _attack_with_path(sandbox, plants, path)  # the grant is accepted: the plants ran
    done = host(sandbox, "mytool", path=path)
    assert done.returncode == 0, done.stderr
    assert ran(sandbox) == []


def test_without_the_command_on_path_the_pth_plant_runs(sandbox: Sandbox) -> None:
    """The control: with PATH not naming ~/.local/bin, the environment is nobody's
    command, the same plant is written, and the tool then runs it."""
    site = _venv_tool(sandbox)
    pth = f"import os; open({mark(sandbox, 'pth')!r}, 'w')\n"
    _attack_with_path(sandbox, {
        ("write", f"{site.relative_to(sandbox.home / 'apps')}/zz.pth", pth): OK,
    }, SYSTEM_PATH)
    host(sandbox, "mytool", path=f"{sandbox.home}/.local/bin:{SYSTEM_PATH}")
    assert ran(sandbox) == ["pth"]


def _attack_with_path(box: Sandbox, plants: dict[tuple[str, ...], int | str],
                      path: str) -> None:
    """`attack` as lnk runs with the person's PATH (which decides what their commands
    run), for a spec writing ~/apps."""
    done = box.run(PYTHON_INSIDE, "-c", SCRIPT, json.dumps([list(a) for a in plants]),
                   spec='files.write = ["~/apps"]\n', cwd=box.home / "apps",
                   env={"PATH": path})
    lines = done.stdout.splitlines()
    assert lines and lines[0].startswith("STARTED"), done
    results = json.loads(lines[-1].removeprefix("RESULTS "))
    assert results == {key(a): name(c) for a, c in plants.items()}, results


@pytest.mark.parametrize("grant", [
    "~/.local/lib",                 # pip install --user's site-packages: a .pth runs
    "~/.pyenv/libexec",             # what ~/.pyenv/bin/pyenv on PATH runs
    "~/.pyenv/versions",            # every python the shims start
    "~/.rustup/toolchains",         # what the proxies in ~/.cargo/bin run
    "~/.cache",                     # p10k's instant prompt, sourced by .zshrc
    "~/.cache/pre-commit",          # hook environments, run on every git commit
    "~/.npm/_npx",                  # npx runs what it installed there
    "~/.local/share/nvim",          # site/plugin runs in every nvim
    "~/.config/opencode",           # OpenCode's global plugins
    "~/.config/opencode/plugins",
    "~/.claude/skills",             # inside an agent's global folder
])
def test_a_grant_of_what_the_persons_tools_run_is_refused(sandbox: Sandbox,
                                                          grant: str) -> None:
    (sandbox.home / grant.removeprefix("~/")).mkdir(parents=True)
    (sandbox.home / ".pyenv" / "bin").mkdir(parents=True, exist_ok=True)
    sandbox.chown()
    stderr = _refused(sandbox, f'[files]\nwrite = ["{grant}"]\n',
                      path=f"{sandbox.home}/.pyenv/bin:{SYSTEM_PATH}")
    assert "could change what runs as you" in stderr


def test_npm_s_cache_is_granted_with_npx_s_packages_read_only(sandbox: Sandbox) -> None:
    """write = ["~/.npm"] (npm install's cache): what npx installed and runs again from
    ~/.npm/_npx stays as it was; npm's own cache is written."""
    cli = sandbox.home / ".npm" / "_npx" / "e3e1d528ee105f80" / "node_modules" / "cowsay"
    cli.mkdir(parents=True)
    (cli / "cli.js").write_text("#!/usr/bin/env node\nconsole.log('moo')\n")
    sandbox.chown()
    attack(sandbox, {
        ("append", "_npx/e3e1d528ee105f80/node_modules/cowsay/cli.js",
         "require('fs').writeFileSync('/tmp/x', '')\n"): EROFS,
        ("mkdir", "_npx/0000000000000000"): EROFS,
        ("makedirs", "_cacache/index-v5"): OK,
    }, spec='files.write = ["~/.npm"]\n', cwd=sandbox.home / ".npm")
    assert (cli / "cli.js").read_text() == "#!/usr/bin/env node\nconsole.log('moo')\n"


def test_one_tools_cache_folder_is_granted(sandbox: Sandbox) -> None:
    (sandbox.home / ".cache" / "pip").mkdir(parents=True)
    sandbox.chown()
    done = sandbox.run("/bin/sh", "-c", "echo STARTED; echo x > ~/.cache/pip/wheel",
                       spec='files.write = ["~/.cache/pip"]\n')
    assert done.returncode == 0 and done.stdout.startswith("STARTED"), done
    assert not os.path.lexists(sandbox.home / ".cache" / "p10k-instant-prompt-x.zsh")


def test_a_folder_of_pythonpath_is_not_written(sandbox: Sandbox) -> None:
    """PYTHONPATH names the project's lib/: a json.py the sandbox put there would be
    imported before the standard library's by every Python program the person runs,
    in any folder. The write grant holding it is refused, naming the variable; the
    person's python afterwards imports the standard json. The control: off PYTHONPATH,
    the same spec runs."""
    lib = sandbox.project / "lib"
    lib.mkdir()
    sandbox.chown()
    plant = f"echo STARTED; echo 'raise SystemExit(\"PLANTED\")' > {lib}/json.py"
    done = sandbox.run("/bin/sh", "-c", plant, spec='files.write = ["."]\n',
                       env={"PYTHONPATH": str(lib)})
    assert done.returncode == 125 and "STARTED" not in done.stdout, done
    assert "a folder of your PYTHONPATH" in done.stderr, done.stderr
    assert "run lnk with PYTHONPATH not naming" in done.stderr
    assert not (lib / "json.py").exists()
    person = subprocess.run([*sandbox.who.prefix, "/usr/bin/python3", "-c",
                             "import json; print(json.dumps([1]))"],
                            env={"PYTHONPATH": str(lib), "PATH": SYSTEM_PATH},
                            capture_output=True, text=True, check=True, cwd="/")
    assert person.stdout == "[1]\n"
    done = sandbox.run("/bin/sh", "-c", "echo STARTED", spec='files.write = ["."]\n')
    assert done.returncode == 0 and done.stdout == "STARTED\n", done


def test_an_editable_installs_folder_and_bash_env_are_not_written(sandbox: Sandbox) -> None:
    """A .pth file of the person's user site-packages puts the project's src/ on every
    Python's path (pip install --user -e .): a usercustomize.py there would run at the
    person's every python (found by a red team). The grant holding src/ is refused; with
    no .pth, the run goes on and BASH_ENV's file, in the project, stays read-only: the
    person's every `bash -c` runs it."""
    src = sandbox.project / "src"
    src.mkdir()
    site = sandbox.home / ".local/lib/python3.11/site-packages"
    site.mkdir(parents=True)
    (site / "proj.pth").write_text(f"{src}\n")
    sandbox.chown()
    plant = f"echo STARTED; echo 'raise SystemExit(\"PLANTED\")' > {src}/usercustomize.py"
    done = sandbox.run("/bin/sh", "-c", plant, spec='files.write = ["."]\n')
    assert done.returncode == 125 and "STARTED" not in done.stdout, done
    assert "proj.pth puts on Python's path" in done.stderr, done.stderr
    assert not (src / "usercustomize.py").exists()
    (site / "proj.pth").unlink()
    env_sh = sandbox.project / "env.sh"
    env_sh.write_text("true\n")
    sandbox.chown()
    done = sandbox.run("/bin/sh", "-c", f"echo STARTED; echo 'echo PLANTED' >> {env_sh}; "
                       "echo wrote=$?", spec='files.write = ["."]\n',
                       env={"BASH_ENV": str(env_sh)})
    assert done.stdout.splitlines() == ["STARTED", "wrote=2"], done
    person = subprocess.run([*sandbox.who.prefix, "/bin/bash", "-c", "echo ran"],
                            env={"BASH_ENV": str(env_sh), "PATH": SYSTEM_PATH},
                            capture_output=True, text=True, check=True, cwd="/")
    assert person.stdout == "ran\n"


def test_a_relative_pythonpath_entry_is_said_at_launch(sandbox: Sandbox) -> None:
    """PYTHONPATH=src names the src/ of wherever a program starts: no folder can be held
    for it, so the launch says so on stderr, as for PATH's relative entries, and runs."""
    done = sandbox.run("/bin/sh", "-c", "echo STARTED", spec='files.write = ["."]\n',
                       env={"PYTHONPATH": "src"})
    assert done.returncode == 0 and done.stdout == "STARTED\n", done
    assert "PYTHONPATH (src) name folders of the working directory" in done.stderr
    done = sandbox.run("/bin/sh", "-c", "echo STARTED", spec='files.write = ["."]\n')
    assert "PYTHONPATH" not in done.stderr  # the control: not set, nothing said
