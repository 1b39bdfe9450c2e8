"""``pytest --fastprof-counts=DIR``: a performance gate on exact call counts.

Each test (setup, call and teardown, all threads) runs under its own
profiler with call paths; its count table (``counts.counts_of_test``: the
calls of each function and caller -> callee edge of the test's own work) is
compared with the one kept in DIR, one file per test module and Python minor
version (``counts.baseline_file``).  A test without a baseline is recorded;
a test whose counts changed beyond the tolerance fails the run (exit status
1) and the terminal summary names it, with the functions and edges whose
counts changed, biggest first.  ``--fastprof-counts-update`` rewrites the
baselines of the tests that ran.  Tests that did not run (``-k``, ``-x``)
keep theirs; tests that failed or were skipped are neither compared nor
recorded.

What would make counts differ between two runs of the same code is made
equal before each test or left out of the table (docs/gate.md):

- hash randomisation: the run re-executes itself with ``PYTHONHASHSEED=0``
  (``reexec_with_hash_seed``), so set and dict-of-str orders are the same;
- caches that earlier tests fill (``functools.lru_cache``/``cache``, ``re``'s):
  cleared before each test (``CacheReset``), so a test's counts do not depend
  on which tests ran before it (``-k``, xdist's scheduling);
- garbage collections and the finalizers they run, module bodies and the
  import system, thread scheduling in threading/queue/asyncio internals,
  pytest's own code: left out of the table (``counts.py``).

Under pytest-xdist the workers compute their tests' tables and hand them to
the controller in a file (like the profiles of ``--fastprof``), which
compares and writes the baselines.
"""

import functools
import gc
import json
import os
import re
import shutil
import sys
import tempfile
import weakref

import pytest

from ..data.atomic_file import write_bytes_atomically
from ..data.portable_names import relative_paths
from ..tools import counts
from . import run_options

HASH_SEED = "0"
SKIP_MARK = "fastprof_counts_skip"   # a test (class, module) the gate leaves alone
REEXEC_MARK = "FASTPROF_COUNTS_REEXEC"


# ---------------------------------------------------------------- the hash seed

def hash_seed_is_fixed() -> bool:
    return os.environ.get("PYTHONHASHSEED") == HASH_SEED or not sys.flags.hash_randomization


def _command_line():
    """The arguments that started this process again, or None if unknown."""
    orig = getattr(sys, "orig_argv", None)
    if orig:
        return [sys.executable] + list(orig[1:])
    argv0 = sys.argv[0] if sys.argv else ""
    if not argv0:
        return None
    if os.path.basename(argv0) == "__main__.py" and os.path.basename(os.path.dirname(argv0)) == "pytest":
        return [sys.executable, "-m", "pytest"] + sys.argv[1:]
    return [sys.executable, argv0] + sys.argv[1:]


def reexec_with_hash_seed(config) -> bool:
    """Run this pytest command again with PYTHONHASHSEED=0 (the counts of code
    that iterates sets of str depend on the seed).  Only the process that
    the command line started does it (not pytest.main() inside a program);
    returns False when it cannot."""
    if hash_seed_is_fixed() or os.environ.get(REEXEC_MARK):
        return False
    if hasattr(config, "workerinput"):
        return False
    if tuple(config.invocation_params.args) != tuple(sys.argv[1:]):
        return False
    argv = _command_line()
    if argv is None:
        return False
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        capman.stop_global_capturing()  # the new process must get the real stdout/stderr
    sys.stdout.flush()
    sys.stderr.flush()
    env = dict(os.environ, PYTHONHASHSEED=HASH_SEED)
    env[REEXEC_MARK] = "1"
    try:
        os.execve(sys.executable, argv, env)
    except OSError:
        if capman is not None:
            capman.start_global_capturing()
        return False
    return True  # (not reached)


# ---------------------------------------------------------------- caches

class CacheReset:
    """Clears the caches that earlier tests fill before each test: every
    ``functools.lru_cache``/``cache`` function (found once, then again when
    more modules are imported) and ``re``'s."""

    def __init__(self):
        self.modules = -1
        self.caches = []

    def __call__(self):
        if len(sys.modules) != self.modules:
            self.modules = len(sys.modules)
            kind = getattr(functools, "_lru_cache_wrapper", None)
            self.caches = [weakref.ref(o) for o in gc.get_objects()
                           if type(o) is kind and hasattr(o, "cache_clear")]
        for ref in self.caches:
            cache = ref()
            if cache is not None:
                cache.cache_clear()
        re.purge()


def plugin_files(config):
    """The files of the pytest plugins this run loaded (third-party plugins
    such as anyio's), relative to their sys.path entries: the test framework's,
    not the test's.  conftest.py files are the project's."""
    files = []
    for plugin in config.pluginmanager.get_plugins():
        name = getattr(plugin, "__file__", None)
        if isinstance(name, str) and os.path.basename(name) not in ("conftest.py", "__init__.py"):
            files.append(os.path.splitext(name)[0] + ".py")
    return frozenset(relative_paths(files).values())


def shared_fixture_keys(item):
    """The pstats keys of *item*'s fixtures of a wider scope than a test
    (session, package, module, class; xunit setup_module and unittest's
    setUpClass are such fixtures too): their setup and teardown run in
    whichever test needs them first or last, so they are not counted."""
    keys = set()
    info = getattr(item, "_fixtureinfo", None)
    for defs in (getattr(info, "name2fixturedefs", None) or {}).values():
        for fixturedef in defs:
            if getattr(fixturedef, "scope", "function") == "function":
                continue
            func = getattr(fixturedef, "func", None)
            func = getattr(func, "__func__", func)
            code = getattr(func, "__code__", None)
            if code is not None:
                keys.add((code.co_filename, code.co_firstlineno, code.co_name))
    return keys


# ---------------------------------------------------------------- the gate

class CountGate:
    """The per-test profiles and their comparison with DIR's baselines."""

    def __init__(self, config, directory, profile_options):
        self.config = config
        self.directory = os.path.abspath(directory)
        self.update = config.getoption("fastprof_counts_update")
        try:
            self.tolerance = counts.parse_tolerance(config.getoption("fastprof_counts_tolerance"))
            c_tol = config.getoption("fastprof_counts_c_tolerance")
            self.c_tolerance = None if c_tol is None else counts.parse_tolerance(c_tol)
        except ValueError as exc:
            raise pytest.UsageError("fastprof: --fastprof-counts-tolerance: %s" % exc) from None
        report = config.getoption("fastprof_counts_report")
        self.report = os.path.abspath(report) if report else None
        self.reset = None if config.getoption("fastprof_counts_keep_caches") else CacheReset()
        options = dict(profile_options)
        options.update(threads=True, callpaths=True, gc=True, builtins=True, max_depth=1024)
        self.profile_options = options
        try:
            os.makedirs(self.directory, exist_ok=True)
            run_options.new_profile(self.profile_options)  # refused now, not at the first test
        except (run_options.UsageError, OSError) as exc:
            raise pytest.UsageError("fastprof: --fastprof-counts: %s" % exc) from None
        self.worker = hasattr(config, "workerinput")
        self.controller = getattr(config.option, "dist", "no") != "no" and not self.worker
        self.tables = {}        # node id -> count table
        self.bad = set()        # node ids that failed or were skipped
        self.problems = []
        self.profile = None
        self.framework_files = None  # the pytest plugins' files (relative paths)
        self.outcome = None
        self.written = []       # baseline files written
        self.rewritten = 0      # --fastprof-counts-update: tests whose baseline was there
        self.marked = 0         # tests marked fastprof_counts_skip
        self.xdist_dir = None
        if self.controller:
            self.xdist_dir = tempfile.mkdtemp(prefix="fastprof-counts-")

    # -- the phases --------------------------------------------------------

    def _profiled(self, item, first=False):
        if first:
            self.profile = None
            if self.reset is not None:
                self.reset()
        if self.profile is None:
            self.profile = run_options.new_profile(self.profile_options)
        prof = self.profile
        try:
            prof.enable()
        except Exception as exc:  # another tool holds the profiler slot
            self.problems.append("%s: not counted: %s" % (item.nodeid, exc))
            self.bad.add(item.nodeid)
            yield
            return
        try:
            yield
        finally:
            try:
                prof.disable()
            except Exception as exc:
                self.problems.append("%s: counting stopped early: %s" % (item.nodeid, exc))
                self.bad.add(item.nodeid)

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_setup(self, item):
        yield from self._profiled(item, first=True)

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_call(self, item):
        yield from self._profiled(item)

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_teardown(self, item):
        yield from self._profiled(item)
        prof, self.profile = self.profile, None
        if prof is None or item.nodeid in self.bad:
            return
        if item.get_closest_marker(SKIP_MARK) is not None:
            self.marked += 1
            return
        try:
            if self.framework_files is None:
                self.framework_files = plugin_files(self.config)
            self.tables[item.nodeid] = counts.counts_of_test(
                prof.profile_data(), framework_files=self.framework_files,
                noise_keys=shared_fixture_keys(item))
        except Exception as exc:  # never lose the run to the gate
            self.problems.append("%s: not counted: %s" % (item.nodeid, exc))

    def pytest_runtest_logreport(self, report):
        if report.failed or (report.skipped and report.when != "teardown"):
            self.bad.add(report.nodeid)

    # -- the end -----------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        if self.worker:
            self._hand_over()
            return
        if self.xdist_dir is not None:
            shutil.rmtree(self.xdist_dir, ignore_errors=True)
        self.outcome = self.finish()
        if self.outcome.failed and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.report:
            text = (counts.as_json(self.outcome) if self.report.endswith(".json")
                    else counts.markdown(self.outcome))
            try:
                with open(self.report, "w", encoding="utf-8") as f:
                    f.write(text)
            except OSError as exc:
                self.problems.append("cannot write %s: %s" % (self.report, exc.strerror or exc))

    def finish(self):
        """Compare the tables with the baselines; record the new ones (all with --update)."""
        by_file = {}
        for nodeid, table in self.tables.items():
            if nodeid in self.bad:
                continue
            path, name = counts.baseline_file(self.directory, nodeid)
            by_file.setdefault(path, {})[name] = (nodeid, table)
        outcome = counts.Outcome(changed={}, recorded=[], notes=[], errors=[])
        for path in sorted(by_file):
            try:
                kept = counts.read_tables(path)
            except counts.BaselineError as exc:
                outcome.errors.append("%s (delete it to record it anew)" % exc)
                continue
            dirty = False
            for name, (nodeid, table) in sorted(by_file[path].items()):
                old = kept.get(name)
                if old is None or self.update:
                    if old != table:
                        kept[name] = table
                        dirty = True
                    if old is None:
                        outcome.recorded.append(nodeid)
                    else:
                        self.rewritten += 1
                    continue
                outcome.compared += 1
                changes = counts.compare(old, table, self.tolerance, self.c_tolerance)
                if changes:
                    outcome.changed[nodeid] = changes
            if dirty:
                try:
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    data = counts.format_tables(kept, "%d.%d" % sys.version_info[:2]).encode("utf-8")
                    write_bytes_atomically(path, data)
                    self.written.append(path)
                except OSError as exc:
                    self.problems.append("cannot write %s: %s" % (path, exc.strerror or exc))
        if self.marked:
            outcome.notes.append("%d test%s marked %s: not counted"
                                 % (self.marked, "" if self.marked == 1 else "s", SKIP_MARK))
        bad = len(self.bad)
        if bad:
            outcome.notes.append("%d test%s failed or skipped: not compared nor recorded"
                                 % (bad, "" if bad == 1 else "s"))
        if not hash_seed_is_fixed():
            outcome.notes.append("hash randomisation is on: set PYTHONHASHSEED=0 (counts of "
                                 "code that iterates sets of str may differ between runs)")
        outcome.notes.extend(self.problems)
        return outcome

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        if self.outcome is None:
            return
        o = self.outcome
        tr.write_sep("=", "fastprof call counts", red=o.failed, bold=o.failed, green=not o.failed)
        for error in o.errors or []:
            tr.write_line("fastprof: " + error)
        if o.changed:
            tr.write_line("%d test%s changed their call counts (of %d compared); the baselines "
                          "are in %s (--fastprof-counts-update rewrites them):"
                          % (len(o.changed), "" if len(o.changed) == 1 else "s", o.compared,
                             self._dir_shown()))
            for line in counts.text_lines(o):
                tr.write_line(line)
        elif not o.errors:
            tr.write_line("%d test%s compared with %s: no call count changed"
                          % (o.compared, "" if o.compared == 1 else "s", self._dir_shown()))
        if o.recorded:
            tr.write_line("%d test%s had no baseline for Python %d.%d: recorded"
                          % ((len(o.recorded), "" if len(o.recorded) == 1 else "s")
                             + sys.version_info[:2]))
        if self.update:
            tr.write_line("--fastprof-counts-update: %d baseline%s rewritten"
                          % (self.rewritten, "" if self.rewritten == 1 else "s"))
        if self.written:
            tr.write_line("%d baseline file%s written under %s" % (
                len(self.written), "" if len(self.written) == 1 else "s", self._dir_shown()))
        for note in o.notes or []:
            tr.write_line("fastprof: " + note)
        if self.report:
            tr.write_line("report written to %s" % self.report)

    def _dir_shown(self):
        return os.path.join(self.directory, counts.version_tag())

    # -- pytest-xdist ------------------------------------------------------

    def _hand_over(self):
        config = self.config
        path = os.path.join(config.workerinput["fastprof_counts_dir"],
                            "%s.json" % config.workerinput.get("workerid", os.getpid()))
        out = {"tables": None, "bad": sorted(self.bad), "problems": self.problems,
               "marked": self.marked}
        try:
            with open(path, "w", encoding="utf-8") as f:
                json.dump(self.tables, f)
            out["tables"] = path
        except OSError as exc:
            out["problems"] = self.problems + ["cannot hand over the counts: %s" % exc]
        config.workeroutput["fastprof_counts"] = out

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        node.workerinput["fastprof_counts_dir"] = self.xdist_dir

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        output = (getattr(node, "workeroutput", None) or {}).get("fastprof_counts")
        name = getattr(getattr(node, "gateway", None), "id", "a worker")
        if output is None:
            self.problems.append("%s ended without handing over its counts" % name)
            return
        self.bad.update(output["bad"])
        self.problems.extend(output["problems"])
        self.marked += output.get("marked", 0)
        if output["tables"]:
            try:
                with open(output["tables"], encoding="utf-8") as f:
                    self.tables.update(json.load(f))
            except (OSError, ValueError) as exc:
                self.problems.append("%s's counts are lost: %s" % (name, exc))
