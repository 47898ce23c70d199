"""Install Stiff Rods from a zip the way a user does, restart Blender, check it, disable it.

Run by tests/blender/test_install.py, always with an isolated user profile (BLENDER_USER_* env vars) and a
timeout:

    blender -b --factory-startup --python install_check.py -- ZIP legacy
        Blender 3.4 (up to 4.1): Preferences > Add-ons > Install (bpy.ops.preferences.addon_install),
        enable, save preferences.
    PYTHON install_check.py ZIP extension
        bpy module (Blender 4.2+: 4.2.23, 5.0.1, 5.2.3, 5.3.0, each with the Python of its venv): Get Extensions >
        Install from Disk (bpy.ops.extensions.package_install_files into "user_default", enable_on_install),
        save preferences.
    PYTHON install_check.py ZIP extension-refused
        bpy module with a zip it must refuse (another Blender range or platform): Install from Disk leaves
        no package, no enabled add-on and no wheel behind. Blender prints why (its own message, e.g. "This
        platform (linux-x64) isn't one of (windows-x64)"); the test reads it from the output.

``legacy`` and ``extension`` then start a second Blender on the same profile (modes ``legacy-restart`` and
``extension-restart``, run automatically) where the add-on must come back enabled from the saved
preferences (the bpy module of Blender 4.x: see load_saved_preferences). Checks, in both sessions: the
add-on module is enabled and was loaded from the user profile (not the source tree); every class in
its ``addon.classes`` is registered and every operator is reachable as ``bpy.ops.stiff_rods.<name>``.
After the restart: a short simulation runs with the numpy/scipy Blender provides (for the extension,
scipy must be the bundled wheel, which Blender puts in front of other site-packages from the second
start on), with the compiled solver's status and whether the simulation ran compiled (numba: the
system's for the legacy zip, the bundled wheel for the extension); disabling unregisters every class
without raising; the extension is uninstalled and its wheels removed.

The last line printed is ``INSTALL_CHECK OK {json}`` or ``INSTALL_CHECK FAIL {json}``.
"""

import json
import os
import subprocess
import sys
import traceback

import bpy

PKG = "stiff_rods"
EXT_MODULE = f"bl_ext.user_default.{PKG}"
MODES = ("legacy", "extension", "extension-refused", "legacy-restart", "extension-restart")
RESTART_TIMEOUT = 300


def parse_args():
    args = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]
    if len(args) != 2 or args[1] not in MODES:
        raise SystemExit(f"usage: install_check.py ZIP {'|'.join(MODES)}")
    return os.path.abspath(args[0]), args[1]


def raise_error(ex):
    raise ex


def under(path, directory):
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return os.path.commonpath([path, directory]) == directory


def check_enabled(name, info):
    import addon_utils

    assert name in bpy.context.preferences.addons, f"{name} not enabled (Preferences > Add-ons)"
    assert addon_utils.check(name)[1], f"addon_utils.check({name!r}): not loaded"
    module = sys.modules[name]
    info["module"] = name
    info["file"] = module.__file__
    user_dirs = [os.environ[k] for k in ("BLENDER_USER_RESOURCES", "BLENDER_USER_SCRIPTS") if os.environ.get(k)]
    assert user_dirs, "run with an isolated profile: set BLENDER_USER_RESOURCES / BLENDER_USER_SCRIPTS"
    assert any(under(module.__file__, d) for d in user_dirs), (
        f"{name} was loaded from {module.__file__}, not from the isolated profile {user_dirs}"
    )
    return module


def check_classes(module, info):
    addon = sys.modules[module.__name__ + ".addon"]
    classes = list(addon.classes)
    info["classes"] = [cls.__name__ for cls in classes]
    missing = [cls.__name__ for cls in classes if not cls.is_registered]
    assert not missing, f"classes not registered after enable: {missing}"
    operators = []
    for cls in classes:
        if issubclass(cls, bpy.types.Operator):
            category, _, name = cls.bl_idname.partition(".")
            assert category == PKG, f"{cls.__name__}.bl_idname {cls.bl_idname!r} not in bpy.ops.{PKG}"
            getattr(getattr(bpy.ops, category), name).get_rna_type()  # KeyError if not registered
            operators.append(cls.bl_idname)
    info["operators"] = operators
    info["ops_namespace"] = sorted(n for n in dir(getattr(bpy.ops, PKG)) if not n.startswith("_"))
    return classes


def check_disable(name, classes):
    import addon_utils

    addon_utils.disable(name, default_set=True, handle_error=raise_error)
    assert name not in bpy.context.preferences.addons, f"{name} still enabled after disable"
    still = [cls.__name__ for cls in classes if cls.is_registered]
    assert not still, f"classes still registered after disable: {still}"


def check_solver(module, info):
    """A short cantilever under gravity with the installed copy of the solver."""
    import numpy as np

    solver = __import__(module.__name__ + ".solver", fromlist=["solver"])
    said = []
    info["compiled"] = list(solver.prepare_compiled(said.append))
    info["compiled_said"] = said
    # the compiled kernels' disk cache: the enabled add-on pointed it at a folder of the (isolated) profile
    cache = os.environ.get("NUMBA_CACHE_DIR")
    info["kernel_cache"] = cache
    info["kernel_cache_files"] = sorted(os.listdir(cache)) if cache and os.path.isdir(cache) else []
    points = np.stack([np.linspace(0.0, 1.0, 11), np.zeros(11), np.zeros(11)], axis=1)
    model = solver.rod_from_polyline(points, radius=0.01, youngs_modulus=1e9, density=1000.0, pinned=["start"])
    sim = solver.Simulator(model, dt=1 / 60)
    for _ in range(5):
        sim.step()
    tip = np.asarray(sim.tip(), dtype=float)
    assert np.all(np.isfinite(tip)), tip
    assert tip[2] < 0.0, f"the tip of a cantilever under gravity should sag, got {tip}"
    import scipy

    info["solver_tip"] = tip.round(6).tolist()
    info["sim_compiled"] = bool(sim.compiled)
    numba = sys.modules.get("numba")
    info["numba_file"] = getattr(numba, "__file__", None)
    info["numba"] = getattr(numba, "__version__", None)
    info["numpy"] = np.__version__
    info["scipy"] = scipy.__version__
    info["scipy_file"] = scipy.__file__


def save_preferences():
    result = bpy.ops.wm.save_userpref()
    assert result == {"FINISHED"}, f"wm.save_userpref returned {result}"


def restart(zip_path, mode, info):
    """Run the ``-restart`` phase in a new Blender on the same profile; merge its report."""
    if mode == "legacy":
        # No --factory-startup: the saved preferences (enabled add-ons) must be loaded.
        cmd = [
            bpy.app.binary_path,
            "-b",
            "--python-exit-code",
            "1",
            "--python",
            __file__,
            "--",
            zip_path,
            "legacy-restart",
        ]
    else:
        cmd = [sys.executable, __file__, zip_path, "extension-restart"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=RESTART_TIMEOUT)
    lines = [line for line in done.stdout.splitlines() if line.startswith("INSTALL_CHECK ")]
    if done.returncode != 0 or not lines or not lines[-1].startswith("INSTALL_CHECK OK "):
        sys.stdout.write(done.stdout[-20000:])
        sys.stderr.write(done.stderr[-20000:])
        raise AssertionError(
            f"restart phase failed (exit {done.returncode}): " + (lines[-1] if lines else "no INSTALL_CHECK line")
        )
    info["restart"] = json.loads(lines[-1][len("INSTALL_CHECK OK ") :])


def legacy(zip_path, info):
    import addon_utils

    result = bpy.ops.preferences.addon_install(filepath=zip_path, overwrite=True)
    assert result == {"FINISHED"}, f"addon_install returned {result}"
    module = addon_utils.enable(PKG, default_set=True, handle_error=raise_error)
    assert module is not None, "addon_utils.enable returned None"
    check_classes(check_enabled(PKG, info), info)
    save_preferences()


def legacy_restart(zip_path, info):
    module = check_enabled(PKG, info)  # enabled at startup from the saved preferences
    classes = check_classes(module, info)
    check_solver(module, info)
    check_disable(PKG, classes)


def extension_site_packages():
    return os.path.join(
        bpy.utils.user_resource("EXTENSIONS"),
        ".local",
        "lib",
        "python{}.{}".format(*sys.version_info[:2]),
        "site-packages",
    )


def extension(zip_path, info):
    repos = bpy.context.preferences.extensions.repos
    assert any(r.module == "user_default" for r in repos), "no user_default extension repository"
    result = bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default", enable_on_install=True)
    assert result == {"FINISHED"}, f"package_install_files returned {result}"
    check_classes(check_enabled(EXT_MODULE, info), info)
    site = extension_site_packages()
    wheels = sorted(n for n in os.listdir(site) if n.endswith(".dist-info")) if os.path.isdir(site) else []
    assert any(n.startswith("scipy-") for n in wheels), f"scipy wheel not installed in {site}: {wheels}"
    info["installed_wheels"] = wheels
    save_preferences()


def load_saved_preferences(info):
    """Load the preferences the install saved (the bpy module does not load them on import; Blender does at
    startup) with ``wm.read_userpref``, which enables the saved add-ons. The bpy module of Blender 4.x crashes in
    that operator (it reloads the icon textures without a GPU context: a segmentation fault in
    GPU_texture_create_2d), so there the saved userpref.blend must name the extension and addon_utils enables it,
    as Blender's startup does from that list."""
    if bpy.app.version >= (5, 0, 0):
        result = bpy.ops.wm.read_userpref()
        assert result == {"FINISHED"}, f"wm.read_userpref returned {result}"
        info["preferences"] = "wm.read_userpref"
        return
    import addon_utils

    saved = os.path.join(bpy.utils.user_resource("CONFIG"), "userpref.blend")
    with open(saved, "rb") as fh:
        assert EXT_MODULE.encode() in fh.read(), f"{saved} does not list {EXT_MODULE} among the enabled add-ons"
    addon_utils.enable(EXT_MODULE, default_set=True, handle_error=raise_error)
    info["preferences"] = "userpref.blend + addon_utils.enable"


def extension_restart(zip_path, info):
    load_saved_preferences(info)
    site = extension_site_packages()
    paths = [os.path.realpath(p) for p in sys.path]
    assert os.path.realpath(site) in paths, f"{site} not in sys.path"
    module = check_enabled(EXT_MODULE, info)
    classes = check_classes(module, info)
    check_solver(module, info)
    assert under(info["scipy_file"], site), (
        f"scipy was not loaded from the bundled wheel in {site}: {info['scipy_file']}"
    )
    assert info["numba_file"] is None or under(info["numba_file"], site), (
        f"numba was not loaded from the bundled wheel in {site}: {info['numba_file']}"
    )
    check_disable(EXT_MODULE, classes)
    repos = list(bpy.context.preferences.extensions.repos)
    repo_index = [r.module for r in repos].index("user_default")
    result = bpy.ops.extensions.package_uninstall(repo_index=repo_index, pkg_id=PKG)
    assert result == {"FINISHED"}, f"package_uninstall returned {result}"
    assert not os.path.exists(os.path.join(repos[repo_index].directory, PKG)), "files left"
    bundled = ("scipy", "numba", "llvmlite")
    left = [n for n in os.listdir(site) if n.startswith(bundled)] if os.path.isdir(site) else []
    assert not left, f"wheel files left in {site} after uninstall: {left}"


def extension_refused(zip_path, info):
    """Install from Disk a zip Blender must refuse: nothing may be installed or enabled."""
    repos = list(bpy.context.preferences.extensions.repos)
    repo = repos[[r.module for r in repos].index("user_default")]
    try:
        result = bpy.ops.extensions.package_install_files(
            filepath=zip_path, repo="user_default", enable_on_install=True
        )
    except RuntimeError as ex:  # the operator's ERROR report, where Blender raises it
        result = f"RuntimeError: {ex}"
    info["result"] = sorted(result) if isinstance(result, set) else result
    assert not os.path.exists(os.path.join(repo.directory, PKG)), f"{PKG} was installed into {repo.directory}"
    assert EXT_MODULE not in bpy.context.preferences.addons, f"{EXT_MODULE} is enabled"
    site = extension_site_packages()
    left = [n for n in os.listdir(site) if n.startswith(("scipy", "numba", "llvmlite"))] if os.path.isdir(site) else []
    assert not left, f"wheels installed in {site}: {left}"
    info["installed"] = False


def main():
    zip_path, mode = parse_args()
    info = {"mode": mode, "blender": bpy.app.version_string, "python": sys.version.split()[0], "zip": zip_path}
    try:
        assert os.path.isfile(zip_path), f"no such zip: {zip_path}"
        {
            "legacy": legacy,
            "extension": extension,
            "extension-refused": extension_refused,
            "legacy-restart": legacy_restart,
            "extension-restart": extension_restart,
        }[mode](zip_path, info)
        if mode in ("legacy", "extension"):
            restart(zip_path, mode, info)
    except BaseException as ex:  # noqa: BLE001 - report everything, including SystemExit
        traceback.print_exc()
        info["error"] = f"{type(ex).__name__}: {ex}"
        print("INSTALL_CHECK FAIL " + json.dumps(info), flush=True)
        sys.stderr.flush()
        os._exit(1)
    print("INSTALL_CHECK OK " + json.dumps(info), flush=True)


main()
