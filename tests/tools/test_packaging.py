"""Packaging checks: extension manifest, legacy bl_info, CI script.

The root ``__init__.py`` is parsed with ``ast`` rather than imported, so these
tests run without Blender (``bpy``) installed.
"""

import ast
import os
import re
import stat
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "blender_manifest.toml"
ROOT_INIT = ROOT / "__init__.py"
CI_RUN = ROOT / ".ci" / "run"
TYPECHECK = ROOT / ".ci" / "typecheck"
PYPROJECT = ROOT / "pyproject.toml"
README = ROOT / "README.md"
TEST_COMMAND = ".venv/bin/python -m pytest -q tests"

# Blender's add-on tag list (scripts/modules/_bpy_internal/extensions/tags.py).
ALLOWED_ADDON_TAGS = {
    "All",
    "3D View",
    "Add Curve",
    "Add Mesh",
    "Animation",
    "Bake",
    "Camera",
    "Compositing",
    "Development",
    "Game Engine",
    "Geometry Nodes",
    "Grease Pencil",
    "Import-Export",
    "Lighting",
    "Material",
    "Mesh",
    "Modeling",
    "Node",
    "Object",
    "Paint",
    "Physics",
    "Pipeline",
    "Render",
    "Rigging",
    "Scene",
    "Sculpt",
    "Sequencer",
    "System",
    "Text Editor",
    "Tracking",
    "User Interface",
    "UV",
}

SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")


def _version_tuple(text):
    assert SEMVER.match(text), f"not a MAJOR.MINOR.PATCH version: {text!r}"
    return tuple(int(part) for part in text.split("."))


@pytest.fixture(scope="module")
def manifest():
    with MANIFEST.open("rb") as fh:
        return tomllib.load(fh)


@pytest.fixture(scope="module")
def bl_info():
    tree = ast.parse(ROOT_INIT.read_text(encoding="utf-8"), filename=str(ROOT_INIT))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "bl_info" for target in node.targets
        ):
            return ast.literal_eval(node.value)
    pytest.fail("bl_info assignment not found in root __init__.py")


REQUIRED_STR_KEYS = (
    "schema_version",
    "id",
    "version",
    "name",
    "tagline",
    "maintainer",
    "type",
    "blender_version_min",
)


@pytest.mark.parametrize("key", REQUIRED_STR_KEYS)
def test_manifest_required_string_keys(manifest, key):
    assert isinstance(manifest.get(key), str), f"{key} missing or not a string"
    assert manifest[key].strip(), f"{key} is empty"


def test_manifest_values(manifest):
    assert manifest["schema_version"] == "1.0.0"
    assert manifest["id"] == "stiff_rods"
    assert manifest["id"].isidentifier()
    assert manifest["type"] == "add-on"
    _version_tuple(manifest["version"])
    assert _version_tuple(manifest["blender_version_min"]) >= (4, 2, 0)


def test_manifest_tagline(manifest):
    tagline = manifest["tagline"]
    assert len(tagline) <= 64
    assert tagline[-1].isalnum() or tagline[-1] in ")]}", "tagline must not end with punctuation"


def test_manifest_lists(manifest):
    for key in ("license", "tags", "copyright"):
        value = manifest.get(key)
        assert isinstance(value, list) and value, f"{key} must be a non-empty list"
        assert all(isinstance(item, str) and item for item in value), key
    assert all(item.startswith("SPDX:") for item in manifest["license"])
    assert set(manifest["tags"]) <= ALLOWED_ADDON_TAGS


def test_manifest_build_excludes_dev_folders(manifest):
    patterns = manifest["build"]["paths_exclude_pattern"]
    assert isinstance(patterns, list)
    for folder in ("tests", "benchmarks", "sample_blends", "tools", "wheels"):
        assert any(folder in pattern for pattern in patterns), folder
    assert ".*" in patterns  # hidden files and folders: .ci/, .git/, ...
    assert "__pycache__/" in patterns


def test_bl_info(bl_info, manifest):
    for key in ("name", "blender", "category", "version"):
        assert key in bl_info, key
    assert bl_info["name"] == manifest["name"]
    assert isinstance(bl_info["blender"], tuple) and len(bl_info["blender"]) == 3
    assert bl_info["version"] == _version_tuple(manifest["version"])


def test_ci_run_script():
    assert CI_RUN.is_file()
    assert os.access(CI_RUN, os.X_OK)
    assert CI_RUN.stat().st_mode & stat.S_IXUSR
    assert TEST_COMMAND in CI_RUN.read_text(encoding="utf-8")


def test_ci_installs_blender_and_bpy():
    """The install tests (tests/blender/test_install.py) need Debian's Blender (with numba for the compiled solver)
    and the bpy module in CI."""
    text = CI_RUN.read_text(encoding="utf-8")
    for apt_package in ("blender", "python3-numpy", "python3-scipy", "python3-numba", "libgl1"):
        assert apt_package in text, apt_package
    assert "pip install" in text and "requirements-dev.txt" in text
    requirements = (ROOT / "requirements-dev.txt").read_text(encoding="utf-8")
    assert re.search(r"^bpy==\d+\.\d+\.\d+", requirements, flags=re.MULTILINE)


def test_readme_documents_test_command():
    if not README.exists():
        pytest.skip("README.md not written yet")
    assert TEST_COMMAND in README.read_text(encoding="utf-8")


def _requirement_lines(path):
    """Requirement lines of a pip requirements file, without comments and `-r` includes."""
    lines = (line.split(" #")[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith(("#", "-r"))]


def test_pyproject_matches_manifest_and_requirements(manifest):
    """pyproject.toml repeats what the manifest and the requirements files say; they must agree."""
    with PYPROJECT.open("rb") as fh:
        project = tomllib.load(fh)["project"]
    assert project["version"] == manifest["version"]
    assert ["SPDX:" + project["license"]] == manifest["license"]
    assert project["dependencies"] == _requirement_lines(ROOT / "requirements.txt")
    extras = project["optional-dependencies"]
    assert extras["dev"] == _requirement_lines(ROOT / "requirements-dev.txt")
    assert extras["benchmarks"] == _requirement_lines(ROOT / "benchmarks" / "requirements.txt")


def test_type_stubs_are_the_oldest_supported_blender(manifest):
    """fake-bpy-module's stubs are pinned, for the Blender major.minor of blender_version_min."""
    requirements = (ROOT / "requirements-dev.txt").read_text(encoding="utf-8")
    match = re.search(r"^fake-bpy-module-(\d+)\.(\d+)==\d+$", requirements, flags=re.MULTILINE)
    assert match, "fake-bpy-module-X.Y==VERSION not pinned in requirements-dev.txt"
    assert tuple(map(int, match.groups())) == _version_tuple(manifest["blender_version_min"])[:2]


def test_ci_runs_static_checks_before_tests():
    lines = CI_RUN.read_text(encoding="utf-8").splitlines()
    test_line = next(i for i, line in enumerate(lines) if line.startswith(TEST_COMMAND))
    for command in (".venv/bin/ruff check ", ".venv/bin/ruff format --no-cache --check ", ".ci/typecheck "):
        found = [i for i, line in enumerate(lines) if line.startswith(command)]
        assert found and found[0] < test_line, command
        assert lines[found[0]].endswith("|| checks=1"), "a failing check must fail CI"
    assert os.access(TYPECHECK, os.X_OK)
    typecheck = TYPECHECK.read_text(encoding="utf-8")
    assert "-p stiff_rods.addon -p stiff_rods.solver" in typecheck
