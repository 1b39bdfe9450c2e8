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

# The ASan+UBSan build (make test-asan) runs C code several times slower:
# CPU bounds meant to catch a quadratic regression scale by this factor.
SANITIZED = os.environ.get("FASTPROF_SANITIZED") == "1"
CPU_BOUND_SCALE = 10 if SANITIZED else 1


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


# -- oracles of --lines, --only and --fast, for every entry point --------------

def settrace_hits(func, module):
    """The oracle of line hits: sys.settrace's line events per function of
    *module* (a ``__name__``) while ``func()`` runs: {key: {lineno: hits}}."""
    from fastprof.data.names import label
    hits = {}

    def local(frame, event, arg):
        if event == "line":
            table = hits.setdefault(label(frame.f_code), {})
            table[frame.f_lineno] = table.get(frame.f_lineno, 0) + 1
        return local

    def on_call(frame, event, arg):
        if frame.f_globals.get("__name__") == module:
            return local
        return None

    sys.settrace(on_call)
    try:
        func()
    finally:
        sys.settrace(None)
    return hits


def line_hits(lines):
    """A profile's line stats ({key: {lineno: (hits, seconds)}}) as hits only."""
    return {k: {n: h for n, (h, _t) in v.items() if h} for k, v in lines.items()}


def check_scoped_like_cprofile(full, scoped, in_scope):
    """*scoped* (stats of an ``only=`` profile) against cProfile's *full*
    stats of the same run: the Python rows are exactly the in-scope
    functions, with cProfile's counts; the C rows are the C functions they
    call directly, as often as they call them."""
    inside = {k for k in full if in_scope(k)}
    assert inside
    assert {k for k in scoped if k[0] != "~"} == inside
    for key in inside:
        assert scoped[key][:2] == full[key][:2], key
    direct = {}
    for key, (_cc, _nc, _tt, _ct, callers) in full.items():
        if key[0] == "~":
            n = sum(edge[0] for caller, edge in callers.items() if in_scope(caller))
            if n:
                direct[key] = n
    # (a <gc> row: a collection ran, which fastprof records and cProfile does not)
    assert {k: v[1] for k, v in scoped.items() if k[0] == "~" and k[2] != "<gc>"} == direct


def check_fast_like_cprofile(expected, stats):
    """*stats* of a fast-mode profile: no C function at all, and
    cProfile(builtins=False)'s counts (*expected*) for each of its functions
    (a <gc> row is no C function: a collection ran, which fastprof records)."""
    c_rows = [k for k in stats if k[0] == "~" and k[2] != "<gc>"]
    assert c_rows == [], c_rows
    for key, row in expected.items():
        assert key in stats, key
        assert stats[key][:2] == row[:2], key


# -- waiting for a child's output, with a deadline ---------------------------------

class OutputLines:
    """A child's output stream (text or bytes) read line by line in a
    background thread, so that a test waits for what the child says (with a
    deadline) instead of sleeping a fixed time or blocking in readline().

        lines = OutputLines(proc.stderr)
        lines.wait_for("until Ctrl-C", timeout=120)
        ...
        proc.wait(); text = lines.text()   # everything, once the stream ended
    """

    def __init__(self, stream):
        import threading
        self._lines = []
        self._ended = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream):
        try:
            for line in stream:
                if isinstance(line, bytes):
                    line = line.decode("utf-8", "replace")
                with self._cond:
                    self._lines.append(line)
                    self._cond.notify_all()
        finally:
            with self._cond:
                self._ended = True
                self._cond.notify_all()

    def wait_for(self, text, timeout=120.0):
        """The first line containing *text*, once it came; AssertionError
        (with what came) if the stream ended or *timeout* seconds passed first."""
        import time
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in self._lines:
                    if text in line:
                        return line
                left = deadline - time.monotonic()
                if self._ended or left <= 0:
                    raise AssertionError("%s without a line containing %r; it said:\n%s" % (
                        "the stream ended" if self._ended else "%gs passed" % timeout,
                        text, "".join(self._lines)))
                self._cond.wait(min(left, 1.0))

    def text(self, timeout=60.0):
        """All that came, once the stream ended (or after *timeout* seconds)."""
        self._thread.join(timeout)
        with self._cond:
            return "".join(self._lines)
