"""What a sandbox run by root is never given: its grants are its own there (idmapped).

Run by root, the sandbox runs as a uid of its own and sees its grants through idmapped
mounts (idmapped.py): root's files there are its own, and what it makes is root's. So a
write grant of a system folder would let it write what root's services run, of a shared
folder itself other services' files, and a grant showing a root daemon's socket would
make the sandbox that socket's owner. Each refuses the launch, saying what to grant
instead.
"""

from __future__ import annotations

from ..errors import LaunchError
from ..grants import Grant, Snapshot, deepest, is_within
from ..view import Laying, sees
from .layout import HostLayout

# Run by root, no write grant may be at or inside these: root's own services act on what
# is there as root's (cron jobs, units, the loader's preload list, package databases).
ROOT_SYSTEM_FOLDERS = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                       "/libx32", "/boot", "/opt", "/var", "/run", "/proc", "/sys", "/dev")
# ...nor a folder every user shares, itself (a folder inside one is fine).
SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")


def refuse_write_grants(grants: tuple[Grant, ...]) -> None:
    """Run by root, the sandbox owns the files of the folders it writes (idmapped): a
    system folder would let it write what root's services run, a shared folder itself
    other services' private files there."""
    for grant in grants:
        if grant.access != "write" or not grant.target:
            continue
        target = grant.target
        in_shared = any(is_within(target, t) and target != t for t in SHARED_FOLDERS)
        system = next((f for f in ROOT_SYSTEM_FOLDERS if is_within(target, f)), None)
        if target in SHARED_FOLDERS or (system and not in_shared):
            what = (f"the shared folder {target} itself" if target in SHARED_FOLDERS
                    else f"{target}, in {system}, which root's own services read")
            raise LaunchError(
                f"run by root, a sandbox owns the files of the folders it writes, and "
                f"{grant.key or grant.reason} ({grant.name}) is {what}",
                hint="grant a project folder of its own (a folder inside /tmp or /var/tmp "
                "is fine), or run lnk-sandbox as a user other than root")


def refuse_root_sockets(layout: HostLayout, grants: tuple[Grant, ...], laid: Laying,
                        snapshot: Snapshot) -> None:
    """Run by root, no grant may show a socket a root process listens on: the sandbox
    would be its owner there (grants are idmapped) and a daemon that trusts its
    socket's mode alone (Docker's) would do what it asks. A socket the spec hides, or
    names in [network] unix (the person's choice, bound on its own), is not refused.
    Judged on the view's grants, hides and caches as laid (`laid`), before the sockets
    found are hidden: a socket's hide comes off when its daemon binds it again."""
    named = {s.target for s in snapshot.network.sockets()}
    for path in layout.root_sockets:
        if not sees(laid.access(path)) or path in named:
            continue
        grant = deepest(path, ((g.target, g) for g in grants
                               if g.access in ("read", "write") and g.target))
        if grant is None or (grant.target == path and grant.access == "read"):
            continue  # named itself: bound as it is, not mapped (_idmapped)
        raise LaunchError(
            f"{path} is a socket a root process listens on, inside {grant.target} "
            f"({grant.key or grant.reason}): run by root, the sandbox would be its owner "
            "there and could connect to it",
            hint=f'hide it (files.hide = ["{path}"]) or its folder, grant a folder that '
            "holds no daemon's socket, or run lnk-sandbox as a user other than root",
        )
