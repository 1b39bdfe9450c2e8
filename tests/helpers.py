"""Small helpers shared by the conformance, timing, reader and memory tests.

``FASTPROF_TEST_IMPL=cprofile`` runs every test with ``cProfile.Profile``
standing in for ``fastprof.Profile``: that checks the harnesses themselves
(cProfile must pass all of them except the few fastprof-only checks, which
skip).  The conformance test still compares against cProfile either way.
"""
import os
import re
import subprocess
import sys

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
CORPUS_DIR = os.path.join(TESTS_DIR, "corpus")
REPO_PYTHON_DIR = os.path.join(os.path.dirname(TESTS_DIR), "python")

IMPL = os.environ.get("FASTPROF_TEST_IMPL", "fastprof").lower()
if IMPL not in ("fastprof", "cprofile"):
    raise RuntimeError("FASTPROF_TEST_IMPL must be 'fastprof' or 'cprofile', not %r" % IMPL)
USING_CPROFILE = IMPL == "cprofile"


def profiler_class():
    """The profiler under test: fastprof.Profile (or cProfile.Profile, see above)."""
    if USING_CPROFILE:
        import cProfile
        return cProfile.Profile
    import fastprof
    return fastprof.Profile


def tool_missing(why):
    """A real client a test needs is not installed: skip, except in CI
    (``CI`` set), where `make test` installs it and its absence is a failure."""
    import pytest
    if os.environ.get("CI"):
        pytest.fail(why + " (CI is set: the test command must install it)")
    pytest.skip(why)


def cli_env():
    """Environment for a child running fastprof's command lines: this
    process's fastprof first on PYTHONPATH, no startup file, UTF-8 output."""
    import fastprof
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(fastprof.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_parent, env.get("PYTHONPATH")) if p)
    env.pop("PYTHONSTARTUP", None)
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def subprocess_env(**extra):
    """Environment for child interpreters: same impl, and the same fastprof
    first on PYTHONPATH (the one this process imports)."""
    env = dict(os.environ)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if not USING_CPROFILE:
        try:
            import fastprof
            pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(fastprof.__file__)))
        except ImportError:
            pkg_parent = REPO_PYTHON_DIR
        if pkg_parent not in paths:
            paths.insert(0, pkg_parent)
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.pop("PYTHONASYNCIODEBUG", None)
    env.pop("PYTHONDEVMODE", None)
    env.update(extra)
    return env


def run_python(args, timeout=120, **kwargs):
    """Run ``sys.executable args...``; return the CompletedProcess (text mode)."""
    return subprocess.run([sys.executable] + list(args), capture_output=True, text=True,
                          timeout=timeout, env=kwargs.pop("env", None) or subprocess_env(),
                          **kwargs)


def corpus_programs():
    """Names of the corpus modules (tests/corpus/*.py, minus _private ones)."""
    return sorted(f[:-3] for f in os.listdir(CORPUS_DIR)
                  if f.endswith(".py") and not f.startswith("_"))


# -- profiler-internal rows (see docs/conformance.md) ------------------------

_INTERNAL_C = re.compile(r"<method '(enable|disable)' of '(?:[\w]+\.)*_?(?:lsprof|fastprof)\.\w+' objects>$")
_INTERNAL_PY_NAMES = {"enable", "disable", "__enter__", "__exit__"}


def internal_seed(key, fastprof_dir=None):
    """True for a row that is the profiler's own enable/disable machinery."""
    filename, _line, name = key
    if filename == "~":
        return bool(_INTERNAL_C.match(name))
    base = os.path.basename(filename)
    if base == "cProfile.py" and name in _INTERNAL_PY_NAMES:
        return True
    if fastprof_dir and os.path.abspath(filename).startswith(os.path.join(fastprof_dir, "")):
        return True
    return False


def internal_keys(stats, fastprof_dir=None):
    """Keys of profiler-internal rows: the seeds, plus (transitively) rows that
    are only ever called from internal rows."""
    internal = {k for k in stats if internal_seed(k, fastprof_dir)}
    changed = True
    while changed:
        changed = False
        for key, value in stats.items():
            callers = value[4]
            if key not in internal and callers and all(c in internal for c in callers):
                internal.add(key)
                changed = True
    return internal


def strip_internal(stats, fastprof_dir=None):
    """Copy of a pstats dict without profiler-internal rows and edges.
    Returns (stats, sorted list of removed keys)."""
    internal = internal_keys(stats, fastprof_dir)
    out = {}
    for key, (cc, nc, tt, ct, callers) in stats.items():
        if key in internal:
            continue
        out[key] = (cc, nc, tt, ct, {c: v for c, v in callers.items() if c not in internal})
    return out, sorted(internal)


def fmt_key(key):
    filename, line, name = key
    if filename == "~":
        return name
    return "%s:%d(%s)" % (os.path.basename(filename), line, name)
