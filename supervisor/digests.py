"""SHA-256 for what lnk-sandbox names by content (remembered permissions, git's files,
caches' scopes, the commit check's record), without loading OpenSSL.

hashlib loads OpenSSL first, which costs a start 2.5 to 5 ms; the interpreter's own
implementation gives the same digest: `_sha256` until Python 3.11, `_sha2` from 3.12
(both built by every CPython this supports).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hashlib import sha256
elif sys.version_info >= (3, 12):
    # Only the name this version ships is tried: a missing one would be looked for along
    # the whole sys.path, where a folder a sandbox writes could hold a module by it.
    from _sha2 import sha256
else:
    from _sha256 import sha256

__all__ = ["sha256"]
