"""Red team 2 (issue 26, item 6 and its class): repositories below the top of a written
folder, attacked where the fix (supervisor/below_top.py: a walk at launch, remembered
in $LNK_HOME) meets time: a repository the person makes after the launch (while the
run lasts), or after a first run prepared the folder so the next walk cannot reach it;
and the kernel's own mounts, attacked from a namespace made inside.

Each plants from inside a real sandbox (root mode and the unprivileged user) and runs
the person's real git outside afterwards. Escapes are left failing under `escaped`.
"""

from __future__ import annotations

import subprocess

import pytest

from support.processes import close_pipes
from support.red_team import (
    escaped,
    host,
    inside,
    marker,
    markers,
    need,
    payload,
    person_git,
    plant,
    ran,
    repository,
)
from support.sandbox import LNK, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]


def _hook(box: Sandbox, folder: str) -> str:
    """Shell that writes an executable post-checkout hook into FOLDER/.git/hooks."""
    text = payload(box, "below-top-hook").replace("\n", "\\n")
    return (f"printf '{text}' > {folder}/.git/hooks/post-checkout && "
            f"chmod +x {folder}/.git/hooks/post-checkout; echo PLANT=$?")


AFTER_A_RUN = {
    "unlistable": (
        "below_top.walk only says (unwalked) what it could not list and the launch goes "
        "on: a folder a first run made searchable but not listable (chmod 311) hides the "
        "repository the person cloned there after it; the memory holds only what a "
        "launch saw (as the user: root lists any folder)"),
    "walk bound": (
        "below_top.walk stops at MAX_FOLDERS=256 and the launch goes on: 300 folders a "
        "first run made, sorting first, hide the repository the person cloned after it"),
}


@pytest.mark.parametrize("how", AFTER_A_RUN)
def test_a_repository_the_person_made_after_a_run_prepared_the_folder(
        sandbox: Sandbox, how: str, request: pytest.FixtureRequest) -> None:
    """Run one (`cd ~/src && lnk sandbox run ...`) prepares ~/src; the person then clones
    a repository into it, outside; run two writes that repository's hooks."""
    if not (how == "unlistable" and sandbox.who.is_root):
        request.applymarker(escaped(AFTER_A_RUN[how]))
    src = sandbox.home / "src"
    src.mkdir()
    markers(sandbox)
    sandbox.chown()
    prepare = ("mkdir zz && chmod 311 zz" if how == "unlistable" else
               "mkdir zz; for i in $(seq 100 400); do mkdir a$i; done")
    inside(sandbox, prepare, cwd=src)
    app = repository(sandbox, src / "zz" / "app")  # the person's, made on the host
    second = inside(sandbox, _hook(sandbox, "zz/app"), cwd=src)
    person_git(sandbox, app, "checkout", "-q", "-b", "side")
    assert ran(sandbox) == [], second.stdout + second.stderr


@pytest.mark.parametrize("where", [
    "at launch",
    pytest.param("during the run", marks=escaped(
        "below_top.walk runs once, at launch: a repository the person makes in the "
        "written folder while the run lasts (a clone in another terminal during a long "
        "agent session) is writable whole, hooks and config, and nothing after the run "
        "looks at it")),
])
def test_a_repository_the_person_makes_while_the_run_lasts(sandbox: Sandbox,
                                                           where: str) -> None:
    src = sandbox.home / "src"
    src.mkdir()
    markers(sandbox)
    if where == "at launch":
        repository(sandbox, src / "app")
    sandbox.chown()
    script = ("echo STARTED; read go; " + _hook(sandbox, "app"))
    run = subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--", "/bin/sh", "-c", script],
        cwd=src, env=sandbox.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    assert run.stdin is not None and run.stdout is not None
    try:
        need(run.stdout.readline() == "STARTED\n", "the plant never started inside")
        if where == "during the run":
            repository(sandbox, src / "app")  # the person's clone, on the host
        run.stdin.write("go\n")
        run.stdin.flush()
        out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
        close_pipes(run)
    need("PLANT=" in out, f"the plant did not run: {out}\n{err}")
    person_git(sandbox, src / "app", "checkout", "-q", "-b", "side")
    assert ran(sandbox) == [], out + err


# -- the kernel's mounts, from a namespace made inside ---------------------------------------

MOUNT_TRICKS = {
    # a new user and mount namespace: the held .git's mount lifted, or the folder bound
    # again without its mounts (a non-recursive bind), then written through that copy
    "umount": "umount -l app/.git && {hook}",
    "bind without submounts": ("mkdir -p /tmp/m && mount --bind . /tmp/m && "
                               "cd /tmp/m && {hook}"),
    "remount rw": "mount -o remount,bind,rw app/.git && {hook}",
    "move": "mkdir -p /tmp/m && mount --move app/.git /tmp/m && {hook}",
}


@pytest.mark.parametrize("trick", MOUNT_TRICKS)
def test_a_held_repository_below_the_top_from_a_namespace_made_inside(
        sandbox: Sandbox, trick: str) -> None:
    """Held or refused: unshare(CLONE_NEWUSER|CLONE_NEWNS) inside, then each mount trick
    on the held ~/src/app/.git; the person's checkout there runs nothing."""
    src = sandbox.home / "src"
    app = repository(sandbox, src / "app")
    markers(sandbox)
    sandbox.chown()
    hook = _hook(sandbox, "app")
    body = MOUNT_TRICKS[trick].format(hook=hook)
    done = inside(sandbox, f"unshare -Urm sh -c {_quote(body)}; echo UNSHARE=$?",
                  cwd=src)
    person_git(sandbox, app, "checkout", "-q", "-b", "side")
    assert ran(sandbox) == [], done.stdout + done.stderr


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def test_a_remembered_repository_from_a_written_folder_inside(sandbox: Sandbox) -> None:
    """Run one at ~/src finds and holds the person's ~/src/zz/app, and fills ~/src/zz
    with folders sorting first; run two starts in ~/src/zz and writes app's hooks."""
    src = sandbox.home / "src"
    app = repository(sandbox, src / "zz" / "app")
    markers(sandbox)
    sandbox.chown()
    first = inside(sandbox, "for i in $(seq 100 400); do mkdir zz/a$i; done; " +
                   _hook(sandbox, "zz/app"), cwd=src)
    need("PLANT=0" not in first.stdout, f"the first run's plant was not refused: {first.stdout}")
    second = inside(sandbox, _hook(sandbox, "app"), cwd=src / "zz")
    person_git(sandbox, app, "checkout", "-q", "-b", "side")
    assert ran(sandbox) == [], second.stdout + second.stderr


def test_a_remembered_repository_from_a_written_folder_above(sandbox: Sandbox) -> None:
    """The other way: run one at ~/src/zz finds and holds the person's ~/src/zz/app and
    fills ~/src/zz with folders sorting first; run two starts in ~/src, whose walk the
    first run's folders exhaust, and writes app's hooks."""
    src = sandbox.home / "src"
    app = repository(sandbox, src / "zz" / "app")
    markers(sandbox)
    sandbox.chown()
    first = inside(sandbox, "for i in $(seq 100 400); do mkdir a$i; done; " +
                   _hook(sandbox, "app"), cwd=src / "zz")
    need("PLANT=0" not in first.stdout, f"the first run's plant was not refused: {first.stdout}")
    second = inside(sandbox, _hook(sandbox, "zz/app"), cwd=src)
    person_git(sandbox, app, "checkout", "-q", "-b", "side")
    assert ran(sandbox) == [], second.stdout + second.stderr


def test_the_bare_repository_and_worktrees_layout(sandbox: Sandbox) -> None:
    """Held or not: the "bare repository + worktrees" layout (`git clone --bare URL
    .bare; echo 'gitdir: ./.bare' > .git; git worktree add main`), written from its top
    (`cd ~/src/proj && lnk sandbox run`): the shared hooks and config in .bare, and each
    worktree's own git directory in .bare/worktrees, stay read-only."""
    origin = repository(sandbox, sandbox.base / "origin")
    top = sandbox.home / "src" / "proj"
    top.mkdir(parents=True)
    sandbox.chown()
    person_git(sandbox, top, "clone", "-q", "--bare", str(origin), ".bare")
    (top / ".git").write_text("gitdir: ./.bare\n")
    sandbox.chown()
    person_git(sandbox, top, "worktree", "add", "-q", "main")
    person_git(sandbox, top, "worktree", "add", "-q", "-b", "feature", "feature")
    markers(sandbox)
    sandbox.chown()
    hook = payload(sandbox, "bare-layout")
    monitor = sandbox.base / "monitor.sh"
    monitor.write_text(payload(sandbox, "bare-layout-config"))
    monitor.chmod(0o755)
    sandbox.chown(monitor)
    results = plant(sandbox, [
        ("make", ".bare/hooks/post-checkout", hook),
        ("append", ".bare/config", f"[core]\n\tfsmonitor = {monitor}\n"),
        ("write", ".bare/worktrees/main/config.worktree",
         f"[core]\n\tfsmonitor = {monitor}\n"),
        ("write", "main/notes.txt", "the worktree stays writable\n"),
    ], cwd=top)
    need(results["write main/notes.txt"] == "OK", results)
    person_git(sandbox, top / "main", "status")
    person_git(sandbox, top / "feature", "checkout", "-q", "-b", "side")
    assert ran(sandbox) == [], results


@pytest.mark.parametrize("value", ["../shared-hooks", "{src}/shared-hooks"])
def test_a_below_repositorys_hooks_path_elsewhere_in_the_grant(sandbox: Sandbox,
                                                               value: str) -> None:
    """Held or not: ~/src/app (there at launch) keeps its hooks in ~/src/shared-hooks,
    named by its own core.hooksPath, relative or absolute; `cd ~/src && lnk sandbox run`
    writes ~/src."""
    src = sandbox.home / "src"
    app = repository(sandbox, src / "app")
    (src / "shared-hooks").mkdir()
    person_git(sandbox, app, "config", "core.hooksPath", value.format(src=src))
    markers(sandbox)
    sandbox.chown()
    results = plant(sandbox, [("make", "shared-hooks/post-checkout",
                               payload(sandbox, "shared-hooks"))], cwd=src)
    person_git(sandbox, app, "checkout", "-q", "-b", "side")
    assert ran(sandbox) == [], results


@escaped("what a launch finds (the top's .venv, below_top's checkouts and environments) "
         "is judged once, at launch: a virtual environment the person makes in the "
         "project while the run lasts (python3 -m venv .venv in another terminal) has "
         "writable activation scripts, and the person's next `. .venv/bin/activate` runs "
         "what the sandbox appended")
def test_a_venv_the_person_makes_while_the_run_lasts(sandbox: Sandbox) -> None:
    markers(sandbox)
    sandbox.chown()
    line = f"echo activated >> {marker(sandbox, 'activate')}"
    script = f"echo STARTED; read go; echo '{line}' >> .venv/bin/activate; echo PLANT=$?"
    run = subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--", "/bin/sh", "-c", script],
        cwd=sandbox.project, env=sandbox.env(), stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert run.stdin is not None and run.stdout is not None
    try:
        need(run.stdout.readline() == "STARTED\n", "the plant never started inside")
        made = subprocess.run([*sandbox.who.prefix, "/usr/bin/python3", "-m", "venv",
                               "--without-pip", str(sandbox.project / ".venv")],
                              capture_output=True, text=True)
        need(made.returncode == 0, made.stderr)
        run.stdin.write("go\n")
        run.stdin.flush()
        out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
        close_pipes(run)
    need("PLANT=" in out, f"the plant did not run: {out}\n{err}")
    done = host(sandbox, "bash", "-c", ". .venv/bin/activate && echo ACTIVE",
                cwd=sandbox.project)
    need("ACTIVE" in done.stdout, done.stderr)
    assert ran(sandbox) == [], out + err
