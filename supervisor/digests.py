"""SHA-256 for what lnk-sandbox names by content (remembered permissions, git's files,
caches' scopes, the commit check's record), without loading OpenSSL.

hashlib loads OpenSSL first, which costs a start 2.5 to 5 ms; the interpreter's own
implementation gives the same digest: `_sha256` until Python 3.11, `_sha2` from 3.12.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hashlib import sha256
else:
    try:
        from _sha256 import sha256
    except ImportError:
        try:
            from _sha2 import sha256
        except ImportError:  # an interpreter built without them
            from hashlib import sha256

__all__ = ["sha256"]
