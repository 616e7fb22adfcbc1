"""A launch and `check` where bwrap may make its user namespace but not map it, as under
Ubuntu 24.04's AppArmor restriction: refused (125) with bwrap's words and the cause, the
command never run; `check` says the same before any launch.

This machine's kernel has no AppArmor: support/userns_restricted.py runs the real bwrap
under a seccomp filter that makes the kernel refuse its uid map's open with EACCES, so
bwrap fails as it does there (`setting up uid map: Permission denied`, exit 1, before any
sandbox exists), as root mode's uid and as the user. Which remedy the message gives
follows the sysctl, which this kernel does not have: its Ubuntu form is checked with the
sysctl's value flipped in a real lnk-sandbox process (and exactly in
tests/unit/test_userns_restriction.py).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from support import capabilities as caps
from support.sandbox import Sandbox
from support.userns_restricted import install

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

REFUSED = "setting up uid map: Permission denied"
SAID = f"bubblewrap could not set up the sandbox's user namespace ({REFUSED})"


def restricted_path(sandbox: Sandbox) -> tuple[Path, dict[str, str]]:
    """The restricted bwrap, and an environment whose PATH finds it first."""
    wrapper = install(sandbox.base / "restricted")
    return wrapper, {"PATH": f"{wrapper.parent}:/usr/local/bin:/usr/bin:/bin"}


def as_launch_runs_bwrap(sandbox: Sandbox) -> list[str]:
    """Whom a launch runs bwrap as: the user, or (root mode) the sandbox's own uid."""
    if not sandbox.who.is_root:
        return list(sandbox.who.prefix)
    from supervisor.linux.idmapped import SANDBOX_GID, SANDBOX_UID

    return ["setpriv", f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_GID}", "--clear-groups",
            "--"]


def test_the_simulation_fails_bwrap_as_the_restriction_does(sandbox: Sandbox) -> None:
    wrapper, _ = restricted_path(sandbox)
    args = ["--unshare-user", "--unshare-net", "--ro-bind", "/", "/", "true"]
    if sandbox.who.is_root:
        args = ["--uid", "0", "--gid", "0", *args]
    restricted = subprocess.run([*as_launch_runs_bwrap(sandbox), str(wrapper), *args],
                                capture_output=True, text=True)
    assert (restricted.returncode, restricted.stderr) == (1, f"bwrap: {REFUSED}\n")
    # The control: the same bwrap, unrestricted, sets the same namespace up.
    free = subprocess.run([*as_launch_runs_bwrap(sandbox), "bwrap", *args],
                          capture_output=True, text=True)
    assert (free.returncode, free.stderr) == (0, "")
    # What the checks before a launch ask of bwrap still works through it.
    version = subprocess.run([str(wrapper), "--version"], capture_output=True, text=True)
    assert version.stdout.startswith("bubblewrap ")


def test_a_launch_is_refused_with_bwraps_words_and_the_cause(sandbox: Sandbox) -> None:
    _, env = restricted_path(sandbox)
    command = ("sh", "-c", "echo ran > ran.txt")
    done = sandbox.run(*command, env=env)
    assert done.returncode == 125, done.stderr
    assert f"bwrap: {REFUSED}\n" in done.stderr  # bwrap's own, on the person's terminal
    message = next(line for line in done.stderr.splitlines()
                   if line.startswith("lnk-sandbox: "))
    assert message.startswith(f"lnk-sandbox: {SAID}: the kernel let it make one but "
                              "refused it the rights to use it")
    # No AppArmor here: the message says it is not Ubuntu's restriction, and offers no
    # AppArmor command that would not help.
    assert "this machine has no kernel.apparmor_restrict_unprivileged_userns" in message
    assert "apparmor_parser" not in done.stderr
    assert ("run by root, the sandbox's bwrap runs as a uid of its own" in message) is \
        sandbox.who.is_root
    assert "Traceback" not in done.stderr
    assert not (sandbox.project / "ran.txt").exists()
    # The remedy the hint gives besides AppArmor's: the run without namespaces needs no
    # bwrap, so with the same restricted bwrap first on PATH it runs the command, said as
    # that mode (which makes nothing new at the top of a written folder: one below).
    assert "set LNK_NAMESPACES=off for the run" in done.stderr
    (sandbox.project / "out").mkdir()
    sandbox.chown(sandbox.project / "out")
    direct = sandbox.run("sh", "-c", "echo ran > out/ran.txt",
                         env={**env, "LNK_NAMESPACES": "off"})
    assert direct.returncode == 0, direct.stderr
    assert "LNK_NAMESPACES=off: this sandbox runs without namespaces" in direct.stderr
    assert "bwrap:" not in direct.stderr
    assert (sandbox.project / "out" / "ran.txt").read_text() == "ran\n"
    # The control: unrestricted, the same command runs and leaves its file.
    ran = sandbox.run(*command)
    assert ran.returncode == 0, ran.stderr
    assert (sandbox.project / "ran.txt").read_text() == "ran\n"


def test_check_says_bwrap_may_not_use_its_namespace(sandbox: Sandbox) -> None:
    _, env = restricted_path(sandbox)
    done = sandbox.lnk("check", "--json", env=env)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["machine"]["user_namespaces"] is True  # unshare works: it is not that
    assert report["machine"]["userns_refused"] == REFUSED
    assert report["can_launch"] is False
    assert any(problem["message"].startswith(SAID) for problem in report["problems"])
    text = sandbox.lnk("check", env=env).stdout
    assert (f"  user namespaces     yes, but bwrap may not use them (bwrap: {REFUSED})"
            in text.splitlines())
    assert ("  AppArmor userns     none (no kernel.apparmor_restrict_unprivileged_userns "
            "here)") in text.splitlines()
    # The control: with bwrap free, check finds nothing refused.
    free = json.loads(sandbox.lnk("check", "--json").stdout)
    assert free["machine"]["userns_refused"] is None
    assert free["can_launch"] is True


# The launch's diagnosis in a real lnk-sandbox process, run as the launch's user, with the
# sysctl read as Ubuntu 24.04 has it: the trial's bwrap is really refused.
DIAGNOSE = """
import sys
from supervisor.linux import userns
userns.read_restriction = lambda: userns.Restriction("1", "Y")
problem = userns.diagnose(sys.argv[1], root_mode=sys.argv[2] == "root", share_net=False)
print(problem.render() if problem is not None else "none")
"""


def test_under_ubuntus_sysctl_the_diagnosis_gives_the_profile(sandbox: Sandbox) -> None:
    wrapper, env = restricted_path(sandbox)
    done = subprocess.run(
        [*sandbox.who.prefix, str(caps.VENV_BIN / "python"), "-c", DIAGNOSE, str(wrapper),
         "root" if sandbox.who.is_root else "user"],
        capture_output=True, text=True, env=sandbox.env(env), cwd=sandbox.project)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        f"{SAID}: this machine restricts unprivileged user namespaces with AppArmor "
        "(kernel.apparmor_restrict_unprivileged_userns = 1, Ubuntu 24.04's default)")
    assert "sudo cp /usr/share/apparmor/extra-profiles/bwrap-userns-restrict " \
           "/etc/apparmor.d/" in done.stdout
    assert "sudo apparmor_parser -r /etc/apparmor.d/bwrap-userns-restrict" in done.stdout
    # The wrapper is not /usr/bin/bwrap: a profile of its own for it too.
    assert f"profile lnk-bwrap {wrapper} flags=(unconfined)" in done.stdout
    # The control: the real bwrap, unrestricted, gives no diagnosis at all.
    free = subprocess.run(
        [*sandbox.who.prefix, str(caps.VENV_BIN / "python"), "-c", DIAGNOSE, "/usr/bin/bwrap",
         "root" if sandbox.who.is_root else "user"],
        capture_output=True, text=True, env=sandbox.env(), cwd=sandbox.project)
    assert (free.returncode, free.stdout) == (0, "none\n"), free.stderr
