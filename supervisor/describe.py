"""What a person is asked to allow: a snapshot described, as plain data, text or JSON.

Every grant appears by its name as written and the target it resolved to, so a person
sees where a link leads before allowing it; then hidden folders, protected dot files and
placeholders, the program list (or "any program"), the network and the environment
passed. The JSON form follows docs/describe.schema.json.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from .described import Described, HomeConfiguration, home_configuration, present
from .grants import Snapshot, is_within
from .limits import describe as describe_limits

if TYPE_CHECKING:
    from .view import View

SCHEMA_VERSION = 5


@dataclass(frozen=True)
class Description:
    """The description of one snapshot; `digest` identifies what is remembered."""

    version: int
    spec: str
    digest: str
    working_directory: str
    read: list[Described]
    write: list[Described]
    hidden: list[Described]
    protected: list[Described]
    placeholders: list[Described]
    opened: list[Described]
    limits: list[str]
    programs: list[Described] | None
    network_mode: str
    network_allow: list[str]
    env_keep: list[str]
    env_set: dict[str, str]
    agent: str | None
    session: str | None
    network_deny: list[str]
    network_forward: list[int]
    network_expose: list[int]
    network_unix: list[Described] | None
    working_directory_seen: bool
    git_identity: str | None
    caches: list[Described]
    unwalked: list[Described]
    home_configuration: HomeConfiguration | None
    # None: the sandbox has namespaces of its own; else it runs without them
    # (nonamespace.py), and each line says what holds, narrower or not at all
    namespaces: list[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def describe(snapshot: Snapshot, *, namespaces: list[str] | None = None) -> Description:
    """The view of `snapshot` on this OS (view.py), with the dot files `write_dot_files`
    opens read too, as text for a person to allow. `namespaces`: what holds where this
    OS's sandbox runs without namespaces (its backend says: the doors ask it, api.py's
    `description_of`); None where it has them."""
    from .permissions import digest
    from .policy import system_folders
    from .view import view_for

    view = view_for(snapshot, system_folders(), opened_too=True)

    def listed(access: str) -> list[Described]:
        return [Described(g.name, g.target, g.key or g.reason)
                for g in (*snapshot.grants, *snapshot.patterns)
                if g.access == access and g.target and present(g)]

    protected, placeholders, opened = _dot_files(view)
    written = [g.target for g in snapshot.grants if g.access == "write" and g.target]
    installation = [Described(g.name, g.target, g.reason) for g in snapshot.grants
                    if g.access == "protect" and g.target
                    and any(is_within(g.target, w) for w in written)]
    return Description(
        version=SCHEMA_VERSION,
        spec=snapshot.source,
        digest=digest(snapshot),
        working_directory=snapshot.cwd,
        read=listed("read"),
        write=listed("write"),
        hidden=listed("hide"),
        protected=protected + installation,
        placeholders=placeholders,
        opened=opened,
        limits=describe_limits(snapshot.run_limits()),
        programs=None if snapshot.programs is None else [
            Described(p.name, p.target, "commands.programs") for p in snapshot.programs],
        network_mode=snapshot.settings.network_mode,
        network_allow=list(snapshot.network.texts("allow")),
        env_keep=list(snapshot.settings.env_keep),
        env_set=dict(snapshot.settings.env_assign),
        agent=snapshot.settings.agent,
        session=snapshot.settings.session,
        network_deny=list(snapshot.network.texts("deny")),
        network_forward=list(snapshot.network.forward),
        network_expose=list(snapshot.network.expose),
        network_unix=None if snapshot.network.unix is None else [
            Described(u.name, u.target, u.key + (f" ({u.variable} kept)" if u.variable
                                                 else ""))
            for u in snapshot.network.unix],
        working_directory_seen=view.working_directory_problem() is None,
        git_identity=_git_identity(snapshot),
        caches=[Described(c.name, c.store, f"{c.key}: seen at {c.path}")
                for c in snapshot.caches],
        unwalked=_unwalked(view),
        home_configuration=home_configuration(view),
        namespaces=namespaces,
    )


SHOWN_UNWALKED = 5  # folders named per walk; the rest counted


def _unwalked(view: View) -> list[Described]:
    """Where the walks at launch stopped at their bound: below each written folder (what
    was the person's there, held like the top's: below_top.py), and in home's dot
    folders (the links that make a place by where they lead: home_places.home_links).
    What they did not list is not held."""
    from .home_places import home_links
    from .view import written_tops

    found: list[Described] = []

    def add(folders: tuple[str, ...], why: str) -> None:
        for folder in folders[:SHOWN_UNWALKED]:
            found.append(Described(folder, None, why))
        if len(folders) > SHOWN_UNWALKED:
            more = len(folders) - SHOWN_UNWALKED
            found.append(Described(f"and {more} more folders", None, why))

    for grant in written_tops(view.snapshot):
        dots = view.dot_files.get(grant.target or "")
        if dots is not None and dots.unwalked:
            add(dots.unwalked, f"not walked below {grant.name} (its bound reached): a "
                "repository or virtual environment there is not held")
    if written_tops(view.snapshot):
        add(home_links(view.snapshot.home).unwalked, "not walked in home (its bound "
            "reached): a link there into a written folder does not keep its target "
            "read-only")
    return found


def _git_identity(snapshot: Snapshot) -> str | None:
    from .gitsupport import identity_for

    identity = identity_for(snapshot)
    return identity.shown() if identity is not None else None


COMMIT_OPENED = (
    "files.commit: its objects, refs, index, HEAD and logs, to commit; what git reads to "
    "decide what to run stays read-only (listed above); after the run, what it left "
    "there that your git would follow or carry out is removed or set aside (links, a "
    "rebase, am, cherry-pick or bisect in progress, a worktree or submodule git would "
    "act on); while it runs, git you run in this repository works on what the sandbox "
    "is writing: let the run end first")


def _dot_files(view: View) -> tuple[list[Described], list[Described], list[Described]]:
    """What runs as the person inside each written folder: protected (there now),
    held (missing, kept from being made for the run), and opened by the spec's
    files.write_dot_files or files.commit, each with the reason."""
    from .view import written_tops

    snapshot = view.snapshot
    written = snapshot.written()
    protected: list[Described] = []
    placeholders: list[Described] = []
    opened: list[Described] = []
    kept = {r.path for r in view.rules if r.protected is not None}
    for grant in written_tops(snapshot, opened_too=True):
        assert grant.target is not None
        for item in view.dot_files[grant.target].protected:
            if not any(is_within(item.path, w) for w in written):
                continue  # read-only or hidden already: nothing the sandbox writes
            if not grant.dot_files_writable and item.path not in kept:
                continue  # the spec writes it by its own path: the view keeps it open
            if grant.dot_files_writable:
                if item.exists or item.placeholder:
                    opened.append(Described(item.name, item.path,
                                            f"files.write_dot_files: {item.reason}"))
            elif item.exists:
                protected.append(Described(item.name, item.path, item.reason))
            elif item.placeholder:
                placeholders.append(Described(item.name, item.placeholder, item.reason))
        if grant.commit and not grant.dot_files_writable:
            git = f"{grant.target}/.git"
            opened.append(Described(git, git, COMMIT_OPENED))
    # What lies inside a folder already read-only needs no line of its own.
    closed = [item.target for item in protected if item.target]
    protected = [item for item in protected if not any(
        item.target != c and item.target and is_within(item.target, c) for c in closed)]
    placeholders = [item for item in placeholders if not any(
        item.target and is_within(item.target, c) for c in closed)]
    return protected, placeholders, opened


def render(description: Description) -> str:
    """The text form, as shown before asking."""
    d = description
    cwd = d.working_directory
    if not d.working_directory_seen:
        cwd += "    (the sandbox would not see it: a run from here is refused)"
    lines = [f"spec: {d.spec}", f"working directory: {cwd}"]

    def section(title: str, items: list[Described], empty: str) -> None:
        lines.append(f"{title}:")
        if not items:
            lines.append(f"  {empty}")
        for item in items:
            shown = item.name if item.target in (None, item.name) else \
                f"{item.name} -> {item.target}"
            lines.append(f"  {shown}    ({item.why})")

    section("reads", d.read, "nothing but the system folders")
    section("writes", d.write, "nothing")
    section("hidden", d.hidden, "nothing")
    _home_lines(d.home_configuration, lines)
    section("read-only inside written folders", d.protected, "nothing")
    if d.placeholders:
        section("kept from being made for the run (placeholders)", d.placeholders, "")
    if d.opened:
        section("opened by the spec inside written folders", d.opened, "")
    if d.unwalked:
        section("not looked at (the walks at launch stopped at their bound; name a deeper "
                "folder in files.write to look there)", d.unwalked, "")
    if d.caches:
        section("private caches (lnk-sandbox's own, kept across runs; yours are not opened)",
                d.caches, "")
    if d.programs is None:
        lines.append("programs: any program (an allowed interpreter runs any code)")
    else:
        section("programs", d.programs, "none at all")
    network = {"none": "none (loopback only)", "host": "the host's network, all of it",
               "proxy": "only through the proxy, to: " + (", ".join(d.network_allow)
                                                          or "no name")}
    lines.append("limits:")
    lines.extend(f"  {limit}" for limit in d.limits)
    lines.append(f"network: {network.get(d.network_mode, d.network_mode)}")
    _network_lines(d, lines)
    if d.git_identity:
        lines.append(f"git identity: {d.git_identity} (your user.name and user.email, and "
                     "nothing else of your git settings)")
    lines.append("environment kept: " + (", ".join(d.env_keep) or "none"))
    for name, value in sorted(d.env_set.items()):
        lines.append(f"environment set: {name}={value}")
    if d.agent:
        lines.append(f"agent: {d.agent} (its own folder writable; other agents' hidden)")
    if d.namespaces is not None:
        lines.append("without namespaces (none can be made here, or LNK_NAMESPACES=off):")
        lines.extend(f"  {line}" for line in d.namespaces)
    if d.session:
        lines.append(f"session: {d.session}")
    from .terminal import shown_lines

    return shown_lines(lines)  # a name from a written folder is the sandbox's to choose


def _home_lines(home: HomeConfiguration | None, lines: list[str]) -> None:
    """Home's configuration: a read grant of home shows the person's files, not it."""
    if home is None:
        return
    lines.append(f"home's configuration ({home.home}): hidden, whatever its name; a read "
                 "grant of home shows your files, not it:")
    shown = ", ".join(home.hidden[:12]) + (
        f" and {len(home.hidden) - 12} more" if len(home.hidden) > 12 else "")
    lines.append(f"  hidden now: {len(home.hidden)} entries" + (f": {shown}" if shown else ""))
    lines.append("  shown: " + (", ".join(item.name for item in home.shown) or "nothing"))
    lines.append(f"  to show one, {home.how_to_show}")


def _network_lines(d: Description, lines: list[str]) -> None:
    """The rest of `[network]`: what the proxy refuses, ports, unix sockets."""
    if d.network_deny:
        lines.append("  refused even when allowed: " + ", ".join(d.network_deny))
    for port in d.network_forward:
        lines.append(f"  forwarded in: the host's loopback port {port}, at the sandbox's "
                     f"127.0.0.1:{port}    (network.forward)")
    for port in d.network_expose:
        lines.append(f"  exposed out: the sandbox's port {port}, at the host's "
                     f"127.0.0.1:{port}    (network.expose)")
    if d.network_unix is None:
        return
    if not d.network_unix:
        lines.append("  unix sockets: none (path sockets closed where the kernel can)")
    for item in d.network_unix:
        shown = item.name if item.target in (None, item.name) else \
            f"{item.name} -> {item.target}"
        if item.target is None:
            shown += " (missing: left out)"
        lines.append(f"  unix socket: {shown}    ({item.why})")
