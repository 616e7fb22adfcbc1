"""The stages before any OS is asked: spec -> Spec -> Policy -> Snapshot.

Pure but for reading the spec and resolving its names (grants.py), and making the
folders of lnk-sandbox's own the snapshot names (an agent's, a session's, a cache's),
which a launch binds. Both backends and the hall's commands start from here.
"""

from __future__ import annotations

import os

from .grants import Snapshot, resolve
from .policy import Context, effective_policy
from .spec import Spec, load_spec
from .state import private_folder


def snapshot_for(spec_path: str | Spec | None, context: Context | None = None) -> Snapshot:
    """Load, validate and resolve a spec (a file's path, or one validated already): the
    snapshot a launch and a description use."""
    context = context or Context.current()
    spec = spec_path if isinstance(spec_path, Spec) else load_spec(spec_path)
    policy = effective_policy(spec, context)
    if spec.agent:
        private_folder(context.lnk_home, f"agents/{spec.agent}").close()
    if spec.session:
        private_folder(context.lnk_home, f"sessions/{spec.session}").close()
    snapshot = resolve(policy, context)
    for cache in snapshot.caches:  # made now, as an agent's folder is: they are bound
        private_folder(context.lnk_home,
                       os.path.relpath(cache.store, context.lnk_home)).close()
    return snapshot
