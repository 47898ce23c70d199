"""A user's animation comes through Bake and Free Bake unchanged on Blender 4.4+ (slotted actions), in the oldest
and the newest bpy-module Blender of tools/blender_matrix.py from 4.4 on (5.0.1 on Python 3.11, 5.3.0 on Python
3.13; the slotted-action API is the same between them), each with the extension zip it takes installed in an
isolated profile (tests/blender_scripts/animation_kept.py).

The Sapling birch of sample_blends/white_birch.blend gets an action with three slots (its armature's, an Empty's
and one only an NLA strip uses) and two NLA tracks of pushed-down actions. Every action, slot, F-curve and key
(handles, interpolation), every ID's action and slot and every NLA track and strip is recorded:

* an armature whose own slot moves it, or whose NLA is in tweak mode, is refused by Bake and the scene is left
  as it was, while a location F-curve in the Empty's slot of the same action does not count as the armature's
  motion;
* Bake writes its keys into an action of its own (one slot, assigned to the armature) and leaves the user's
  actions key for key, the Empty's animation and the NLA as they were;
* Free Bake gives everything back exactly: the same actions, slots, F-curves and keys, the armature's action
  with its slot, the NLA, and the same evaluated Empty and bones.
"""

import functools
import time
import tomllib

import pytest

from blender_env import ROOT, build_zips, load_module, run_blender

SCRIPT = ROOT / "tests" / "blender_scripts" / "animation_kept.py"
TIMEOUT = 1800  # s, one Blender: install, open the birch, Convert, Bake 3 frames, Free Bake


matrix = load_module(ROOT / "tools" / "blender_matrix.py", "stiff_rods_blender_matrix")
_SLOTTED = [b for b in matrix.MATRIX if b.is_module and tuple(map(int, b.version.split("."))) >= (4, 4)]
SLOTTED = [_SLOTTED[0], _SLOTTED[-1]]  # CI time: ~2 min per Blender (install, numba compile, the birch)
PACKAGE_VERSION = tomllib.loads((ROOT / "blender_manifest.toml").read_text())["version"]
# what the script gives the scene: windAction (Sapling's), UserSway (3 slots), UserIdle
USER_ACTIONS = ["UserIdle", "UserSway", "windAction"]
BEFORE = {"actions": 3, "slots": 5, "fcurves": 15, "keys": 38, "nla_tracks": 2, "nla_strips": 3, "ids_with_action": 2}


@functools.cache
def _zips(base):
    out = base / "animation-kept-dist"
    out.mkdir()
    return {z.name: z for z in build_zips(out, "--platforms", "linux-x64", timeout=900)}


@functools.cache
def _run(version, base):
    blender = matrix.by_version(version)
    name = blender.zip_name(PACKAGE_VERSION)
    zips = _zips(base)
    assert name in zips, f"the build made no {name}: {sorted(zips)}"
    work = base / f"animation-kept-{version}"
    work.mkdir()
    t0 = time.perf_counter()
    out = run_blender([str(blender.python_exe), str(SCRIPT), str(zips[name])], work / "profile", "ANIM_KEPT", TIMEOUT)
    out["seconds"] = time.perf_counter() - t0
    print(f"Blender {version}: {out['seconds']:.0f} s, {out.get('before')}", flush=True)
    return out


@pytest.fixture(params=[b.version for b in SLOTTED])
def kept(request, tmp_path_factory):
    why = matrix.by_version(request.param).available()
    if why is not None:
        pytest.skip(f"Blender {request.param}: {why}")
    out = _run(request.param, tmp_path_factory.getbasetemp())
    assert "error" not in out, out["error"]
    assert out["blender"][:2] == [int(p) for p in request.param.split(".")[:2]], out["blender"]
    assert out["before"] == BEFORE, out["before"]
    return out


def test_bake_refuses_an_armature_its_own_slot_moves_and_changes_nothing(kept):
    r = kept["refused"]
    assert isinstance(r["outcome"], str) and "is moved by its own action 'UserSway'" in r["outcome"], r
    assert r["changed"] == [], r["changed"]
    assert r["after_removing_the_fcurve"] == [], r["after_removing_the_fcurve"]


def test_bake_refuses_an_armature_in_nla_tweak_mode_and_changes_nothing(kept):
    r = kept["tweak"]
    assert r["tweaking"] is True
    assert isinstance(r["outcome"], str) and "is in NLA tweak mode" in r["outcome"], r
    assert r["changed"] == [], r["changed"]
    assert r["after_leaving_tweak_mode"] == [], r["after_leaving_tweak_mode"]


def test_bake_writes_its_own_action_and_leaves_the_users_animation_as_it_was(kept):
    r = kept["bake"]
    assert r["convert"] == ["FINISHED"] and r["bake"] == ["FINISHED"], r
    # where the baked keys went: a new action of the add-on's, its one slot assigned to the armature
    assert r["baked_tagged"] and r["baked_action"] == "treeArm_StiffRods" and r["baked_action"] not in USER_ACTIONS
    assert r["baked_slots"] == [r["baked_slot"]] and r["baked_slot"].startswith("OB"), r
    assert r["baked_paths"] == [".rotation_quaternion"] and r["baked_fcurves"] % 4 == 0 and r["baked_fcurves"] > 0
    assert r["baked_frames"] == [1.0, 2.0, 3.0]
    # the user's actions key for key; the armature's own action held by a fake user while the bake replaces it
    assert r["user_actions"] == [], r["user_actions"]
    held, before = r["user_actions_kept_by"]["UserSway"], r["user_actions_before"]["UserSway"]
    assert before["fake_user"] is False and held["fake_user"] is True, (before, held)
    # the armature's slot waits unused for Free Bake; the Empty keeps its slot, the NLA strip the Spare slot
    assert before["slot_users"] == {"OBTree Sway": ["treeArm"], "OBProp Mover": ["UserEmpty"], "OBSpare": ["treeArm"]}
    assert held["slot_users"] == dict(before["slot_users"], **{"OBTree Sway": []}), held
    assert r["remembered"]["stiff_rods_previous_action"] == "UserSway"
    # the Empty's slot of the same action, every other ID and the armature's NLA untouched, the Empty still moves
    assert r["other_ids"] == [] and r["armature_nla"] == [] and r["empty_evaluated"] == [], r


def test_free_bake_gives_every_action_slot_key_and_strip_back_exactly(kept):
    r = kept["free"]
    assert r["outcome"] == ["FINISHED"], r
    assert r["actions"] == USER_ACTIONS
    assert r["differences"] == [], r["differences"]
    assert r["equal"] is True
    assert kept["after"] == kept["before"]
