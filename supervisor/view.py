"""What both backends, and `describe`, judge alike of the folders a sandbox writes: which
of them have their dot files protected, what is protected there, and the links in those
paths a sandbox could repoint.

Each OS renders it its own way (Linux: read-only binds and placeholders; macOS: rules
closing the path and its first creation; describe: text), but the judgement is one: a
folder written under `write_dot_files` keeps its dot files writable, every other
written folder has them read-only, and a link in a protected path where the sandbox
writes refuses the launch, since the sandbox could point it elsewhere. Which rule
decides for a path is `grants.deepest`'s.
"""

from __future__ import annotations

from collections.abc import Mapping

from .dotfiles import DotFiles, Protected, analyze
from .errors import LaunchError
from .grants import Grant, Snapshot


def written_tops(snapshot: Snapshot, *, opened_too: bool = False) -> tuple[Grant, ...]:
    """The write grants of a folder whose top is looked at for dot files: those whose
    dot files are protected, and with `opened_too` those `write_dot_files` opens (which
    `describe` names as opened)."""
    return tuple(g for g in snapshot.grants if g.access == "write" and g.target
                 and g.is_dir and (opened_too or not g.dot_files_writable))


def dot_files_of(snapshot: Snapshot, *, opened_too: bool = False) -> dict[str, DotFiles]:
    """What is at the top of each folder of `written_tops`, by its target: read from the
    host once per launch (dotfiles.analyze), the places that run as the person in home
    found once for all of them. A grant under `write_dot_files` asks for no commit
    check: its dot files are the sandbox's to write anyway."""
    from .home_places import home_places

    tops = written_tops(snapshot, opened_too=opened_too)
    places = home_places(snapshot.home) if tops else ()
    found: dict[str, DotFiles] = {}
    for grant in tops:
        assert grant.target is not None
        found[grant.target] = analyze(grant.target, home=snapshot.home,
                                      commit=grant.commit and not grant.dot_files_writable,
                                      places=places)
    return found


def protections(snapshot: Snapshot, dot_files: Mapping[str, DotFiles]
                ) -> tuple[tuple[Grant, Protected], ...]:
    """Each protected path with the write grant whose top holds it, in the grants' order."""
    found: list[tuple[Grant, Protected]] = []
    for grant in written_tops(snapshot):
        dots = dot_files.get(grant.target or "")
        found.extend((grant, item) for item in (dots.protected if dots else ()))
    return tuple(found)


def link_refusal(item: Protected, owner: Grant | None) -> LaunchError:
    """The refusal of a launch whose protected path `item` holds a link (`item.link`)
    where the sandbox writes; `owner`, the write grant whose top it is, where known."""
    where = f", in {owner.target}, which the sandbox writes" if owner is not None \
        else ", where the sandbox writes"
    folder = repr(owner.name) if owner is not None else "the folder"
    return LaunchError(
        f"{item.link} is a link in the path of {item.name} ({item.reason}){where}: it "
        "could point the link elsewhere, so the launch is refused",
        hint=f"replace the link with what it points to, or list {folder} in "
        "files.write_dot_files if the sandbox may change its dot files")
