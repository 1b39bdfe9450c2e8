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
equal before each test, left out of the table, or learned (docs/gate.md):

- hash randomisation: the run re-executes itself with ``PYTHONHASHSEED=0``
  (``reexec_with_hash_seed``), so set and dict-of-str orders are the same;
- random's global generator (numpy's), the state a standard module creates
  at its first use, the caches earlier tests fill, ``sys.argv``: seeded,
  warmed, cleared and stripped of the gate's options before each test
  (``count_steady``), so a test's counts do not depend on which tests ran
  before it (``-k``, xdist's scheduling) nor on the gate's options;
- garbage collections and the finalizers they run, module bodies and the
  import system, thread scheduling in threading/queue/asyncio internals,
  pytest's own code, threads that were running before the test began:
  left out of the table (``counts.py``);
- what still varies (a socket read's chunks, a polling loop, lock
  contention): learned.  A test recorded is run again, ``--fastprof-counts-runs``
  times in all (the same command re-run, in reverse then shuffled order:
  ``run_learning_passes``), and each count that varied is kept as its range
  (``counts.merge``); a later run alarms only outside it (``counts.compare``),
  and names the likely cause of what moved (``count_causes``).

With ``--fastprof-memory`` each table also holds the bytes each counted
function allocated and the test's sum (``counts.bytes_of_test``), learned
alike; a test fails when they grew beyond ``--fastprof-counts-memory-tolerance``
percent and ``--fastprof-counts-memory-min`` bytes (``counts.compare_bytes``).

Under pytest-xdist the workers compute their tests' tables and hand them to
the controller in a file (like the profiles of ``--fastprof``), which
compares and writes the baselines.
"""

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from ..data.atomic_file import write_bytes_atomically
from ..data.portable_names import PathsMemo, relative_paths
from ..data.profile_file import ProfileData
from ..tools import count_causes, counts
from . import count_steady, run_options

HASH_SEED = "0"
SKIP_MARK = "fastprof_counts_skip"   # a test (class, module) the gate leaves alone
TOLERANCE_MARK = "fastprof_counts_tolerance"   # (PERCENT): this test's own tolerance
REEXEC_MARK = "FASTPROF_COUNTS_REEXEC"
PASS_MARK = "FASTPROF_COUNTS_PASS"   # a learning pass: its number (2, 3...)
THREAD_GRACE = 0.25   # seconds a test's threads get to end after its teardown
THREAD_SETTLE = 2.0   # more seconds for those of them that still have work to run (Linux)
# the gate's options that take a value (stripped from sys.argv with it)
VALUE_OPTIONS = ("--fastprof-counts", "--fastprof-counts-tolerance", "--fastprof-counts-c-tolerance",
                 "--fastprof-counts-report", "--fastprof-counts-runs",
                 "--fastprof-counts-memory-tolerance", "--fastprof-counts-memory-min")


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


# ---------------------------------------------------------------- learning

def pass_order(items, number):
    """The tests of learning pass *number* (2, 3...) in the order it runs
    them: reversed for the second, shuffled (seeded by the number) after, so
    that state a first use creates is created by other tests than in the
    recording run and the counts it changes are learned."""
    if number == 2:
        items.reverse()
    elif number > 2:
        random.Random(number).shuffle(items)


def run_learning_passes(command, cwd, first, last):
    """Run the pytest *command* again as learning passes *first*..*last*
    (each merges its counts into the baselines still learning); the
    problems, one line each."""
    problems = []
    for number in range(first, last + 1):
        env = dict(os.environ)
        env[PASS_MARK] = str(number)
        env.pop(REEXEC_MARK, None)
        try:
            r = subprocess.run(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        except OSError as exc:
            problems.append("learning run %d could not start: %s" % (number, exc))
            break
        if r.returncode not in (0, 1):
            tail = r.stdout.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            problems.append("learning run %d ended with status %d: %s"
                            % (number, r.returncode, tail[0]))
            break
    return problems


def threads_now():
    """{native id: Thread} of the threads alive now ({} before threading is
    imported).  Native ids (the kernel's) because a thread started right after
    another ended often gets its ``ident`` back (a pthread address)."""
    threading = sys.modules.get("threading")
    if threading is None:
        return {}
    return {t.native_id: t for t in threading.enumerate()}


def _join(thread, timeout):
    try:
        thread.join(timeout)
    except RuntimeError:  # a thread that was never started
        pass


def _runnable(native_id):
    """Whether the kernel has thread *native_id* of this process running or
    waiting for a core (state R), as /proc says; False where it cannot say."""
    try:
        with open("/proc/self/task/%d/stat" % native_id, "rb") as f:
            stat = f.read()
    except (OSError, TypeError):  # gone, not Linux, or no native id
        return False
    return stat[stat.rfind(b")") + 2:][:1] == b"R"


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
        self.worker = hasattr(config, "workerinput")
        self.controller = getattr(config.option, "dist", "no") != "no" and not self.worker
        # a learning pass: its number (the controller's, handed to its workers)
        self.pass_number = (int(config.workerinput.get("fastprof_counts_pass", 0)) if self.worker
                            else _pass_number())
        self.update = config.getoption("fastprof_counts_update") and not self.pass_number
        try:
            self.tolerance = counts.parse_tolerance(config.getoption("fastprof_counts_tolerance"))
            c_tol = config.getoption("fastprof_counts_c_tolerance")
            self.c_tolerance = None if c_tol is None else counts.parse_tolerance(c_tol)
        except ValueError as exc:
            raise pytest.UsageError("fastprof: --fastprof-counts-tolerance: %s" % exc) from None
        self.memory = bool(profile_options.get("memory"))
        self.memory_tolerance, self.memory_min = _memory_limits(config, self.memory)
        self.runs = config.getoption("fastprof_counts_runs")
        if self.runs is None or self.runs < 1:
            raise pytest.UsageError("fastprof: --fastprof-counts-runs: %r is not a number of runs "
                                    ">= 1" % (self.runs,))
        report = config.getoption("fastprof_counts_report")
        self.report = os.path.abspath(report) if report and not self.pass_number else None
        self.reset = None if config.getoption("fastprof_counts_keep_caches") else count_steady.CacheReset()
        self.seed = not config.getoption("fastprof_counts_no_seed")
        self.warm = count_steady.Warmers()
        options = dict(profile_options)
        options.update(threads=True, callpaths=True, gc=True, builtins=True, max_depth=1024)
        self.profile_options = options
        try:
            os.makedirs(self.directory, exist_ok=True)
            run_options.new_profile(self.profile_options)  # refused now, not at the first test
        except (run_options.UsageError, OSError) as exc:
            raise pytest.UsageError("fastprof: --fastprof-counts: %s" % exc) from None
        # the learning passes re-run this command (what re-executes it for the hash seed)
        self.command = None
        if not (self.worker or self.pass_number) and tuple(config.invocation_params.args) == tuple(sys.argv[1:]):
            self.command = _command_line()
        # the tests see the same command line and environment with any gate option
        self.argv = sys.argv
        sys.argv = count_steady.argv_without_gate_options(sys.argv, VALUE_OPTIONS)
        os.environ.pop(REEXEC_MARK, None)
        os.environ.pop(PASS_MARK, None)
        self.tables = {}        # node id -> count table
        self.tolerances = {}    # node id -> its fastprof_counts_tolerance
        self.bad = set()        # node ids that failed or were skipped
        self.problems = []
        self.profile = None
        self.framework_files = None  # the pytest plugins' files (relative paths)
        self.paths_memo = PathsMemo()  # the files' relative paths, found once per run
        self.kinds_memo = {}    # what the table does with each function (counts.function_kind)
        self.before = {}        # the threads alive when the current test began
        self.left_running = 0   # how many of its threads ran on when its counting stopped
        self.test_thread = None  # the native id of the thread that runs it
        self.outcome = None
        self.written = []       # baseline files written
        self.rewritten = 0      # --fastprof-counts-update: tests whose baseline was there
        self.marked = 0         # tests marked fastprof_counts_skip
        self.learning = {}      # node id -> 1: recorded now, to learn over self.runs runs
        self.learned = None     # after the learning passes: (tests, counts) learned as ranges
        self.without_bytes = 0  # tests compared whose baselines have no bytes
        self.xdist_dir = None
        if self.controller:
            self.xdist_dir = tempfile.mkdtemp(prefix="fastprof-counts-")

    def pytest_unconfigure(self, config):
        sys.argv = self.argv

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        if self.pass_number:
            pass_order(items, self.pass_number)

    # -- the phases --------------------------------------------------------

    def _before_test(self, item):
        """Make the process-wide state the same for every test (count_steady)."""
        if self.reset is not None:
            self.reset()
        self.warm()
        if self.seed:
            count_steady.seed_generators(item.nodeid)
        self.before = threads_now()
        self.left_running = 0
        self.test_thread = _current_native_id()

    def _profiled(self, item, first=False, last=False):
        if first:
            self.profile = None
            self._before_test(item)
        if self.profile is None:
            self.profile = run_options.new_profile(self.profile_options)
            self.profile.paths_memo = self.paths_memo
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
            if last:
                self._wait_for_threads()
                # counted now, as counting stops: a thread ending while the
                # table is made was still running when its counts were cut
                self.left_running = len(self._started_threads())
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
        yield from self._profiled(item, last=True)
        prof, self.profile = self.profile, None
        if prof is None or item.nodeid in self.bad:
            return
        if item.get_closest_marker(SKIP_MARK) is not None:
            self.marked += 1
            return
        try:
            mark = item.get_closest_marker(TOLERANCE_MARK)
            if mark is not None:
                self.tolerances[item.nodeid] = counts.parse_tolerance(
                    mark.args[0] if mark.args else mark.kwargs.get("percent"))
            if self.framework_files is None:
                self.framework_files = plugin_files(self.config)
            table = self._table(prof, shared_fixture_keys(item))
            if self.left_running:
                table[counts.THREADS] = self.left_running
            self.tables[item.nodeid] = table
        except Exception as exc:  # never lose the run to the gate
            self.problems.append("%s: not counted: %s" % (item.nodeid, exc))

    def _wait_for_threads(self):
        """Give the threads the test started, still running at the end of its
        teardown, up to THREAD_GRACE seconds in all to end, still counted: a
        worker that handles a close request as the test ends does so inside
        the test, not before or after it as the machine's speed decides."""
        deadline = time.monotonic() + THREAD_GRACE
        for thread in self._started_threads().values():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            _join(thread, left)
        # then, up to THREAD_SETTLE more seconds, those that still have work
        # to run (the kernel has them runnable: woken by the data a test sent
        # its server, waiting only for a core on a loaded machine); a thread
        # blocked for good (a server on accept(), a sleeping poller) is not
        deadline = time.monotonic() + THREAD_SETTLE
        while time.monotonic() < deadline:
            busy = [t for native, t in self._started_threads().items() if _runnable(native)]
            if not busy:
                break
            _join(busy[0], 0.01)

    def _started_threads(self):
        """{native id: Thread} of the threads alive now that the test started."""
        here = threading_current()
        return {native: t for native, t in threads_now().items()
                if native not in self.before and t is not here}

    def _ran_before(self, ident, native):
        """Whether the thread of a record (its ident, native id) was running
        before the test began, other than the test's own.  3.9 and 3.10 know
        a thread's native id only from its own events, not for a thread that
        was running when profiling began (native 0): then its ident says
        (an alive thread's ident is not reused)."""
        if native:
            return native in self.before and native != self.test_thread
        return any(t.ident == ident for n, t in self.before.items() if n != self.test_thread)

    def _table(self, prof, noise_keys):
        """The test's count table, without the threads that were running
        before it began (a server an earlier test left running)."""
        foreign = [tid for tid, ident, native in prof.threads() if self._ran_before(ident, native)]
        if not foreign:
            table = counts.counts_of_test(self._counted_data(prof), framework_files=self.framework_files,
                                          noise_keys=noise_keys, kinds_memo=self.kinds_memo,
                                          memory=self.memory)
        else:
            table = {}
            for tid, _ident, _n in prof.threads():
                if tid in foreign:
                    continue
                part = counts.counts_of_test(prof.profile_data(thread=tid),
                                             framework_files=self.framework_files, noise_keys=noise_keys,
                                             kinds_memo=self.kinds_memo, memory=self.memory)
                for entry, count in part.items():
                    table[entry] = table.get(entry, 0) + count
        if self.memory:
            table[counts.MEMORY] = 1
        return table

    def _counted_data(self, prof):
        """What ``counts_of_test`` reads of *prof* (its stats, call paths,
        names, files' paths, line hits): ``profile_data()`` without what the
        table does not need (per-thread stats, compensation, own times)."""
        prof.create_stats()
        data = ProfileData(prof.stats, qualnames=prof.qualnames)
        data.callpaths = prof.callpaths_file()  # (with each node's bytes when memory is on)
        data.paths = self.paths_memo.relative_paths(key[0] for key in data.stats)
        data.lines = prof.line_stats() or {}
        return data

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
        if self.learning and not self.pass_number:
            self._learn()
        if self.report:
            text = (counts.as_json(self.outcome) if self.report.endswith(".json")
                    else counts.markdown(self.outcome))
            try:
                with open(self.report, "w", encoding="utf-8") as f:
                    f.write(text)
            except OSError as exc:
                self.problems.append("cannot write %s: %s" % (self.report, exc.strerror or exc))

    def _learn(self):
        """The learning passes of the tests recorded now (their baselines
        learned over fewer than --fastprof-counts-runs runs), then what they
        learned: how many counts varied, in which tests."""
        first = 2
        if self.command is None:
            self.outcome.notes.append(
                "%d test%s learned over fewer than %d runs: this pytest command cannot run "
                "itself again (pytest.main() in a program?), so the next runs learn instead of "
                "comparing them" % (len(self.learning), "" if len(self.learning) == 1 else "s",
                                    self.runs))
            return
        problems = run_learning_passes(self.command, str(self.config.invocation_params.dir),
                                       first, self.runs)
        self.outcome.notes.extend(problems)
        noisy = {}
        for nodeid in self.learning:
            path, name = counts.baseline_file(self.directory, nodeid)
            try:
                table = counts.read_tables(path).get(name) or {}
            except counts.BaselineError:
                continue
            ranges = counts.noisy_entries(table)
            if ranges:
                noisy[nodeid] = (ranges, table)
        self.learned = noisy

    def finish(self):
        """Compare the tables with the baselines, or learn from them (a
        baseline learned over fewer runs than --fastprof-counts-runs); record
        the new ones (all with --update)."""
        by_file = {}
        for nodeid, table in self.tables.items():
            if nodeid in self.bad:
                continue
            path, name = counts.baseline_file(self.directory, nodeid)
            by_file.setdefault(path, {})[name] = (nodeid, table)
        outcome = counts.Outcome(changed={}, recorded=[], notes=[], errors=[], causes={})
        noisy_tests = noisy_counts = accumulated = 0
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
                    # learned over more runs: "# runs: 1" until they merge in
                    fresh = dict(table, **{counts.RUNS: 1}) if self.runs > 1 else table
                    if old != fresh:
                        kept[name] = fresh
                        dirty = True
                    if old is None:
                        outcome.recorded.append(nodeid)
                    else:
                        self.rewritten += 1
                    if self.runs > 1:
                        self.learning[nodeid] = 1
                    continue
                runs = counts.runs_of(old)
                if runs is not None and runs < self.runs:
                    # still learning (recorded where the command could not
                    # run itself again): this run is one more, not compared
                    kept[name] = counts.merge(old, table)
                    dirty = True
                    accumulated += 1
                    continue
                if self.pass_number:
                    continue
                outcome.compared += 1
                ranges = len(counts.noisy_entries(old))
                if ranges:
                    noisy_tests += 1
                    noisy_counts += ranges
                tolerance = self.tolerances.get(nodeid, self.tolerance)
                c_tolerance = self.c_tolerance if nodeid not in self.tolerances else tolerance
                changes = counts.compare(old, table, tolerance, c_tolerance)
                if self.memory and old.get(counts.MEMORY):
                    changes += counts.compare_bytes(old, table, self.memory_tolerance, self.memory_min)
                elif self.memory:
                    self.without_bytes += 1
                if changes:
                    outcome.changed[nodeid] = changes
                    cause = count_causes.diagnose(changes, old, table)
                    if cause is not None:
                        outcome.causes[nodeid] = cause
            if dirty:
                try:
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    data = counts.format_tables(kept, "%d.%d" % sys.version_info[:2]).encode("utf-8")
                    write_bytes_atomically(path, data)
                    self.written.append(path)
                except OSError as exc:
                    self.problems.append("cannot write %s: %s" % (path, exc.strerror or exc))
        if accumulated and not self.pass_number:
            outcome.notes.append("%d test%s learned from this run, not compared: their baselines "
                                 "are learned over %d runs (--fastprof-counts-runs)"
                                 % (accumulated, "" if accumulated == 1 else "s", self.runs))
        if noisy_tests:
            outcome.notes.append("%d count%s in %d test%s were learned as noisy (they varied while "
                                 "recorded): compared with their learned range"
                                 % (noisy_counts, "" if noisy_counts == 1 else "s",
                                    noisy_tests, "" if noisy_tests == 1 else "s"))
        if self.without_bytes:
            outcome.notes.append("%d test%s compared without bytes: %s baseline%s recorded "
                                 "without --fastprof-memory (--fastprof-counts-update records them)"
                                 % (self.without_bytes, "" if self.without_bytes == 1 else "s",
                                    "its" if self.without_bytes == 1 else "their",
                                    "" if self.without_bytes == 1 else "s"))
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
        outcome.notes.extend(self.warm.problems)
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
            tr.write_line("%s (of %d compared); the baselines are in %s "
                          "(--fastprof-counts-update rewrites them):"
                          % (counts.changed_tests(o), o.compared, self._dir_shown()))
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
        if self.learned is not None:
            for line in self._learned_lines():
                tr.write_line(line)
        if self.written:
            tr.write_line("%d baseline file%s written under %s" % (
                len(self.written), "" if len(self.written) == 1 else "s", self._dir_shown()))
        for note in o.notes or []:
            tr.write_line("fastprof: " + note)
        if self.report:
            tr.write_line("report written to %s" % self.report)

    def _learned_lines(self, limit=20):
        """What the learning passes found: the tests whose counts varied."""
        n = len(self.learning)
        noisy = self.learned
        total = sum(len(r) for r, _t in noisy.values())
        lines = ["learned over %d runs (this one, then the same command in reverse and shuffled "
                 "order): %d of %d test%s varied, in %d count%s, kept as ranges%s"
                 % (self.runs, len(noisy), n, "" if n == 1 else "s", total,
                    "" if total == 1 else "s", ":" if noisy else "")]
        for nodeid in sorted(noisy)[:limit]:
            ranges, table = noisy[nodeid]
            changes = [counts.Change(e, table[e][0], table[e][1], table[e]) for e in ranges]
            cause = count_causes.diagnose(changes, table, {}, moved=False)
            lines.append("    %s: %d count%s%s" % (nodeid, len(ranges), "" if len(ranges) == 1 else "s",
                                                   " (%s)" % cause[0] if cause else ""))
        if len(noisy) > limit:
            lines.append("    ... and %d more" % (len(noisy) - limit))
        return lines

    def _dir_shown(self):
        return os.path.join(self.directory, counts.version_tag())

    # -- pytest-xdist ------------------------------------------------------

    def _hand_over(self):
        config = self.config
        path = os.path.join(config.workerinput["fastprof_counts_dir"],
                            "%s.json" % config.workerinput.get("workerid", os.getpid()))
        out = {"tables": None, "bad": sorted(self.bad), "problems": self.problems + self.warm.problems,
               "marked": self.marked, "tolerances": self.tolerances}
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
        node.workerinput["fastprof_counts_pass"] = self.pass_number

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
        self.tolerances.update(output.get("tolerances", {}))
        if output["tables"]:
            try:
                with open(output["tables"], encoding="utf-8") as f:
                    self.tables.update(json.load(f))
            except (OSError, ValueError) as exc:
                self.problems.append("%s's counts are lost: %s" % (name, exc))


def _memory_limits(config, memory):
    """(--fastprof-counts-memory-tolerance, --fastprof-counts-memory-min) with
    their defaults; a UsageError when given without --fastprof-memory or bad."""
    tolerance = config.getoption("fastprof_counts_memory_tolerance")
    least = config.getoption("fastprof_counts_memory_min")
    if not memory:
        if tolerance is not None or least is not None:
            raise pytest.UsageError("fastprof: --fastprof-counts-memory-tolerance and "
                                    "--fastprof-counts-memory-min need --fastprof-memory")
        return None, None
    try:
        tolerance = counts.BYTES_TOLERANCE if tolerance is None else counts.parse_tolerance(tolerance)
    except ValueError as exc:
        raise pytest.UsageError("fastprof: --fastprof-counts-memory-tolerance: %s" % exc) from None
    if least is not None and least < 0:
        raise pytest.UsageError("fastprof: --fastprof-counts-memory-min: %d is not a number of "
                                "bytes >= 0" % least)
    return tolerance, counts.BYTES_MIN if least is None else least


def _pass_number():
    try:
        return max(0, int(os.environ.get(PASS_MARK, "0")))
    except ValueError:
        return 0


def threading_current():
    threading = sys.modules.get("threading")
    return threading.current_thread() if threading is not None else None


def _current_native_id():
    threading = sys.modules.get("threading")
    return threading.get_native_id() if threading is not None else None
