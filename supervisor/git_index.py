"""git's index, read for its gitlinks (submodules) as git reads it, without running git.

At a start the index lies in a git directory an earlier sandbox may have written, so it
is read here, never by running git there (which would run its settings); after a run it
is listed by git itself (commit_check.py).
"""

from __future__ import annotations

import os

from .host_walk import read_small

MAX_INDEX_SIZE = 256 << 20  # a git index read for its gitlinks: what a huge repository's is

_GITLINK = 0o160000
_GITLINK_BYTES = _GITLINK.to_bytes(4, "big")  # the mode as the index stores it


def gitlinks(index: str, sha256: bool) -> list[str]:
    """The paths of the gitlinks (submodules) in a git index file, read as git reads it.

    The index format (gitformat-index, and read-cache.c's create_from_disk, which is
    what counts): "DIRC", version 2-4, the entry count; each entry 40 bytes of stat data
    (the mode at offset 24), the object name, 16 bits of flags whose low 12 bits are the
    name's length (0xFFF: longer, then up to a NUL), 16 more when the extended bit is set
    (in any version: git does not check), then the name: in versions 2 and 3 that many
    bytes, the entry padded to a multiple of 8 whatever the padding holds; in version 4
    a varint of bytes to strip from the previous name and the rest, NUL-terminated. A
    split index keeps the rest of its entries in the `sharedindex.<name>` file its
    "link" extension names: both are read. Without the gitlink mode anywhere in the file
    (the common case) nothing is parsed. A file that does not parse yields what was read
    before the fault: git refuses such an index too, and runs nothing in a submodule.

    After a run the index is listed by git itself (commit_check.py); this reader serves
    the start, where finding more than git would only protects more.
    """
    data = read_small(index, limit=MAX_INDEX_SIZE)
    if data is None:
        return []
    oid = 32 if sha256 else 20
    if data[:4] != b"DIRC" or (_GITLINK_BYTES not in data and not _may_split(data, oid)):
        return []
    found: list[str] = []
    try:
        version = int.from_bytes(data[4:8], "big")
        count = int.from_bytes(data[8:12], "big")
        if version not in (2, 3, 4):
            return []
        position, previous = 12, b""
        for _ in range(count):
            path, size = _index_entry(data, position, oid, version, previous)
            if position + size > len(data) - oid:
                raise IndexError("an entry past the end")
            mode = int.from_bytes(data[position + 24:position + 28], "big")
            position += size
            previous = path
            if mode & 0o170000 == _GITLINK:
                found.append(os.fsdecode(path.split(b"\0", 1)[0]))
        shared = _shared_index(data, position, oid)
    except (IndexError, ValueError):
        return found
    if shared:
        found.extend(gitlinks(os.path.join(os.path.dirname(index), shared), sha256))
    return found


_NAME_MASK, _EXTENDED = 0x0FFF, 0x4000


def _index_entry(data: bytes, position: int, oid: int, version: int, previous: bytes
                 ) -> tuple[bytes, int]:
    """One entry's name and its size on disk, as read-cache.c's create_from_disk reads
    them (ValueError or IndexError where git would die)."""
    flags_at = position + 40 + oid
    if flags_at + 2 > len(data):
        raise IndexError("a truncated entry")
    flags = int.from_bytes(data[flags_at:flags_at + 2], "big")
    length = flags & _NAME_MASK
    name_at = flags_at + (4 if flags & _EXTENDED else 2)
    if version == 4:
        strip, name_at = _varint(data, name_at)
        if position != 12 and strip > len(previous):
            raise ValueError("a name that strips more than the previous one has")
        kept = len(previous) - strip if position != 12 else 0
        if length == _NAME_MASK:
            length = data.index(b"\0", name_at) - name_at + kept
        if length < kept:
            raise ValueError("a name shorter than what it keeps")
        rest = data[name_at:name_at + length - kept]
        return previous[:kept] + rest, name_at - position + length + 1 - kept
    if length == _NAME_MASK:
        length = data.index(b"\0", name_at) - name_at
    name = data[name_at:name_at + length]
    fixed = 40 + oid + (4 if flags & _EXTENDED else 2)
    return name, (fixed + length + 8) & ~7


def _may_split(data: bytes, oid: int) -> bool:
    """Whether a "link" extension header may be in the index: the signature followed
    by a size that fits (a path holding "link" is followed by text, a size far too
    big). Never False for a split index; rarely True for another."""
    at = data.find(b"link", 12)
    while at != -1:
        size = int.from_bytes(data[at + 4:at + 8], "big")
        if oid <= size <= len(data) - at - 8:
            return True
        at = data.find(b"link", at + 1)
    return False


def _varint(data: bytes, position: int) -> tuple[int, int]:
    """git's offset varint (varint.c); (value, the position after it)."""
    byte = data[position]
    position += 1
    value = byte & 0x7F
    while byte & 0x80:
        value += 1
        byte = data[position]
        position += 1
        value = (value << 7) + (byte & 0x7F)
    return value, position


def _shared_index(data: bytes, position: int, oid: int) -> str | None:
    """The `sharedindex.<name>` file a split index's "link" extension names, if any."""
    end = len(data) - oid  # the trailing checksum
    while position + 8 <= end:
        signature = data[position:position + 4]
        size = int.from_bytes(data[position + 4:position + 8], "big")
        if signature == b"link":
            name = data[position + 8:position + 8 + oid]
            if len(name) == oid and any(name):
                return "sharedindex." + name.hex()
            return None
        position += 8 + size
    return None
