"""Red team, issue 27: placeholders that linger between runs (LINGER_SECONDS), filled by
the next run. A settings folder's empty placeholder stays 10 minutes after its run, for
the next run to join; what the next run's analysis makes of an empty folder it finds
there decides whether the protection is still as strong.

Each attack runs two sandboxes one after the other (as an agent's tool calls do), as
root and as the unprivileged user, then the person's real git in the folder.
"""

from __future__ import annotations

import shutil

import pytest

from support.red_team import escaped, inside, markers, need, payload, person_git, ran
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

COMMIT = '[files]\nwrite = ["."]\ncommit = ["."]\n'


def _make_repository(box: Sandbox) -> str:
    """What the second run does: a repository at the top whose settings and hook run
    the payloads on the person's next git command there."""
    monitor = payload(box, "fsmonitor").replace("\n", "\\n")
    hook = payload(box, "post-checkout").replace("\n", "\\n")
    return (f"git init -q -b main . ; echo INIT=$?; "
            f"printf '{monitor}' > monitor.sh; chmod +x monitor.sh; "
            f"git config core.fsmonitor \"$PWD/monitor.sh\"; echo CONFIG=$?; "
            f"printf '{hook}' > .git/hooks/post-checkout; "
            f"chmod +x .git/hooks/post-checkout; echo HOOK=$?")


def _person_uses_the_folder(box: Sandbox) -> None:
    """The person's git in the folder, where it is a repository now."""
    done = person_git(box, box.project, "rev-parse", "--git-dir")
    need(done.stdout.strip() == ".git", done.stdout)
    person_git(box, box.project, "status")
    person_git(box, box.project, "commit", "-q", "--allow-empty", "-m", "mine")
    person_git(box, box.project, "checkout", "-q", "-b", "side")


@pytest.mark.parametrize("between", [
    "the placeholder went",
    pytest.param("within the linger", marks=escaped(
        "dotfiles._Analysis.git: under files.commit an existing empty .git folder (the "
        "first run's placeholder, lingering LINGER_SECONDS) is neither held whole (`not "
        "(self.commit and kind == 'folder')`) nor given GIT_METADATA (it returns before "
        "git_metadata for an empty folder): the second run makes a repository there with "
        "its own core.fsmonitor and hooks")),
])
def test_files_commit_in_a_folder_that_is_no_repository(sandbox: Sandbox,
                                                         between: str) -> None:
    """A harness's spec with `files.commit = ["."]`, run twice in a folder that is no
    repository: the first run holds the missing .git with an empty folder; the second
    makes a repository."""
    markers(sandbox)
    sandbox.chown()
    first = inside(sandbox, "git init -q . ; echo INIT=$?", spec=COMMIT)
    need("INIT=128" in first.stdout, first.stdout + first.stderr)  # held in the first run
    lingering = sandbox.lingering()
    need(sandbox.project / ".git" in lingering, lingering)
    if between == "the placeholder went":  # as after LINGER_SECONDS
        shutil.rmtree(sandbox.project / ".git")
    second = inside(sandbox, _make_repository(sandbox), spec=COMMIT)
    if not (sandbox.project / ".git" / "HEAD").exists():
        assert ran(sandbox) == []  # no repository was made: nothing can run
        return
    _person_uses_the_folder(sandbox)
    assert ran(sandbox) == [], second.stdout + second.stderr


def test_a_lingering_git_placeholder_under_the_default_spec(sandbox: Sandbox) -> None:
    """Held: the same two runs with the default spec: the lingering .git is held whole."""
    markers(sandbox)
    sandbox.chown()
    inside(sandbox, "true")
    need(sandbox.project / ".git" in sandbox.lingering(), sandbox.lingering())
    second = inside(sandbox, _make_repository(sandbox))
    assert "INIT=0" not in second.stdout, second.stdout
    assert not (sandbox.project / ".git" / "HEAD").exists()
    assert ran(sandbox) == []


def test_a_lingering_git_placeholder_seen_from_the_folder_above(sandbox: Sandbox) -> None:
    """Held: the first run writes ~/src/app (no repository: .git lingers), the second
    writes ~/src: the walk finds app's lingering .git and holds it, so app cannot be
    made a repository whose settings the person's git would run."""
    app = sandbox.home / "src" / "app"
    app.mkdir(parents=True)
    markers(sandbox)
    sandbox.chown()
    inside(sandbox, "true", cwd=app)
    need(app / ".git" in sandbox.lingering(), sandbox.lingering())
    second = inside(sandbox, f"cd app && {_make_repository(sandbox)}", cwd=app.parent)
    assert "INIT=0" not in second.stdout, second.stdout
    assert not (app / ".git" / "HEAD").exists()
    assert ran(sandbox) == []
