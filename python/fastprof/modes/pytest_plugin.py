"""The pytest plugin: ``pytest --fastprof[=FILE]`` and ``--fastprof-per-test DIR``.

Registered through the ``pytest11`` entry point as ``fastprof`` (so
``-p no:fastprof`` turns it off). pytest imports every plugin at start-up:
this module imports nothing but os, pytest and the run options' declarations
(cmdline: os and sys) until one of its options is given; the C extension is
loaded when the first profile is made.

What is profiled: the three phases of each test -- setup (its fixtures),
call (the test function) and teardown (fixture finalizers) -- and nothing
between them (collection, reporting, other plugins' hook wrappers are
not).  Profiling starts as the last hook wrapper around each phase and stops
as the first thing after it, so only pytest's runner functions that run a
phase (a few rows, microseconds) are in the profile besides the test's own
code.  All threads that run Python code while a phase runs are profiled,
as ``python -m fastprof`` does.

``--fastprof-lines``, ``--fastprof-lines-from``, ``--fastprof-only`` and
``--fastprof-fast`` are python -m fastprof's ``--lines``... Under
pytest-xdist (``-n N``) the workers profile their tests and hand their
profiles to the controller, which sums them (XdistController).

``--fastprof-counts DIR`` (the performance gate: exact call counts per
test, compared with DIR's baselines) is modes/count_gate.py, imported only
when that option is given; its options are declared here.
"""

import os

import pytest

from ..data import formats
from . import run_options

DEFAULT_FILE = "fastprof.prof"
SLOWEST_TESTS = 5
TOP_FUNCTIONS = 10
# python -m fastprof's run options the plugin takes, as --fastprof-lines etc.
RUN_OPTIONS = ("--lines", "--lines-from", "--only", "--fast", "--no-compensate", "--memory")
# their dest and default in python -m fastprof's parser
_RUN_ROWS = {flags[-1]: (dest, default)
             for flags, dest, _a, _k, default, _m, _h in run_options.RUN_OPTIONS}
PREFIX = "--fastprof-"


def _spelled(option):
    """How run option *option* is spelled here: --lines -> --fastprof-lines."""
    return PREFIX + option[2:]


def _respelled(text):
    """*text* (a run option's help) with the options the plugin takes spelled
    its way, and ``-o FILE`` as ``--fastprof=FILE``; another fastprof
    command's line (``fastprof view FILE --memory``) is left as it is."""
    import re  # (at start-up: pytest imported it)
    names = "|".join(sorted((o[2:] for o in RUN_OPTIONS), key=len, reverse=True))

    def spelled(m):
        if m.group("command"):
            return m.group(0)
        if m.group("output"):
            return "--fastprof=FILE"
        return _spelled(m.group(0))
    return re.sub(r"(?P<command>fastprof [a-z]+ [^)]*)|(?P<output>-o FILE)|--(%s)\b" % names,
                  spelled, text)


def pytest_addoption(parser):
    group = parser.getgroup("fastprof", "fastprof profiler")
    group.addoption(
        "--fastprof", nargs="?", const=DEFAULT_FILE, default=None, metavar="FILE",
        help="profile each test's setup, call and teardown with fastprof; write the "
             "profile to FILE (default: %s in the rootdir), in the format its name "
             "asks for (%s; pstats for any other name), and "
             "show the slowest tests and functions at the end. Write --fastprof=FILE "
             "(with '=') or put it after the test paths, so that a path is not taken "
             "for FILE." % (DEFAULT_FILE, formats.known_names()))
    group.addoption(
        "--fastprof-per-test", metavar="DIR", default=None,
        help="also write one .prof file per test into DIR (created if needed), "
             "named after the test's node id")
    # python -m fastprof's --lines, --lines-from, --only, --fast,
    # --no-compensate and --memory, as it declares them
    for flags, _d, action, kind, default, metavar, text in run_options.RUN_OPTIONS:
        if flags[-1] not in RUN_OPTIONS:
            continue
        kwargs = {"action": action, "help": _respelled(text).replace("%", "%%"),
                  "default": list(default) if isinstance(default, list) else default}
        if metavar is not None:
            kwargs["metavar"] = metavar
        if kind is not None:
            kwargs["type"] = kind
        group.addoption(_spelled(flags[-1]), **kwargs)
    _add_count_options(group)


def _add_count_options(group):
    """The performance gate's options (modes/count_gate.py, imported only when given)."""
    group.addoption(
        "--fastprof-counts", metavar="DIR", default=None,
        help="performance gate: record each test's exact call counts (per function and "
             "per caller -> callee edge, its setup, call and teardown, all threads) into "
             "DIR (one text file per test module and Python version) on the first run; on "
             "later runs compare and fail the run when a test's counts changed, naming the "
             "functions and edges (docs/gate.md)")
    group.addoption(
        "--fastprof-counts-update", action="store_true", default=False,
        help="with --fastprof-counts: rewrite the baselines of the tests that ran "
             "instead of comparing")
    group.addoption(
        "--fastprof-counts-tolerance", metavar="PERCENT", default="0",
        help="with --fastprof-counts: a count of a Python function or edge may move by "
             "PERCENT of its baseline value (default 0: exact)")
    group.addoption(
        "--fastprof-counts-c-tolerance", metavar="PERCENT", default=None,
        help="with --fastprof-counts: the same for C functions and edges into them "
             "(default: --fastprof-counts-tolerance's value)")
    group.addoption(
        "--fastprof-counts-report", metavar="FILE", default=None,
        help="with --fastprof-counts: also write the comparison to FILE, as JSON if "
             "its name ends in .json, else as markdown (e.g. \"$GITHUB_STEP_SUMMARY\")")
    group.addoption(
        "--fastprof-counts-keep-caches", action="store_true", default=False,
        help="with --fastprof-counts: do not clear functools.lru_cache and re caches "
             "before each test (counts then depend on the tests that ran before)")
    group.addoption(
        "--fastprof-counts-runs", metavar="N", type=int, default=3,
        help="with --fastprof-counts: learn each new baseline over N runs (default 3): the "
             "recording run re-runs the same command N-1 times (reversed, then shuffled "
             "order) and keeps each count that varied as its range; 1: record one run")
    group.addoption(
        "--fastprof-counts-no-seed", action="store_true", default=False,
        help="with --fastprof-counts: do not seed random's global generator, the modules' own "
             "random.Random generators and numpy's legacy one from each test's node id before "
             "it runs")
    group.addoption(
        "--fastprof-counts-memory-tolerance", metavar="PERCENT", default=None,
        help="with --fastprof-counts and --fastprof-memory (which also records and compares "
             "the bytes each test's functions allocate): a function's or test's bytes may grow "
             "by PERCENT of its baseline value (default 10); allocating less always passes")
    group.addoption(
        "--fastprof-counts-memory-min", metavar="BYTES", type=int, default=None,
        help="with --fastprof-counts and --fastprof-memory: growth of at most BYTES passes "
             "too (default 1024)")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    if config.getoption("fastprof_counts", None) is not None:
        # before anything runs: the counts are of PYTHONHASHSEED=0 (docs/gate.md)
        from .count_gate import reexec_with_hash_seed  # (deferred: nothing at pytest start-up)
        reexec_with_hash_seed(config)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "fastprof_counts_tolerance(PERCENT): pytest --fastprof-counts lets this "
                   "test's counts move by PERCENT of their baseline")
    config.addinivalue_line(
        "markers", "fastprof_counts_skip: pytest --fastprof-counts neither records nor "
                   "compares this test's call counts (its work depends on what ran before it)")
    outfile = config.getoption("fastprof", None)
    per_test = config.getoption("fastprof_per_test", None)
    counts_dir = config.getoption("fastprof_counts", None)
    if counts_dir is not None:
        if outfile is not None or per_test is not None:
            raise pytest.UsageError("fastprof: --fastprof-counts cannot be combined with "
                                    "--fastprof or --fastprof-per-test (one profiler at a time)")
        _configure_counts(config, counts_dir)
        return
    for option in ("update", "report", "keep_caches", "no_seed", "memory_tolerance", "memory_min"):
        if config.getoption("fastprof_counts_" + option, None) not in (None, False):
            raise pytest.UsageError("fastprof: --fastprof-counts-%s needs --fastprof-counts DIR"
                                    % option.replace("_", "-"))
    if outfile is None and per_test is None:
        for option in RUN_OPTIONS:
            if config.getoption(_dest(option), None) not in (None, _RUN_ROWS[option][1]):
                raise pytest.UsageError("fastprof: %s needs --fastprof[=FILE], "
                                        "--fastprof-per-test DIR or --fastprof-counts DIR"
                                        % _spelled(option))
        return
    if outfile == DEFAULT_FILE:
        outfile = os.path.join(str(config.rootpath), DEFAULT_FILE)
    session = FastprofSession(config, outfile, per_test)
    config.pluginmanager.register(session, "fastprof-session")
    if session.controller:
        config.pluginmanager.register(XdistController(session), "fastprof-xdist")


def _configure_counts(config, directory):
    """--fastprof-counts DIR: the performance gate (modes/count_gate.py)."""
    from .count_gate import CountGate  # (deferred: nothing at pytest start-up)
    try:
        options = _run_options(config)
        run_options.check_scope_options(options, name=_spelled)
        profile_options = run_options.profile_options(options, True)
    except run_options.UsageError as exc:
        raise pytest.UsageError("fastprof: %s" % exc) from None
    config.pluginmanager.register(CountGate(config, directory, profile_options),
                                  "fastprof-counts")


def _xdist_role(config):
    """'worker' in a pytest-xdist worker, 'controller' in the process that
    hands the tests to workers (-n N, N > 0), None without pytest-xdist."""
    if hasattr(config, "workerinput"):
        return "worker"
    if getattr(config.option, "dist", "no") != "no":
        return "controller"
    return None


def _dest(option):
    return _spelled(option)[2:].replace("-", "_")


def _run_options(config):
    """The run options as python -m fastprof's parser gives them (the
    plugin's own values where it takes them, the defaults elsewhere)."""
    import types
    values = dict(run_options.RUN_DEFAULTS)
    for option in RUN_OPTIONS:
        values[_RUN_ROWS[option][0]] = config.getoption(_dest(option))
    return types.SimpleNamespace(**values)


def _looks_like_test_path(value):
    """True if --fastprof's FILE is really a test path (``--fastprof tests/``)."""
    return "::" in value or value.endswith(".py") or os.path.isdir(value)


def safe_file_name(nodeid):
    """A file name for a test's node id: letters, digits, '.', '-' and '_' only."""
    import re
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid).strip("_.") or "test"
    return name[:200]


class FastprofSession:
    """Profiles the test phases of one pytest session (registered only when
    --fastprof or --fastprof-per-test is given)."""

    def __init__(self, config, outfile, per_test_dir):
        self.config = config
        self.fmt = None
        try:
            if outfile is not None:
                if _looks_like_test_path(outfile):
                    raise run_options.UsageError(
                        "--fastprof took %r for its FILE: write --fastprof=FILE, or put "
                        "--fastprof after the test paths" % outfile)
                outfile = os.path.abspath(outfile)  # a test may chdir
                self.fmt = run_options.output_format(outfile)
                run_options.check_output_path(outfile)
            if per_test_dir is not None:
                per_test_dir = os.path.abspath(per_test_dir)
                os.makedirs(per_test_dir, exist_ok=True)
                run_options.check_output_path(os.path.join(per_test_dir, "x.prof"))
            options = _run_options(config)
            run_options.check_scope_options(options, name=_spelled)
            self.callpaths = self.fmt in formats.TREE_FORMATS
            self.profile_options = run_options.profile_options(options, self.callpaths)
            self.profile_options["threads"] = True
            run_options.new_profile(self.profile_options)  # refused now, not at the first test
        except (run_options.UsageError, OSError) as exc:
            raise pytest.UsageError("fastprof: %s" % exc) from None
        self.outfile = outfile
        self.per_test_dir = per_test_dir
        role = _xdist_role(config)
        self.worker = role == "worker"          # profiles its tests, hands them over
        self.controller = role == "controller"  # runs no test: sums the workers'
        self.unmatched = None      # --fastprof-lines/-only: patterns no profile matched
        self.profile = None        # the session's profile (with per_test_dir: emptied after each test)
        self.sum = None            # the controller: the workers' profiles summed (per_test.RunningSum)
        self.tests = None          # per_test_dir: the tests' files and their sum (per_test.TestProfiles)
        self.times = {}            # node id -> profiled seconds (its three phases)
        self.per_test_files = {}   # file name -> node id
        self.problems = []         # one line each, shown in the summary
        self.written = None
        self.final = None          # what was written (or shown) at the end

    # -- the phases --------------------------------------------------------

    def _new_profile(self):
        prof = run_options.new_profile(self.profile_options)
        if self.per_test_dir is not None:
            if self.tests is None:
                # made before the first test, as everything that allocates
                # much: work between two tests moves the collections in them
                from .per_test import TestProfiles  # (deferred: nothing at pytest start-up)
                self.tests = TestProfiles(self.profile_options, HIDDEN)
            prof.paths_memo = self.tests.paths_memo
        return prof

    def _note_unmatched(self, prof=None, lines=None):
        """Keep the patterns that named nothing in any of the profiles (of
        *prof*, or a worker's *lines*)."""
        if prof is not None:
                lines = run_options.unmatched_patterns(prof, name=_spelled)
        self.unmatched = lines if self.unmatched is None else [
            line for line in self.unmatched if line in lines]

    def _profiled(self, item):
        """Run the rest of a phase (the hook wrapper's yield) under the profile."""
        import time
        if self.profile is None:
            self.profile = self._new_profile()
        prof = self.profile
        start = time.perf_counter()  # before enable(): no row of its own
        try:
            prof.enable()
        except Exception as exc:  # another tool holds the profiler slot
            self.problems.append("%s: not profiled: %s" % (item.nodeid, exc))
            yield
            return
        try:
            yield
        finally:
            try:
                prof.disable()
            except Exception as exc:
                self.problems.append("%s: profiling stopped early: %s" % (item.nodeid, exc))
            self.times[item.nodeid] = self.times.get(item.nodeid, 0.0) + (
                time.perf_counter() - start)

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_setup(self, item):
        yield from self._profiled(item)

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_call(self, item):
        yield from self._profiled(item)

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_teardown(self, item):
        yield from self._profiled(item)
        if self.per_test_dir is not None:
            self._test_done(item.nodeid)

    def _test_done(self, nodeid):
        """--fastprof-per-test: write this test's profile, add it to the sum."""
        prof = self.profile
        if prof is None:
            return
        self._note_unmatched(prof)
        name = safe_file_name(nodeid)
        base, n = name, 1
        while name in self.per_test_files:
            n += 1
            name = "%s-%d" % (base, n)
        self.per_test_files[name] = nodeid
        tests = self.tests
        data = None
        try:
            data = tests.write(prof, os.path.join(self.per_test_dir, name + ".prof"))
        except OSError as exc:
            self.problems.append("cannot write %s's profile: %s" % (nodeid, exc))
        try:
            tests.add(prof, data)
        except MemoryError:
            self.problems.append("out of memory: the session's profile lacks part of %s's"
                                 % nodeid)
        # the next test's profiler is this one emptied: a new one costs its
        # set-up and its first enable() (on 3.12+ a monitoring tool's
        # registration), ~0.3 ms a test
        prof.clear()

    def _add(self, data):
        if self.sum is None:
            from .per_test import RunningSum  # (deferred: nothing at pytest start-up)
            self.sum = RunningSum()
        self.sum.add(data)

    # -- the end -----------------------------------------------------------

    def session_data(self):
        if self.controller:
            return self.sum.result() if self.sum is not None else None
        if self.per_test_dir is not None:
            return self.tests.result() if self.tests is not None else None
        if self.profile is None:
            return None
        data = HIDDEN.without(self.profile.profile_data())
        self._note_unmatched(self.profile)
        return data

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        # written here, however the run ends (failures, -x, Ctrl-C)
        self.final = self.session_data()
        if self.worker:
            self._hand_over()
            return
        if self.final is None or self.outfile is None:
            return
        try:
            run_options.write_output(self.final, self.outfile, self.fmt)
            self.written = self.outfile
        except OSError as exc:
            self.problems.append("cannot write %s: %s" % (self.outfile, exc.strerror or exc))

    # -- pytest-xdist ------------------------------------------------------

    def _hand_over(self):
        """A worker: its profile into the controller's directory, the rest
        (times, files, problems) in its workeroutput."""
        config = self.config
        out = {"times": self.times, "per_test_files": self.per_test_files,
               "problems": self.problems, "unmatched": self.unmatched, "profile": None}
        if self.final is not None:
            from ..data.profile_file import write_profile  # (deferred: nothing at pytest start-up)
            path = os.path.join(config.workerinput["fastprof_dir"],
                                "%s.prof" % config.workerinput.get("workerid", os.getpid()))
            try:
                write_profile(path, self.final)
                out["profile"] = path
            except OSError as exc:
                out["problems"] = self.problems + ["cannot hand over %s's profile: %s"
                                                   % (config.workerinput.get("workerid"), exc)]
        config.workeroutput["fastprof"] = out

    def add_worker(self, node, output):
        """The controller: add what worker *node* handed over (nothing if it crashed)."""
        name = getattr(node, "gateway", None)
        name = getattr(name, "id", "a worker")
        if output is None:
            self.problems.append("%s ended without handing over its profile" % name)
            return
        self.times.update(output["times"])
        self.per_test_files.update(output["per_test_files"])
        self.problems.extend(output["problems"])
        if output["unmatched"] is not None:
            self._note_unmatched(lines=output["unmatched"])
        if output["profile"] is not None:
            from ..data.profile_file import ProfileFileError, load_profile  # (deferred: nothing at pytest start-up)
            try:
                data = load_profile(output["profile"])
            except ProfileFileError as exc:
                self.problems.append("%s's profile is lost: %s" % (name, exc))
                return
            self._add(data)

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        tr.write_sep("=", "fastprof")
        data = self.final
        if data is None:
            tr.write_line("no test ran: nothing was profiled")
        else:
            for line in summary_lines(data, self.times):
                tr.write_line(line)
        for line in self.problems + (self.unmatched or []):
            tr.write_line("fastprof: " + line)
        if data is not None and data.lines:
            n = len(data.lines)
            tr.write_line("line stats of %d function%s in the profile (fastprof view FILE "
                          "--lines)" % (n, "" if n == 1 else "s"))
        if self.written:
            tr.write_line("profile written to %s (all tests; fastprof view %s)"
                          % (self.written, self.written))
        if self.per_test_dir is not None and self.per_test_files:
            tr.write_line("%d per-test profiles written to %s"
                          % (len(self.per_test_files), self.per_test_dir))


class XdistController:
    """With pytest-xdist (-n N): the workers run and profile the tests, each
    writing its profile into a private directory when it ends; the
    controller sums them into FILE (and the summary) as if one process had
    run every test."""

    def __init__(self, session):
        import tempfile
        self.session = session
        self.directory = tempfile.mkdtemp(prefix="fastprof-xdist-")  # 0700

    def pytest_configure_node(self, node):
        node.workerinput["fastprof_dir"] = self.directory

    def pytest_testnodedown(self, node, error):
        output = getattr(node, "workeroutput", None) or {}
        self.session.add_worker(node, output.get("fastprof"))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        import shutil
        shutil.rmtree(self.directory, ignore_errors=True)


class HiddenRows:
    """What the plugin hides of every profile it writes, stated once: the
    rows of the code objects of *file* (the plugin's hook wrappers, resumed
    inside each profiled phase), the edges from them, and a C function
    called only from those rows whose name ``hides_c_function`` accepts
    (the disable() they end with).  ``without`` applies it to a profile's
    data (the general path); a per-test file written in C is handed *file*
    and ``hides_c_function`` (``Profile.one_thread_marshal``), and C applies
    that and nothing else."""

    def __init__(self, file):
        self.file = file

    @staticmethod
    def hides_c_function(name):
        """Whether a C function named *name*, called only from hidden rows, is hidden."""
        return "disable" in name

    def keys(self, stats):
        """The hidden keys of pstats dict *stats*."""
        own = {k for k in stats if k[0] == self.file}
        if not own:
            return own
        for key, row in stats.items():
            if key[0] == "~" and row[4] and set(row[4]) <= own and self.hides_c_function(key[2]):
                own.add(key)
        return own

    def without(self, data):
        """ProfileData *data* without the hidden rows (nor edges from them,
        nor call paths through them, nor their qualified names and files)."""
        own = self.keys(data.stats)
        if not own:
            return data
        whole, data.stats = data.stats, _drop(data.stats, own)
        data.qualnames = {k: q for k, q in data.qualnames.items() if k not in own}
        files = {k[0] for k in data.stats}
        data.paths = {f: r for f, r in data.paths.items() if f in files}
        for t in data.threads:
            # one thread's stats are the whole table's (a copy): dropped once
            t["stats"] = dict(data.stats) if t["stats"] == whole else _drop(t["stats"], own)
        cp = data.callpaths
        if cp is not None:
            from ..data.profile_file import CallPaths  # (deferred: nothing at pytest start-up)
            keep, nodes = {}, []
            for i, (parent, func, calls, tt, ct) in enumerate(cp.nodes):
                if tuple(cp.functions[func]) in own or (parent >= 0 and parent not in keep):
                    continue
                keep[i] = len(nodes)
                nodes.append((keep[parent] if parent >= 0 else -1, func, calls, tt, ct))
            data.callpaths = CallPaths(cp.functions, nodes)
        return data


def _drop(stats, own):
    # a row no own row called is kept as it is (most of them)
    return {k: v if own.isdisjoint(v[4]) else
            v[:4] + ({c: e for c, e in v[4].items() if c not in own},)
            for k, v in stats.items() if k not in own}


# this module's code objects' file (co_filename): the hook wrappers' rows
HIDDEN = HiddenRows(FastprofSession._profiled.__code__.co_filename)


def summary_lines(data, times):
    """The terminal summary: slowest tests, then top functions by own time."""
    from ..data.names import func_label  # (deferred: nothing at pytest start-up)
    from ..tools.view import format_percent, format_time, micro_sign, render_table  # (deferred: nothing at pytest start-up)
    micro = micro_sign()
    lines = ["profiled time %s in %d tests (setup, call and teardown)"
             % (format_time(sum(times.values()), micro), len(times))]
    slow = sorted(times.items(), key=lambda kv: -kv[1])[:SLOWEST_TESTS]
    lines.append("slowest tests:")
    lines += render_table(["time", "test"], [[format_time(t, micro), n] for n, t in slow], "rl")
    total = sum(v[2] for v in data.stats.values())
    top = sorted(data.stats.items(), key=lambda kv: -kv[1][2])[:TOP_FUNCTIONS]
    lines.append("top functions by own time:")
    lines += render_table(
        ["own time", "%", "calls", "function"],
        [[format_time(v[2], micro), format_percent(v[2], total), str(v[1]),
          func_label(k, qualnames=data.qualnames)] for k, v in top], "rrrl")
    return lines
