"""The README prints the rules lnk-sandbox follows as tables: they must be the code's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from supervisor.runs_as_you import AGENT_SETTINGS, CREDENTIALS, HOME_PLACES

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_every_credential_place_is_in_the_readme() -> None:
    for credential in CREDENTIALS:
        assert f"| `{credential.name}` | {credential.tool} | {credential.os} |" in README, (
            credential.name)


def test_every_agent_setting_is_in_the_readme() -> None:
    for setting in AGENT_SETTINGS:
        assert f"`{setting.name}`" in README, setting.name


def test_every_document_the_readme_names_is_in_the_repository() -> None:
    import re

    root = Path(__file__).resolve().parents[2]
    named = set(re.findall(r"\b((?:docs|tools|ci|tests|supervisor)/[\w./-]+\.(?:md|py|sh|json))",
                           README))
    assert "docs/design.md" in named
    assert "DESIGN.md" not in README.replace("docs/design.md", "")
    named.discard("docs/srt-proxy.md")  # sandbox-runtime's own, which the README cites
    assert [n for n in sorted(named) if not (root / n).exists()] == []


def test_every_home_place_is_in_the_readme_with_its_rule() -> None:
    for place in HOME_PLACES:
        rule = "holder" if place.holder else "place"
        assert f"| `{place.name}` | {rule} |" in README, place.name


def test_home_configuration_tables_are_the_codes() -> None:
    """Every folder of profiles hidden and every place reopened under a read grant of
    home is in the README's table, and in docs/runs-as-you.md with how it was checked."""
    from supervisor.home_config import PROFILE_PLACES, REOPENED

    docs = (Path(__file__).resolve().parents[2] / "docs" / "runs-as-you.md").read_text()
    for place in PROFILE_PLACES:
        assert f"| `{place.name}` | hidden: programs' profiles | {place.os} |" in README
        assert f"| `{place.name}` | {place.os} | {place.what} | {place.checked} |" in docs
    for entry in REOPENED:
        assert f"| `{entry.name}` | reopened: code, no secret | any |" in README
        assert (f"| `{entry.name}` | {entry.kind} | {entry.what} | {entry.left} | "
                f"{entry.checked} |") in docs

def test_the_readme_lists_every_dot_name_a_run_holds_at_a_top(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's one list of what `ls -A` may show that the person did not make is
    what the analysis holds at the top of a folder with nothing in it, with a dot; and
    the names without one are HEAD (no repository there), and OpenCode's two only for a
    person who uses OpenCode (its settings folder in home, or its program on PATH)."""
    import re

    from supervisor.dotfiles import analyze

    section = README.split("### What a run holds in a folder it writes", 1)[1]
    listed = set(re.findall(r"`([^`]+)`", section.split("\n\n", 3)[2]))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no opencode program
    top, home = tmp_path / "top", tmp_path / "home"
    top.mkdir()
    home.mkdir()

    def held() -> set[str]:
        return {os.path.relpath(p.placeholder, top).split("/")[0]
                for p in analyze(str(top), home=str(home)).protected if p.placeholder}

    assert {n for n in held() if n.startswith(".")} == listed
    assert {n for n in held() if not n.startswith(".")} == {"HEAD"}
    (home / ".config" / "opencode").mkdir(parents=True)
    assert {n for n in held() if not n.startswith(".")} == {"HEAD", "opencode.json",
                                                          "opencode.jsonc"}
