"""A command confined by bubblewrap on the default spec and simple specs.

Each test runs a real program in a real sandbox, as root (root mode) and as the
unprivileged test user, and first proves the program started inside (the probe's
STARTED line) before counting a refusal.
"""

from __future__ import annotations

import errno
import os
import uuid
from pathlib import Path

import pytest

from support import capabilities as caps
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]


def test_default_spec_writes_only_the_working_directory(sandbox: Sandbox) -> None:
    sandbox.probe("write", str(sandbox.project / "made-inside")).expect(0)
    assert (sandbox.project / "made-inside").read_text() == "written by the probe\n"
    (sandbox.home / "notes").write_text("mine")
    sandbox.probe("write", str(sandbox.home / "notes")).expect(errno.ENOENT)
    sandbox.probe("write", "/usr/lnk-probe").expect(errno.EROFS)
    sandbox.probe("write", "/etc/lnk-probe").expect(errno.EROFS)
    sandbox.probe("write", "/lnk-probe").expect(errno.EROFS)
    assert (sandbox.home / "notes").read_text() == "mine"
    assert not Path("/usr/lnk-probe").exists()


def test_tmp_inside_is_fresh_and_never_the_hosts(sandbox: Sandbox) -> None:
    marker = f"lnk-host-{uuid.uuid4().hex}"
    host_file = Path("/tmp") / marker
    host_file.write_text("host")
    try:
        sandbox.probe("read", str(host_file)).expect(errno.ENOENT)
        inside = Path("/tmp") / f"lnk-inside-{uuid.uuid4().hex}"
        sandbox.probe("write", str(inside)).expect(0)
        assert not inside.exists()
    finally:
        host_file.unlink()


def test_home_files_and_lnk_home_are_not_visible(sandbox: Sandbox) -> None:
    sandbox.lnk_home.mkdir(mode=0o700)
    (sandbox.lnk_home / "secret-state").write_text("secret")
    (sandbox.home / "diary").write_text("secret")
    sandbox.chown()
    sandbox.probe("list", str(sandbox.home)).expect(errno.ENOENT)
    sandbox.probe("read", str(sandbox.lnk_home / "secret-state")).expect(errno.ENOENT)
    spec = 'files.read = ["~"]\nfiles.write = ["."]\n'
    sandbox.probe("read", str(sandbox.home / "diary"), spec=spec).expect(0)
    # $LNK_HOME exists on the host (with secret-state); inside, a dot entry of home, it
    # is not there at all (hidden with the rest of home's configuration).
    sandbox.probe("list", str(sandbox.lnk_home), spec=spec).expect(errno.ENOENT)
    sandbox.probe("read", str(sandbox.lnk_home / "secret-state"), spec=spec).expect(errno.ENOENT)
    # Set outside home, under a read grant of its folder, it is an empty folder inside.
    elsewhere = sandbox.base / "lnk-state"
    elsewhere.mkdir(mode=0o700)
    (elsewhere / "secret-state").write_text("secret")
    sandbox.chown()
    env = {"LNK_HOME": str(elsewhere)}
    base = f'files.read = ["{sandbox.base}"]\nfiles.write = ["."]\n'
    result = sandbox.probe("list", str(elsewhere), spec=base, env=env).expect(0)
    assert [x for x in result.stdout.splitlines() if x.startswith("LIST")] == ["LIST "]
    assert "secret-state" not in result.stdout


def test_hidden_folder_is_closed_but_for_grants_inside(sandbox: Sandbox) -> None:
    """A spec's hide closes a folder it would see, but for its grants inside. In a folder
    of home without a dot: home's dot entries are hidden under a read grant of home
    anyway (test_home_config.py)."""
    ssh = sandbox.home / "work" / "keys"
    ssh.mkdir(parents=True)
    (ssh / "id_ed25519").write_text("PRIVATE KEY")
    cache = sandbox.home / "work" / "cache"
    (cache / "tool").mkdir(parents=True)
    (cache / "other").mkdir()
    (cache / "other" / "token").write_text("token")
    sandbox.chown()
    spec = (
        'files.read = ["~"]\n'
        'files.write = [".", "~/work/cache/tool"]\n'
        'files.hide = ["~/work/keys", "~/work/cache"]\n'
    )
    sandbox.probe("read", str(ssh / "id_ed25519"),
                  spec='files.read = ["~"]\nfiles.write = ["."]\n').expect(0)
    sandbox.probe("read", str(ssh / "id_ed25519"), spec=spec).expect(errno.ENOENT)
    sandbox.probe("read", str(cache / "other" / "token"), spec=spec).expect(errno.ENOENT)
    sandbox.probe("write", str(cache / "tool" / "entry"), spec=spec).expect(0)
    assert (cache / "tool" / "entry").exists()
    sandbox.probe("write", str(ssh / "authorized_keys"), spec=spec).expect(errno.EROFS)


def test_credentials_are_hidden_by_default_under_a_home_read_grant(sandbox: Sandbox) -> None:
    (sandbox.home / ".ssh").mkdir()
    (sandbox.home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    (sandbox.home / ".netrc").write_text("machine example.com password hunter2")
    sandbox.chown()
    spec = 'files.read = ["~"]\nfiles.write = ["."]\n'
    sandbox.probe("read", str(sandbox.home / ".ssh" / "id_rsa"), spec=spec).expect(errno.ENOENT)
    sandbox.probe("read", str(sandbox.home / ".netrc"), spec=spec).expect(errno.ENOENT)
    named = 'files.read = ["~", "~/.ssh"]\nfiles.write = ["."]\n'
    sandbox.probe("read", str(sandbox.home / ".ssh" / "id_rsa"), spec=named).expect(0)
    # Under a grant that shows them (a dot folder named), the table still hides its own:
    # ~/.config/rclone is rclone's remotes' tokens.
    rclone = sandbox.home / ".config" / "rclone"
    rclone.mkdir(parents=True)
    (rclone / "rclone.conf").write_text("token = hunter2")
    (sandbox.home / ".config" / "settings.ini").write_text("plain")
    sandbox.chown()
    config = 'files.read = ["~", "~/.config"]\nfiles.write = ["."]\n'
    sandbox.probe("read", str(sandbox.home / ".config" / "settings.ini"), spec=config).expect(0)
    sandbox.probe("read", str(rclone / "rclone.conf"), spec=config).expect(errno.ENOENT)


def test_loader_variables_reach_neither_bwrap_nor_the_command(sandbox: Sandbox) -> None:
    env = {"LD_PRELOAD": "libnothing-lnk.so", "LD_AUDIT": "libaudit-lnk.so",
           "GCONV_PATH": "/tmp/gconv"}
    result = sandbox.run(
        "/bin/sh", "-c",
        'echo "STARTED"; echo "P=[$LD_PRELOAD] A=[$LD_AUDIT] G=[$GCONV_PATH]"; '
        "tr '\\0' '\\n' < /proc/1/environ | grep -c '^LD_' || true",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "STARTED"
    assert lines[1] == "P=[] A=[] G=[]"
    assert lines[2] == "0"  # bwrap's pid 1 inside had none either


@pytest.mark.kernel_matrix
@pytest.mark.usefixtures("inner")  # the compiled inner and its Python fallback
def test_sigpipe_is_default_again_inside(sandbox: Sandbox) -> None:
    result = sandbox.run("/bin/sh", "-c", "yes | head -1")
    assert result.returncode == 0
    assert result.stdout == "y\n"
    assert "Broken pipe" not in result.stderr
    # Nothing but lnk-sandbox's own notice, said once where the kernel has no Landlock.
    notice = ["lnk-sandbox: this kernel has no Landlock: bubblewrap's mounts and the "
              "seccomp filter alone hold the files and the network"]
    assert result.stderr.splitlines() == ([] if caps.landlock_abi() else notice)


@pytest.mark.usefixtures("inner")  # the compiled inner and its Python fallback
def test_exit_statuses(sandbox: Sandbox) -> None:
    assert sandbox.run("/bin/true").returncode == 0
    assert sandbox.run("/bin/sh", "-c", "exit 3").returncode == 3
    assert sandbox.run("/bin/sh", "-c", "kill -KILL $$").returncode == 137
    missing = sandbox.run("no-such-program-lnk")
    assert missing.returncode == 127
    assert "no-such-program-lnk" in missing.stderr
    assert "Traceback" not in missing.stderr


@pytest.mark.usefixtures("inner")  # the compiled inner and its Python fallback
def test_a_file_that_cannot_run_is_126(sandbox: Sandbox) -> None:
    script = sandbox.project / "not-executable"
    script.write_text("#!/bin/sh\necho ran\n")
    script.chmod(0o644)
    sandbox.chown()
    done = sandbox.run(str(script))
    assert done.returncode == 126
    assert "ran" not in done.stdout


def test_bwrap_setup_failure_is_125_with_its_message(sandbox: Sandbox) -> None:
    wrapper_dir = sandbox.base / "bin"
    wrapper_dir.mkdir()
    wrapper = wrapper_dir / "bwrap"
    wrapper.write_text(
        '#!/bin/sh\nexec /usr/bin/bwrap --ro-bind /nonexistent-lnk-source /x "$@"\n')
    wrapper.chmod(0o755)
    sandbox.chown()
    done = sandbox.run("/bin/true", env={"PATH": f"{wrapper_dir}:/usr/bin:/bin"})
    assert done.returncode == 125
    assert "nonexistent-lnk-source" in done.stderr  # bwrap's own message
    assert "bubblewrap could not set up the sandbox" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.kernel_matrix
def test_root_mode_drops_every_capability(root_sandbox: Sandbox) -> None:
    sandbox = root_sandbox
    result = sandbox.probe("caps").expect(0)
    fields = dict(line.split(":", 1) for line in result.stdout.splitlines() if ":" in line)
    assert fields["Uid"].split()[0] == "0"
    for name in ("CapEff", "CapPrm", "CapBnd", "CapInh", "CapAmb"):
        assert int(fields[name].strip(), 16) == 0, (name, fields[name])
    done = sandbox.run("/bin/sh", "-c", "echo STARTED; mount -t tmpfs none /mnt; echo $?")
    assert done.stdout.splitlines()[0] == "STARTED"
    assert done.stdout.splitlines()[-1] != "0"


@pytest.mark.kernel_matrix
def test_unprivileged_user_keeps_its_uid(sandbox: Sandbox) -> None:
    result = sandbox.probe("caps").expect(0)
    fields = dict(line.split(":", 1) for line in result.stdout.splitlines() if ":" in line)
    assert int(fields["Uid"].split()[0]) == sandbox.who.uid
    assert int(fields["CapEff"].strip(), 16) == 0


def test_plan_binds_grants_only_by_fd(sandbox: Sandbox) -> None:
    done = sandbox.lnk("plan", spec='files.read = ["~"]\nfiles.write = ["."]\n')
    assert done.returncode == 0, done.stderr
    argv = done.stdout.splitlines()
    line = next(text for text in argv if text.startswith("bwrap "))
    words = line.split()
    assert "--bind" not in words and "--ro-bind" not in words
    assert "--bind-fd" in words and "--ro-bind-fd" in words


@pytest.mark.usefixtures("inner")  # the compiled inner and its Python fallback
def test_inherited_descriptors_are_closed(sandbox: Sandbox, tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    try:
        import subprocess

        from support.sandbox import LNK

        done = subprocess.run(
            [*sandbox.who.prefix, LNK, "sandbox", "run", "--", "/bin/sh", "-c",
             "echo STARTED; ls /proc/self/fd"],
            cwd=sandbox.project, env=sandbox.env(), capture_output=True, text=True,
            pass_fds=(write_end,), timeout=60,
        )
    finally:
        os.close(read_end)
        os.close(write_end)
    lines = done.stdout.split()
    assert lines[0] == "STARTED"
    assert sorted(int(n) for n in lines[1:]) == [0, 1, 2, 3]  # 3: ls's own directory fd
