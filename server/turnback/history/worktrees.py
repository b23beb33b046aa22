"""A linked worktree's turns belong to that worktree, not to its name.

turnback keeps a linked worktree's refs under `refs/turnback/wt-<name>/` in the shared
repository and its state in the worktree's own git directory (`.git/worktrees/<name>/`).
`git worktree remove` deletes that directory but not the refs, so a new worktree given the
same name inherited the old one's timeline: `turnback undo` there wrote the removed
worktree's files over a checkout they never belonged to. A worktree's state directory now
holds a mark once turnback has used it; the refs found for a name whose state directory
has neither the mark nor any state turnback writes (a fresh worktree) are moved under
`refs/turnback/retired/`, where nothing is lost (their objects stay reachable) and no
timeline reads them.
"""

from __future__ import annotations

import time

from ..core.gitrefs import delete_ref, set_ref
from ..core.repository import REF_ROOT, WorkspaceRepo

#: The mark a worktree's state directory holds once turnback has used it.
MARK = "worktree"
#: What turnback writes in a state directory it has used (before the mark existed).
_USED = ("index", "members.json", "generation")


def claim_refs(ws: WorkspaceRepo) -> list[str]:
    """Retires the refs a removed worktree of the same name left (see above) and marks the
    state directory as this worktree's; returns the refs it retired. The caller holds the
    repository's lock."""
    if not ws.worktree_key.startswith("wt-") or ws.shadow:
        return []  # the main work tree, or a plain folder: the name is the place
    mark = ws.state_dir / MARK
    if mark.exists():
        return []
    retired: list[str] = []
    if not any((ws.state_dir / name).exists() for name in _USED):
        prefix = f"{ws.ref_prefix}/"
        aside = f"{REF_ROOT}/retired/{ws.worktree_key}-{time.time_ns()}/"
        for name in sorted(n for n in ws.repo.references if n.startswith(prefix)):
            target = ws.repo.references[name].resolve().target
            set_ref(ws.repo, aside + name[len(prefix) :], target, "retire worktree ref")
            delete_ref(ws.repo, name, "retire worktree ref")
            retired.append(name)
    ws.state_dir.mkdir(parents=True, exist_ok=True)
    mark.write_text(f"{ws.root}\n", encoding="utf-8", errors="surrogateescape")
    return retired
