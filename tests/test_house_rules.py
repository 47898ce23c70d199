"""The code's boundaries, read from the source (ast), not from running it:

* each solver layer imports only layers below it: core < contact, air < models < build; solver/ never imports
  bpy, addon or tools;
* addon/ imports the solver only through its public API (``from ..solver import NAME``, NAME in ``solver.__all__``
  or the ``quaternion`` module);
* no module of solver/, addon/ or tools/ is over 600 lines, and no function over 80 (numba kernels excepted).

Each checker is also run on a small source with a violation, so a checker that finds nothing cannot pass."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"core": 0, "contact": 1, "air": 1, "models": 2, "build": 3}
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
KERNEL_MODULES = {"solver/core/_kernels.py", "solver/air/_drag_kernel.py"}  # numba kernels: one loop per kernel


def python_files(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)


def imported_modules(source: str, module: str, is_package: bool) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, imported names) of every import in ``source``, the module ``module`` (dotted, from
    the repository root), function-level imports included; relative imports resolved."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + (node.module.split(".") if node.module else []))
            found.append((node.lineno, target, [alias.name for alias in node.names]))
    return found


def module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def layer_violations(source: str, module: str, is_package: bool = False) -> list[str]:
    """What a solver module ``module`` (e.g. ``solver.core.model``) imports against the layering."""
    parts = module.split(".")
    own = LAYERS.get(parts[1]) if len(parts) > 1 else None
    bad = []
    for line, target, _ in imported_modules(source, module, is_package):
        top = target.split(".")
        if top[0] in ("bpy", "mathutils", "addon", "tools"):
            bad.append(f"{module}:{line} imports {target}")
        elif top[0] == "solver" and len(top) > 1 and own is not None and top[1] in LAYERS:
            if top[1] != parts[1] and LAYERS[top[1]] >= own:
                bad.append(f"{module}:{line} imports {target} (layer {top[1]} is not below {parts[1]})")
    return bad


def public_api_violations(source: str, module: str, public: set[str], is_package: bool = False) -> list[str]:
    """What an add-on module imports from the solver other than ``from ..solver import NAME`` with NAME public."""
    bad = []
    for line, target, names in imported_modules(source, module, is_package):
        if target.split(".")[0] != "solver":
            continue
        if target != "solver":
            bad.append(f"{module}:{line} imports {target}")
        bad += [f"{module}:{line} imports solver.{n} (not public)" for n in names if n not in public]
    return bad


def long_functions(source: str) -> list[tuple[str, int]]:
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno >= MAX_FUNCTION_LINES
    ]


PRIVATE_SIMULATOR_READ = re.compile(r"\b(?:sim|simulator|self\.sim)\._[a-z]\w*")


def private_simulator_reads(source: str) -> list[str]:
    """``sim._name`` uses in ``source``: a hook or tool reads the public state and ``sim.step_context`` only."""
    return [f"{i}: {m}" for i, line in enumerate(source.splitlines(), 1) for m in PRIVATE_SIMULATOR_READ.findall(line)]


def public_solver_names() -> set[str]:
    import solver

    return set(solver.__all__) | {"quaternion"}


def test_the_checkers_find_violations():
    assert layer_violations("from ..air import drag\n", "solver.core.compiled")
    assert layer_violations("def f():\n    from ..air.drag import AerodynamicDrag\n", "solver.core.compiled")
    assert layer_violations("from ..contact import Contacts\n", "solver.air.drag")  # same level: no
    assert layer_violations("import bpy\n", "solver.build.leaves")
    assert not layer_violations("from ..core import quaternion\nfrom .wind import WindField\n", "solver.air.drag")
    assert not layer_violations("from .core import Simulator\n", "solver", is_package=True)
    public = {"Simulator"}
    assert public_api_violations("from ..solver.core.timestep import Simulator\n", "addon.session", public)
    assert public_api_violations("from ..solver import _private\n", "addon.session", public)
    assert not public_api_violations("from ..solver import Simulator\n", "addon.session", public)
    assert private_simulator_reads("x = sim._kkt\nsim.positions[0] = 1\n") == ["1: sim._kkt"]
    assert long_functions("def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES) == [("f", MAX_FUNCTION_LINES + 1)]
    assert long_functions("def f():\n" + "    x = 1\n" * (MAX_FUNCTION_LINES - 1)) == []


@pytest.mark.parametrize("path", python_files("solver"), ids=lambda p: str(p.relative_to(ROOT)))
def test_each_solver_layer_imports_only_layers_below_it(path):
    module, is_package = module_name(path)
    assert layer_violations(path.read_text(), module, is_package) == []


def test_the_addon_imports_only_the_solvers_public_api():
    public = public_solver_names()
    bad = []
    for path in python_files("addon"):
        module, is_package = module_name(path)
        bad += public_api_violations(path.read_text(), module, public, is_package)
    assert bad == []


def test_no_module_over_600_lines_and_no_function_over_80():
    big, long = [], []
    for path in python_files("solver", "addon", "tools"):
        text = path.read_text()
        name = str(path.relative_to(ROOT))
        if text.count("\n") > MAX_MODULE_LINES:
            big.append((name, text.count("\n")))
        if name not in KERNEL_MODULES:
            long += [(name, f, n) for f, n in long_functions(text)]
    assert big == [] and long == []


def test_nothing_above_core_reads_a_private_simulator_attribute():
    files = [
        p for p in python_files("solver", "addon", "tools", "benchmarks") if "core" not in p.relative_to(ROOT).parts
    ]
    found = {str(p.relative_to(ROOT)): private_simulator_reads(p.read_text()) for p in files}
    assert {name: reads for name, reads in found.items() if reads} == {}
