"""The dynamic loader an ELF program names (PT_INTERP), read from its headers.

Landlock's execute right applies to the loader too: the kernel opens it for execution on
the program's behalf, so a program list must allow the loader of each listed program,
or none of them would start (checked on this kernel; see the reference, §4).
"""

from __future__ import annotations

import struct

_PT_INTERP = 3


def interpreter_of(path: str) -> str | None:
    """The PT_INTERP path of the ELF file at `path`; None for a static ELF or a script."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(64)
            if len(header) < 52 or header[:4] != b"\x7fELF":
                return None
            is_64 = header[4] == 2
            endian = "<" if header[5] == 1 else ">"
            if is_64:
                phoff, = struct.unpack_from(endian + "Q", header, 0x20)
                phentsize, phnum = struct.unpack_from(endian + "HH", header, 0x36)
            else:
                phoff, = struct.unpack_from(endian + "I", header, 0x1C)
                phentsize, phnum = struct.unpack_from(endian + "HH", header, 0x2A)
            if phnum > 256 or phentsize < (56 if is_64 else 32):
                return None
            handle.seek(phoff)
            table = handle.read(phentsize * phnum)
            for index in range(phnum):
                entry = table[index * phentsize:(index + 1) * phentsize]
                if len(entry) < phentsize:
                    return None
                kind, = struct.unpack_from(endian + "I", entry, 0)
                if kind != _PT_INTERP:
                    continue
                if is_64:
                    offset, = struct.unpack_from(endian + "Q", entry, 0x08)
                    size, = struct.unpack_from(endian + "Q", entry, 0x20)
                else:
                    offset, = struct.unpack_from(endian + "I", entry, 0x04)
                    size, = struct.unpack_from(endian + "I", entry, 0x10)
                if size > 4096:
                    return None
                handle.seek(offset)
                return handle.read(size).rstrip(b"\0").decode("utf-8", "surrogateescape")
    except OSError:
        return None
    return None

