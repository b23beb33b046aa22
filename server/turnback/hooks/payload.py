"""A harness's hook JSON, mapped to one turnback capture.

The session is `<harness>:<the harness's session id>` so that two agents on one
repository never share a timeline; the label is the prompt's first non-empty line;
the metadata carries what a later undo needs to tell the user which prompt to
rewind to.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

from .harnesses import Harness
from .hookstate import work_tree, working_dir

#: The engine's session name limit, minus room for the harness prefix.
_MAX_SESSION_ID = 180
#: A label is for lists and lenses: one line, bounded.
_MAX_LABEL = 200


class PayloadError(ValueError):
    """The hook's stdin is not what the harness documents."""


@dataclass(frozen=True)
class HookCall:
    """One capture a hook asks for."""

    cwd: str
    session: str
    phase: str
    label: str | None
    metadata: dict[str, Any]
    #: a "before" the harness sent to go on with the last prompt's turn (harnesses.py)
    continuation: bool = False
    #: The other roots of a multi-root workspace (Cursor's, Cline's): each is captured too.
    other_roots: tuple[str, ...] = ()
    #: Set on the call for one of those roots (`per_root`).
    other_root: bool = False

    @property
    def note_key(self) -> str:
        """What the hook's note and claim for this call's root are kept under (hookstate.py):
        another root's are keyed by its folder too, as plain folders all keep theirs in the
        user's state folder."""
        return f"{self.session}\n{self.cwd}" if self.other_root else self.session

    def per_root(self) -> list[HookCall]:
        """This call, then one per other root: each root's turn is its own work tree's, in
        the same session."""
        return [dataclasses.replace(self, other_roots=())] + [
            dataclasses.replace(
                self,
                cwd=root,
                metadata={**self.metadata, "cwd": _text(root)},
                other_roots=(),
                other_root=True,
            )
            for root in self.other_roots
        ]

    def params(self) -> dict[str, Any]:
        """The `snapshot/capture` params (protocol.md) for this call."""
        params: dict[str, Any] = {"session": self.session, "phase": self.phase}
        if self.phase == "before":  # an "after" with metadata would replace the turn's
            params["metadata"] = self.metadata
        if self.label is not None:
            params["label"] = self.label
        return params


def _dig(payload: dict[str, Any], keys: tuple[str, ...]) -> Any:
    value: Any = payload
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def first_line(prompt: str) -> str:
    """The prompt's first non-empty line, trimmed and bounded."""
    for line in prompt.splitlines():
        if line.strip():
            # Half an emoji (a lone surrogate from a cut JSON string) is no label's reason
            # to lose the turn: it becomes U+FFFD, as a decoder would make it.
            text = (
                " ".join(line.split()).encode("utf-8", "surrogatepass").decode("utf-8", "replace")
            )
            return text if len(text) <= _MAX_LABEL else text[: _MAX_LABEL - 1] + "…"
    return ""


def _text(value: str) -> str:
    """`value` as valid Unicode: a folder whose name is not UTF-8 (decoded with escapes),
    or a lone surrogate a JSON payload may hold, would make the turn's metadata refused
    and the turn unrecorded. Each such code point becomes U+FFFD."""
    for errors in ("strict", "surrogateescape", "surrogatepass"):
        try:
            raw = value.encode("utf-8", errors)
        except UnicodeEncodeError:
            continue
        return value if errors == "strict" else raw.decode("utf-8", "replace")
    return value  # unreachable: "surrogatepass" encodes every code point


def _cwd(harness: Harness, payload: dict[str, Any]) -> str:
    for key in harness.cwd_keys:
        value = payload.get(key)
        if isinstance(value, list):
            value = next((v for v in value if isinstance(v, str) and v), None)
        if isinstance(value, str) and value and os.path.isdir(value):
            return value
    here = working_dir()
    if here is None:
        raise PayloadError("its working folder was deleted, and the payload names no other")
    return here


def _other_roots(harness: Harness, payload: dict[str, Any], cwd: str) -> tuple[str, ...]:
    """The other folders a multi-root workspace names, in its order, leaving out any whose
    work tree is one already taken or lies inside one (captured with it, as a nested
    repository or a plain subfolder)."""
    taken = [work_tree(cwd)]
    roots: list[str] = []
    for key in harness.cwd_keys:
        value = payload.get(key)
        for root in value if isinstance(value, list) else ():
            if not (isinstance(root, str) and root and os.path.isdir(root)):
                continue
            top = work_tree(root)
            if any(top == t or t in top.parents for t in taken):
                continue
            taken.append(top)
            roots.append(root)
    return tuple(roots)


def map_payload(harness: Harness, event: str, payload: Any) -> HookCall:
    """The capture `payload` (the harness's stdin JSON for `event`) asks for."""
    phase = harness.phase(event)
    if phase is None:
        raise PayloadError(f"{harness.name} has no hook event {event!r}")
    if not isinstance(payload, dict):
        raise PayloadError("stdin is not a JSON object")
    session_id = next(
        (
            payload[k]
            for k in harness.session_keys
            if isinstance(payload.get(k), (str, int))
            and not isinstance(payload[k], bool)  # (`true` is no conversation id)
            and str(payload[k])
        ),
        None,
    )
    if session_id is None:
        raise PayloadError(f"no session id ({' or '.join(harness.session_keys)}) in stdin")
    session_id = _text(str(session_id).replace("\0", ""))[:_MAX_SESSION_ID]
    cwd = _cwd(harness, payload)
    metadata: dict[str, Any] = {"harness": harness.name, "sessionId": session_id}
    for key, name in harness.id_keys.items():
        value = payload.get(key)
        if isinstance(value, (str, int)):
            metadata[name] = _text(value) if isinstance(value, str) else value
    metadata["cwd"] = _text(cwd)  # shown to people; the capture runs in `cwd` itself
    label = None
    continuation = False
    if phase == "before":
        prompt = next(
            (p for p in (_dig(payload, k) for k in harness.prompt_keys) if isinstance(p, str)),
            None,
        )
        starts = harness.continuations
        continuation = bool(starts) and prompt is not None and prompt.startswith(starts)
        label = first_line(_text(prompt)) if prompt is not None else None
        label = label or None
        if label is not None:
            metadata["prompt"] = label
    return HookCall(
        cwd=cwd,
        session=f"{harness.name}:{session_id}",
        phase=phase,
        label=label,
        metadata=metadata,
        continuation=continuation,
        other_roots=_other_roots(harness, payload, cwd),
    )
