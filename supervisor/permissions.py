"""Remembered permissions and saved snapshots, in `$LNK_HOME`.

A snapshot a person allowed is remembered by its content: the digest of what it grants
(targets, access, programs, network, environment), not of the spec's text, so changing
where a `~/link` grant points asks again, and two specs granting the same ask once.
`$LNK_HOME` is hidden from every sandbox, so no sandbox can allow itself anything.

A person may also allow a spec for a folder and every folder inside it (one answer for
`~/src/...`: `lnk sandbox allow --spec FILE --for ~/src`, or `b` when asked). Such an
allowance is kept by the digest of the snapshot's *relative form*: the working directory
left out, and each grant named from it (`.`, `./out`) whose target lies inside it
written relative to it (`.`, `./out`). A snapshot made anywhere is allowed by it when its
relative form is the same (every other grant, its target too, and everything else the
digest covers, exactly the same) and its working directory is that folder or inside it.
A `./link` grant that resolves outside the working directory keeps its absolute target
in the relative form: it matches only where it resolves to that very target. So nothing
is allowed that the person's answer did not cover but where the working directory is.

A wrapped command saves its snapshot as `snapshots/ID.json`, ID being its digest: a
launch from it checks that the file still hashes to its name and that its permission is
remembered, and refuses with a clear message when either fails (removed, tampered with).
"""

from __future__ import annotations

import json
import os
from typing import Any

from .digests import sha256
from .errors import LaunchError, NotAllowedError
from .grants import Snapshot, home_rule_due, is_within
from .home_config import REOPENED_REASON
from .state import is_file, read, write_atomically

# What a digest covers: what the sandbox may do. Where the spec wrote it (file, key,
# line, the reason a rule exists) does not change what is allowed, nor does whether a
# folder that is hidden exists yet ($LNK_HOME appears after the first run): hides and
# lnk-sandbox's own read-only protections count by name, grants by name and target.
_GRANT_FIELDS = ("name", "target", "access", "dot_files_writable", "is_dir")
_CLOSING_FIELDS = ("name", "access")


def _allowed_content(snapshot: Snapshot) -> dict[str, Any]:
    data = snapshot.plain()
    data.pop("source", None)
    data["grants"] = [
        {k: g[k] for k in (_GRANT_FIELDS if g["access"] in ("read", "write")
                           and g["reason"] != REOPENED_REASON else _CLOSING_FIELDS)}
        | ({"commit": True} if g.get("commit") else {})  # absent before files.commit
        | ({"opened": list(g["opened"])} if g.get("opened") else {})  # one by one
        for g in data["grants"]
    ]
    # Home's configuration hidden under a read grant of home, and the places of code it
    # reopens (home_config.py): by name, as hides are (lnk-sandbox's own list, walked
    # without links, so where one is shows nothing new); absent from other specs.
    patterns = data.pop("patterns", [])
    if patterns:
        data["patterns"] = [{k: p[k] for k in _CLOSING_FIELDS} for p in patterns]
    caches = data.pop("caches")
    if caches:  # absent from specs without files.caches
        data["caches"] = [{k: c[k] for k in ("name", "path", "store")} for c in caches]
    data.pop("limits", None)  # limits narrow what a run may use, never what it may reach
    network = data.pop("network")
    # absent from specs without its keys (allow is counted among the settings, flat)
    if snapshot.network._replace(allow=()) != type(snapshot.network)():
        if network["unix"] is not None:
            network["unix"] = [{k: u[k] for k in ("name", "target", "variable")}
                               for u in network["unix"]]
        data["network"] = network
    return data


def digest(snapshot: Snapshot) -> str:
    text = json.dumps(_allowed_content(snapshot), sort_keys=True, separators=(",", ":"))
    return sha256(text.encode()).hexdigest()


def _permission_name(key: str) -> str:
    return f"permissions/{key}"


def relative_digest(snapshot: Snapshot) -> str:
    """The digest of the snapshot's relative form (the module's docstring): what an
    allowance for a folder and the folders inside it is kept by."""
    content = _allowed_content(snapshot)
    cwd = content.pop("cwd")
    for grant in content["grants"]:
        name, target = grant["name"], grant.get("target")
        if (name == "." or name.startswith("./")) and isinstance(target, str) and \
                is_within(target, cwd):
            grant["target"] = "." + target[len(cwd):] if target != cwd else "."
    text = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return sha256(text.encode()).hexdigest()


def _below_name(key: str) -> str:
    return f"permissions/below-{key}"


def allowed_below(snapshot: Snapshot) -> str | None:
    """The folder an allowance for it and the folders inside it covers this snapshot
    by (its working directory is there, and its relative form is the one allowed);
    None when there is none."""
    data = read(snapshot.lnk_home, _below_name(relative_digest(snapshot)))
    if data is None:
        return None
    try:
        folders = json.loads(data.decode())["folders"]
    except (ValueError, KeyError, TypeError):
        return None
    cwd = os.path.realpath(snapshot.cwd)
    return next((f for f in folders if isinstance(f, str) and is_within(cwd, f)), None)


def remembered(snapshot: Snapshot) -> bool:
    """Allowed before: this exact snapshot, or one like it for a folder holding its
    working directory."""
    return is_file(snapshot.lnk_home, _permission_name(digest(snapshot))) or \
        allowed_below(snapshot) is not None


def remember_below(snapshot: Snapshot, description_text: str) -> None:
    """Keep the person's yes for the snapshot's working directory and every folder
    inside it (the snapshot resolved there: its description is what they were shown)."""
    name = _below_name(relative_digest(snapshot))
    folder = os.path.realpath(snapshot.cwd)
    folders: list[str] = []
    data = read(snapshot.lnk_home, name)
    if data is not None:
        try:
            folders = [f for f in json.loads(data.decode())["folders"] if isinstance(f, str)]
        except (ValueError, KeyError, TypeError):
            folders = []
    if folder not in folders:
        folders.append(folder)
    record = {"folders": sorted(folders), "description": description_text}
    try:
        write_atomically(snapshot.lnk_home, name, json.dumps(record, indent=1).encode())
    except OSError as err:
        raise LaunchError(
            f"cannot remember the permission in {snapshot.lnk_home}: {err.strerror}",
            hint="free some space, or make $LNK_HOME writable", errno=err.errno) from None


def remember(snapshot: Snapshot, description_text: str) -> None:
    """Keep the person's yes, with what they were shown."""
    try:
        write_atomically(snapshot.lnk_home, _permission_name(digest(snapshot)),
                         description_text.encode())
    except OSError as err:
        raise LaunchError(
            f"cannot remember the permission in {snapshot.lnk_home}: {err.strerror}",
            hint="free some space, or make $LNK_HOME writable", errno=err.errno) from None


def save_snapshot(snapshot: Snapshot) -> str:
    """Save a wrapped command's snapshot; its ID (the digest of the file's content)."""
    text = snapshot.to_json()
    key = sha256(text.encode()).hexdigest()[:32]
    try:
        write_atomically(snapshot.lnk_home, f"snapshots/{key}.json", text.encode())
    except OSError as err:
        raise LaunchError(f"cannot save the snapshot in {snapshot.lnk_home}: {err.strerror}",
                          errno=err.errno) from None
    return key


def load_snapshot(lnk_home: str, key: str) -> Snapshot:
    """A saved snapshot, checked whole; LaunchError names what is wrong."""
    if not key or len(key) != 32 or any(c not in "0123456789abcdef" for c in key):
        raise LaunchError(f"{key!r} is not a snapshot ID (32 hex digits, as wrap prints)")
    path = os.path.join(lnk_home, "snapshots", f"{key}.json")
    try:
        data = read(lnk_home, f"snapshots/{key}.json")
    except OSError as err:
        raise LaunchError(f"cannot read {path}: {err.strerror}", errno=err.errno) from None
    if data is None:
        raise LaunchError(f"no saved snapshot {key} in {lnk_home}/snapshots",
                          hint="wrap the command again (lnk sandbox wrap)")
    if sha256(data).hexdigest()[:32] != key:
        raise LaunchError(f"{path} was changed since it was saved, so it is not used",
                          hint="wrap the command again (lnk sandbox wrap)")
    try:
        snapshot = Snapshot.from_json(data.decode())
    except (ValueError, KeyError, TypeError) as err:
        raise LaunchError(f"{path} is not a snapshot lnk-sandbox can read: {err}",
                          hint="wrap the command again (lnk sandbox wrap)") from None
    if home_rule_due(snapshot):
        raise LaunchError(f"{path} was saved before a read grant of home hid home's "
                          "configuration (its dot entries), so it is not used",
                          hint="wrap the command again (lnk sandbox wrap)")
    if os.path.realpath(snapshot.lnk_home) != os.path.realpath(lnk_home):
        raise LaunchError(f"{path} belongs to another $LNK_HOME ({snapshot.lnk_home})")
    if not remembered(snapshot):
        raise NotAllowedError(f"the snapshot {key} was never allowed, or its permission was "
                              "removed", hint="wrap the command again and allow it")
    return snapshot
