"""The start server's first lines, run as a script (`python -P` or `python -I` on this
file, from `startsocket.start`): nothing of the project is imported before the module
path is the client's own (for the API, this installation's first), as the configuration
on descriptor 3 says; and the server leaves its parent at once (the client reaps it), so
that it is nobody's child: no caller's process tree, waited for by its own caller, ever
holds it."""

import json
import os
import sys


def _config() -> dict[str, object]:
    data = b""
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "little"):
        chunk = os.read(3, 1 << 16)
        if not chunk:
            os._exit(3)
        data += chunk
    found: dict[str, object] = json.loads(data[4:])
    return found


if __name__ == "__main__":
    os.chdir("/")
    if os.fork():
        os._exit(0)
    config = _config()
    paths = [str(entry) for entry in config["path"]]  # type: ignore[attr-defined]
    if config["mode"] == "cli":
        sys.path[:] = paths  # the command line's own, whole
    else:
        sys.path[:0] = paths  # the API's supervisor: this installation first, as -I has it
    from supervisor.linux.startserver import main

    main(config)
