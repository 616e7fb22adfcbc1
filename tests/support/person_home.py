"""A person's home for the unit tests of what their settings name (test_settings_named,
test_hard_links): a real folder whose only settings are those a test writes, and the
snapshot a spec granting one path there resolves to."""

from __future__ import annotations

from pathlib import Path

import pytest

from supervisor.grants import Snapshot, resolve
from supervisor.policy import Context, effective_policy
from supervisor.spec import parse_spec


def person_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with a `proj` folder, and none of the launch environment's variables that
    would point the settings' readers elsewhere."""
    folder = tmp_path.resolve() / "home"
    (folder / "proj").mkdir(parents=True)
    for variable in ("GIT_CONFIG_GLOBAL", "XDG_CONFIG_HOME", "ZDOTDIR", "ENV", "BASH_ENV",
                     "INPUTRC"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", "/dev/null")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    return folder


def snapshot(home: Path, grant: str) -> Snapshot:
    """What `files.write = [grant]` resolves to for the person of `home`, working in proj."""
    context = Context(home=str(home), cwd=str(home / "proj"), lnk_home=str(home / ".lnk"),
                      uid=1000, runtime_dir=None, installation=())
    text = f'[files]\nwrite = ["{grant}"]\n'
    return resolve(effective_policy(parse_spec(text.encode(), "spec.toml"), context),
                   context)
