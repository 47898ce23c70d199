"""The add-on's bpy-free modules, imported without Blender: ``addon`` as a bare package whose ``__init__``
(which registers the add-on with bpy) is not run, inside a package of its own name whose ``solver`` is the
top-level ``solver`` the other tests import (one copy of the solver, and numba's kernel cache keeps the module
names it was compiled under)."""

import importlib
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "_stiff_rods_nobpy"
PURE_MODULES = (
    "spec",
    "settings",
    "builder",
    "kinematics",
    "leaf_skinning",
    "bone_maps",
    "frames",
    "bake_record",
    "loop",
    "skin_fit",
    "pivot_painter",
    "texture_files",
    "variants",
    "forest_layers",
    "preview_record",
)


def load_package() -> str:
    """Import the repository as ``PACKAGE`` with a bare ``PACKAGE.addon``; returns ``PACKAGE``."""
    if PACKAGE not in sys.modules:
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        root = types.ModuleType(PACKAGE)
        root.__path__ = [str(ROOT)]
        sys.modules[PACKAGE] = root
        sys.modules[f"{PACKAGE}.solver"] = importlib.import_module("solver")
        addon = types.ModuleType(f"{PACKAGE}.addon")
        addon.__path__ = [str(ROOT / "addon")]
        addon.__package__ = f"{PACKAGE}.addon"
        sys.modules[addon.__name__] = addon
    return PACKAGE


@pytest.fixture(scope="session")
def addon():
    """``addon(name)``: the add-on module ``name`` (one of PURE_MODULES), imported without bpy."""
    package = load_package()
    return lambda name: importlib.import_module(f"{package}.addon.{name}")
