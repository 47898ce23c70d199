"""Named Actions carried onto the game rig: one fit over every wind, one game action per wind.

A tree baked with Named Actions (addon/named_actions.py) has one action per wind on its own NLA track and no
active action. Its game rig is fitted once over the frames of all its winds together (the bones chosen and the
weights fitted for every motion the mesh must follow), then the fitted poses are split by wind: each wind's frames
are keyed into their own action on the game armature, ``<game armature>_<wind>``, pushed onto an NLA track named
after the wind (``calm``, ``breeze``, ``storm``, ``scene``), as on the tree, so glTF (NLA Tracks) and FBX (NLA
strips) export them as animations of those names.

Reading a wind plays its action alone (:func:`playing`): the armature's NLA tracks muted, the action assigned,
both given back afterwards.

Measured (tests/blender/test_blender_named_actions.py, Sapling's small pine, 16 bones, 12 frames per wind, Blender
3.4 and 5.0): vertex error RMS / max against the full rig per wind, calm 0.01 / 0.11 mm (sway 0.26 mm rms), breeze
0.06 / 0.71 mm (1.76 mm), storm 2.7 / 86 mm (20.4 mm).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass

import bpy
import numpy as np

from . import bake


@dataclass(frozen=True)
class Wind:
    """A named action of a tree: its NLA ``track`` (the wind's name), ``action`` and keyed ``frames`` (F,)."""

    track: str
    action: bpy.types.Action
    frames: np.ndarray


def tree_winds(arm) -> list[Wind]:
    """The named actions of the baked armature ``arm`` in their bake order, [] for a tree without them; a track or
    action the user removed is an error that names it."""
    if bake.NAMED_ACTIONS not in arm:
        return []
    out: list[Wind] = []
    for track, action_name in json.loads(arm[bake.NAMED_ACTIONS]):
        action = bpy.data.actions.get(action_name)
        anim = arm.animation_data
        if action is None or anim is None or anim.nla_tracks.get(track) is None:
            raise ValueError(
                f"'{arm.name}' has lost its named action '{action_name}' or NLA track '{track}': bake it again"
            )
        start, end = (round(v) for v in action.frame_range)
        out.append(Wind(track, action, np.arange(start, end + 1)))
    return out


def _assign(anim, action) -> None:
    anim.action = action
    if action is not None and getattr(anim, "action_slot", False) is None and len(action.slots):  # 4.4+ slots
        anim.action_slot = action.slots[0]


@contextlib.contextmanager
def playing(obj, action):
    """``obj`` animated by ``action`` alone inside the block (its NLA tracks muted); its action, slot and the
    tracks' mute flags given back after it."""
    anim = obj.animation_data_create()
    kept_action, kept_slot = anim.action, getattr(anim, "action_slot", None)
    muted = [t.mute for t in anim.nla_tracks]
    try:
        for t in anim.nla_tracks:
            t.mute = True
        _assign(anim, action)
        yield
    finally:
        anim.action = kept_action
        if kept_slot is not None:
            anim.action_slot = kept_slot
        for t, m in zip(anim.nla_tracks, muted, strict=True):
            t.mute = m


def read_winds(arm, winds: list[Wind], read):
    """(frames (ΣF,), positions (ΣF, V, 3), poses (ΣF, N, 3, 4), spans [(track, first, stop)]): ``read(frames)``
    → (positions, poses) with each wind's action playing alone, concatenated in the winds' order."""
    parts, spans, at = [], [], 0
    for w in winds:
        with playing(arm, w.action):
            parts.append(read(w.frames))
        spans.append((w.track, at, at + w.frames.size))
        at += w.frames.size
    frames = np.concatenate([w.frames for w in winds])
    return frames, np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), spans


def key_winds(game, tag: str, spans, key) -> list:
    """One action per wind on the game armature: ``key(name, rows)`` keys the rows (a slice of the fitted frames)
    into a new action ``name`` assigned to ``game``; each is pushed as a strip onto an NLA track named after its
    wind at its first frame, the armature left without an active action. The actions, in the winds' order."""
    actions = []
    anim = game.animation_data_create()
    for track_name, first, stop in spans:
        action = key(f"{tag}_{track_name}", slice(first, stop))
        actions.append(action)
        start = round(action.frame_range[0])
        track = anim.nla_tracks.new()
        track.name = track_name
        track.strips.new(track_name, start, action)
        anim.action = None
    return actions


def measure_winds(game, spans, frames: np.ndarray, evaluate) -> np.ndarray:
    """The game mesh's evaluated vertices (ΣF, V, 3) at every fitted frame: ``evaluate(frames)`` with each wind's
    game action playing alone (its track's strip action)."""
    anim = game.animation_data
    out = []
    for track_name, first, stop in spans:
        action = anim.nla_tracks[track_name].strips[0].action
        with playing(game, action):
            out.append(evaluate(frames[first:stop]))
    return np.concatenate(out)
