"""What the operators check before they change anything, and the Session of the tree they act on.

A failure is a reader.ReadError naming the object and what to do, raised before anything in the scene
changes: the tree the operator acts on (:func:`active_tree`), another run of it in progress, Pin To on its own
parts, renamed bones, parts linked from a library, NLA tweak mode, and everything Bake refuses
(:func:`check_bake`). :func:`tree_session` gives the Session Convert built while nothing it was built from has
changed (:func:`up_to_date` says so to the panel).
"""

from __future__ import annotations

import time
import weakref

from . import bake, point_cache, reader
from .fingerprint import fingerprint
from .properties import own_parts
from .session import SESSIONS, Session

BUILT_FROM: weakref.WeakKeyDictionary[Session, bytes] = weakref.WeakKeyDictionary()  # session → its inputs
RUNNING: dict[str, str] = {}  # object name → "Simulate" or "Bake" while a modal run of it is in progress
_CHECKED: dict[int, tuple[float, bool]] = {}  # id(session) → (time, up to date) of the panel's last check


def active_tree(context):
    """The owner (Sapling armature, or curve) of the active object's tree or curve."""
    obj = context.active_object
    if obj is not None and obj.instance_type == "COLLECTION" and obj.instance_collection is not None:
        raise reader.ReadError(
            f"'{obj.name}' shows an instance of collection '{obj.instance_collection.name}': Stiff Rods simulates "
            "the tree's own objects; select them in the scene that holds the collection, or make the instance "
            "real (Object > Apply > Make Instances Real)"
        )
    curve, armature, _ = reader.find_parts(obj)
    return armature or curve


def tree_session(context, rebuild=False, owner=None) -> Session:
    """The Session of the selected tree or curve (or of ``owner``): the one Convert built while nothing it was
    built from has changed since (addon/fingerprint.py), else a new one."""
    owner = active_tree(context) if owner is None else owner
    key = fingerprint(owner, context.scene)
    s = SESSIONS.get(owner.name)
    if s is None or rebuild or BUILT_FROM.get(s) != key:
        check_pin_object(owner)
        check_bone_names(owner)
        try:
            s = Session(owner, context.scene)
        except ValueError as exc:
            if "joins two pinned segments" not in str(exc):
                raise
            raise reader.ReadError(pinned_neighbours_message(owner)) from None
        SESSIONS[owner.name] = s
        BUILT_FROM[s] = key
    return s


def up_to_date(s: Session, owner, scene, every: float = 1.0) -> bool:
    """False when something ``s`` was built from has changed since (the panel says so). Checked at most every
    ``every`` seconds: the panel redraws on every mouse move, a fingerprint takes 40 ms on the leafy birch."""
    now = time.monotonic()
    last = _CHECKED.get(id(s))
    if last is not None and now - last[0] < every:
        return last[1]
    try:
        ok = BUILT_FROM.get(s) == fingerprint(owner, scene)
    except (reader.ReadError, ReferenceError):
        ok = False
    _CHECKED.clear()  # one entry: the session the panel shows
    _CHECKED[id(s)] = (now, ok)
    return ok


def check_pin_object(owner) -> None:
    pin = owner.stiff_rods.pin_object
    role = own_parts(owner).get(pin) if pin is not None else None
    if role is not None:
        raise reader.ReadError(
            f"Pin To of '{owner.name}' is '{pin.name}', the tree's own {role}: a tree cannot be held by itself. "
            "Pick an object outside the tree (an Empty, a hand, a pole) or clear Pin To"
        )


def check_bone_names(owner) -> None:
    """A Sapling bone's branch is found by its name: a bone renamed (or added) under another name would stay
    behind unsimulated while a bake adds a second bone for its branch."""
    _, armature, _ = reader.find_parts(owner)
    if armature is None:
        return
    odd = [b.name for b in armature.data.bones if not reader.BONE_NAME.match(b.name)]
    if odd:
        more = f" (and {len(odd) - 1} more)" if len(odd) > 1 else ""
        raise reader.ReadError(
            f"Bone '{odd[0]}'{more} of the Sapling armature '{armature.name}' is not named bone<spline>.<point>: "
            "Stiff Rods finds each bone's branch by its name. Give it back its Sapling name, or move extra bones "
            "to another armature"
        )


def pinned_neighbours_message(owner) -> str:
    """Two kinematic segments that share a joint (the solver's "joint j joins two pinned segments"), in the
    user's words: which object holds the segment, and what to do."""
    pin = owner.stiff_rods.pin_object
    hooks = [m.object.name for m in getattr(owner, "modifiers", ()) if m.type == "HOOK" and m.object is not None]
    holders = ([f"Pin To '{pin.name}'"] if pin is not None else []) + [f"Hook '{h}'" for h in hooks]
    what = " and ".join(holders) or "Its pins"
    root = " or the pinned root (Pinned Root)" if owner.stiff_rods.pin_root else ""
    return (
        f"'{owner.name}': {what} holds a segment right next to another held segment (another pin{root}), so "
        "the joint between them cannot move. Move the pin object along the tree, away from the root and from "
        "the other pins" + (", or turn off Pinned Root" if root else "")
    )


def check_not_running(owner_name: str) -> None:
    run = RUNNING.get(owner_name)
    if run is not None:
        raise reader.ReadError(
            f"'{owner_name}' is already running a {run}: wait for it to finish or press Esc to stop it first"
        )


def _refuse_linked(part, what: str) -> None:
    if part is not None and part.library is not None:
        raise reader.ReadError(
            f"'{part.name}' is linked from the library '{part.library.filepath}' and cannot be changed here, "
            f"so {what} cannot write to it: make a library override (Object > Library Override > Make) "
            "or make it local (Object > Relations > Make Local)"
        )


def check_editable(s: Session, what: str) -> None:
    """Refuse, before anything changes, to write into data linked from a library (read-only here)."""
    src = s.source
    parts: list = [src.armature] if src.armature is not None else [src.curve, src.curve.data]
    if s.leaf_mesh is not None and src.leaves is not None:
        parts += [src.leaves] + ([src.leaves.data] if what == "Simulate" else [])
    for part in parts:
        _refuse_linked(part, what)


def check_not_tweaking(holder, what: str) -> None:
    """Refuse while ``holder``'s NLA is in tweak mode: its action cannot be swapped then (Blender refuses)."""
    anim = holder.animation_data
    if anim is not None and anim.use_tweak_mode:
        raise reader.ReadError(
            f"'{holder.name}' is in NLA tweak mode (editing the strip of '{anim.action.name if anim.action else ''}'): "
            f"{what} swaps its action, which Blender does not allow then; leave tweak mode first "
            "(Nonlinear Animation editor: Edit > Stop Tweaking Strip Actions, Tab)"
        )


def check_bake(owner) -> None:
    """Refuse, with a reader.ReadError naming the object, a tree or curve (``owner``: its Sapling armature, or
    the curve) that Bake cannot bake, before anything changes: another run of it in progress, Pin To on its
    own parts, renamed bones, parts linked from a library, a leaves point cache that cannot be written, a bake
    not freed, an armature moved by its own action. Bake checks its tree with it, a forest bake every tree
    (addon/forest.py); building the model checks the rest (transforms, spans, settings)."""
    check_not_running(owner.name)
    check_pin_object(owner)
    check_bone_names(owner)
    curve, armature, leaves = reader.find_parts(owner)
    leaves = leaves if armature is not None and owner.stiff_rods.use_leaves else None
    parts: list = [armature] if armature is not None else [curve, curve.data]
    for part in parts + [leaves]:
        _refuse_linked(part, "Bake")
    check_not_tweaking(armature or curve.data, "Bake")
    try:
        if leaves is not None:
            point_cache.check_writable(leaves.name)
        bake.check_own_motion(armature)
    except ValueError as exc:
        raise reader.ReadError(str(exc)) from None
    if bake.baked_action(armature or curve.data) is not None:
        raise reader.ReadError(f"'{owner.name}' already has a Stiff Rods bake: Free Bake first")
    if bake.NAMED_ACTIONS in owner:
        raise reader.ReadError(f"'{owner.name}' already has a Stiff Rods bake (Named Actions): Free Bake first")
    if any(k in owner for k in bake.BAKE_MARKS):  # a new bake would record the old bake's state as the user's
        raise reader.ReadError(
            f"'{owner.name}' still holds what its last bake changed (its baked action was unlinked): "
            "Free Bake first, it gives the rotation modes, added bones and leaves back"
        )
