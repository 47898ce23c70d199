import os
import shutil
import sys

# One BLAS thread, before numpy loads its pool, as the benchmarks run: the dense factorisations (e.g. the schur
# contact method's Cholesky) then round the same on every machine, whatever its core count.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the tests' shared helpers (blender_env.py) for the test files in the rooms below: tests/solver/core, tests/addon, …
sys.path.insert(1, os.path.dirname(os.path.abspath(__file__)))


import pytest  # noqa: E402


# CI (.ci/run sets STIFF_RODS_STRICT=1) has Blender and bpy installed, so a test that skips there
# means a test that matters did not run: report each skip as a failure instead.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("STIFF_RODS_STRICT") == "1" and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped under STIFF_RODS_STRICT=1 (CI must run every test): {reason}"
    if report.failed:
        _FAILED_MODULES.add(item.module.__name__)


_FAILED_MODULES: set[str] = set()


# A Blender test file installs the extension (its wheels unpacked: 0.4 GB a profile) into folders its module
# fixtures make; a whole run would leave several GB. Remove them when the file is done, unless one of its tests
# failed (kept to inspect), or their name starts with SHARED (made once for several files of one worker, e.g. the
# carrier and units tests' zips). pyproject's tmp_path_retention_policy removes each passing test's tmp_path.
SHARED = "shared-"


@pytest.fixture(scope="module", autouse=True)
def _module_folders_removed(request, tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    before = set(base.iterdir())
    yield
    if request.module.__name__ not in _FAILED_MODULES:
        for path in set(base.iterdir()) - before:
            if not path.name.startswith(SHARED):
                shutil.rmtree(path, ignore_errors=True)
