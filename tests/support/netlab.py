"""A network of a test's own for the supervisor (support/lab.py), as a Sandbox to run.

`Lab(...).supervised(sandbox)` is the sandbox whose lnk-sandbox runs inside the lab: a
network namespace and a mount namespace of its own (made by root with unshare), standing
for the host, joined to a far network with servers on the addresses the test names, and
a DNS server answering the test's zone, so a test can point an allowed name at the
loopback, a private network, the metadata address or the host's own interface with a
real server there, without touching the host's network.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .sandbox import Sandbox

LAB = Path(__file__).resolve().parent / "lab.py"


@dataclass
class Lab:
    folder: Path
    zone: dict[str, list[list[str]]]
    addresses: list[str]
    prove: list[str] = field(default_factory=list)
    port: int = 8080
    https: dict[str, str] | None = None
    host_port: int | None = None  # the host's own service, on every address it has
    add_address: str | None = None  # what /lab/add-interface gives the host, mid-run

    def __post_init__(self) -> None:
        if os.geteuid() != 0:
            pytest.skip("a network namespace of the test's own needs root")

    @property
    def log_path(self) -> Path:
        return self.folder / "lab-log.json"

    def supervised(self, sandbox: Sandbox) -> Sandbox:
        config = self.folder / "lab.json"
        config.write_text(json.dumps({
            "zone": self.zone, "addresses": self.addresses, "prove": self.prove,
            "port": self.port, "log": str(self.log_path),
            **({"https": self.https} if self.https else {}),
            **({"host_port": self.host_port} if self.host_port else {}),
            **({"add_address": self.add_address} if self.add_address else {})}))
        config.chmod(0o644)
        prefix = ("unshare", "--mount", "--net", "--propagation", "private",
                  sys.executable, str(LAB), str(config), "--", *sandbox.who.prefix)
        return dataclasses.replace(sandbox, who=dataclasses.replace(sandbox.who,
                                                                   prefix=prefix))

    def log(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.log_path.read_text())
        return data
