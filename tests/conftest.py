"""Test infrastructure only (keep feature fixtures in the tests' own files).

- Puts tests/ on sys.path, so tests can ``import`` helper modules kept there.
- When run through ``make`` (scripts/pytest.sh sets FASTPROF_BUILD_LIB), stops
  the run at once if ``fastprof`` would be imported from anywhere but that
  build's lib dir (say, an in-place build in python/fastprof/).
- Shows in the header which fastprof is under test.
- Fixtures: ``repo_root`` (pathlib.Path of the checkout) and ``native_env``
  (os.environ without the sanitizer preload, for starting programs that are
  not Python, e.g. a browser or ``dot``, from an ASan run).

- Under ``make test`` and the sanitizers, on versions outside
  tests/version_sample.py's sample, deselects the files of Python-level
  code (that module says why).

Environment seen by tests: FASTPROF_CALIBRATION_CACHE = build/calibration-cache.tsv
(set here unless set), FASTPROF_SANITIZED=1 under the ASan+UBSan build
(skip timing-sensitive checks there), PYTHONPATH = the build's lib dir (so a
``python -m fastprof`` subprocess imports the same build).
"""
import importlib.util
import os
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

import version_sample  # noqa: E402  (lives in tests/)

# the profilers' calibration cache (fastprof/recording/calibration_cache.py) of this
# checkout, not the user's: a run's costs do not depend on other runs'
os.environ.setdefault("FASTPROF_CALIBRATION_CACHE", str(REPO_ROOT / "build" / "calibration-cache.tsv"))


def _fastprof_location():
    spec = importlib.util.find_spec("fastprof")
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    return locations[0] if locations else spec.origin


def pytest_configure(config):
    expected = os.environ.get("FASTPROF_BUILD_LIB")
    if not expected:
        return
    where = _fastprof_location()
    want = os.path.join(os.path.realpath(expected), "fastprof")
    if where is None or os.path.realpath(where) != want:
        raise pytest.UsageError(
            "fastprof would be imported from %r, not from the build under test %r "
            "(check PYTHONPATH and sys.path)" % (where, want))


def pytest_collection_modifyitems(config, items):
    missing = [name for name in (version_sample.PYTHON_LEVEL_FILES | version_sample.NOT_SANITIZED_FILES
                                 | version_sample.SANITIZED_ON_SAMPLE_FILES)
               if not (TESTS_DIR / name).exists()]
    if missing:
        raise pytest.UsageError("tests/version_sample.py names test files that do not exist: %s"
                                % ", ".join(sorted(missing)))
    left = [item for item in items if version_sample.left_out(item)]
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = [item for item in items if not version_sample.left_out(item)]


def pytest_report_header(config):
    where = _fastprof_location()
    lines = ["fastprof under test: %s" % (where or "NOT FOUND")]
    if os.environ.get("FASTPROF_SANITIZED") == "1":
        lines.append("fastprof build: ASan+UBSan (FASTPROF_SANITIZED=1)")
    sample = version_sample.sample()
    if sample is not None:
        lines.append("Python-level test files left to the %s runs on %s (tests/version_sample.py)"
                     % ("sanitized" if os.environ.get("FASTPROF_SANITIZED") == "1" else "plain",
                        " and ".join(sample)))
    return lines


@pytest.fixture(scope="session")
def repo_root():
    return REPO_ROOT


@pytest.fixture
def native_env():
    env = dict(os.environ)
    for key in ("LD_PRELOAD", "PYTHONMALLOC"):
        env.pop(key, None)
    return env
