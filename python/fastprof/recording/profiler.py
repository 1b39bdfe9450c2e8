"""``fastprof.Profile``: cProfile's ``Profile`` on top of the C profiler.

Everything cProfile's ``Profile`` offers works the same way here (and
``pstats.Stats(profile)`` reads it the same way); the extras -- threads,
clock, coroutine mode, call paths, per-thread views, caller/callee views --
are keyword-only or separate methods, so code written for cProfile runs
unchanged.
"""

import sys

try:
    from .. import _fastprof
except ImportError as exc:  # say what is missing and what still works, in one line
    _package = __package__.rpartition(".")[0]
    raise ImportError(
        "fastprof's C extension is missing (%s): profiling needs it; fastprof view, "
        "diff, merge and convert work without it"
        # (not found: "cannot import name" from the package; found but not
        # loadable: the loader's reason)
        % ("%s._fastprof is not built for Python %d.%d" % ((_package,) + sys.version_info[:2])
           if exc.name == _package else str(exc).splitlines()[0]),
        name=_package + "._fastprof") from None
from ..data.arguments import CLOCKS, COROUTINE_MODES, check_bool, check_choice, check_max_depth

# Nothing else is imported here (arguments imports nothing): ``import
# fastprof`` must not change what the program's own imports cost (threading,
# weakref, functools... register ABCs, which empties every ABC's isinstance
# cache). The rest is imported where it is used; threading only if the
# program imported it.

__all__ = ["Profile", "run", "runctx", "profile"]

def entries_to_stats(entries):
    """Turn ``getstats()`` entries into a pstats dict.

    This is cProfile's ``Profile.snapshot_stats`` except where several
    entries share a label (two lambdas on one line, a function redefined in
    a loop, closures from one factory): cProfile keeps the last of them and
    drops the others' calls; here they are summed, as ``pstats.Stats.add``
    sums two profiles -- counts, times, and callers, on either side of an
    edge.  The loop is C (csrc/fpy_stats_dict.c): the key of a code object
    is ``names.label``'s, each entry's added to the ones before it.
    """
    return _fastprof._entries_stats(entries)


def shared_key_rows(entries):
    """``{key: [(qualified name or "", row), ...]}``: for each key several
    code objects of ``getstats()`` *entries* share, each one's own pstats
    row, its callers the edges into that code object (the file's
    ``shared_keys``).  cProfile's ``snapshot_stats`` keeps one of them (its
    dict overwrites: the last entry, the highest address in _lsprof's tree)
    and sums the edges *from* them all, as ``entries_to_stats`` does; so
    these rows are what a comparison with a cProfile file needs."""
    from ..data.names import label  # (deferred: import fastprof adds nothing to cProfile's imports)
    by_key = {}
    for e in entries:
        if not isinstance(e.code, str):  # (C functions: one entry per name)
            by_key.setdefault(label(e.code), []).append(e)
    shared = {key: group for key, group in by_key.items() if len(group) > 1}
    if not shared:
        return {}
    rows = {}  # id(code) -> [cc, nc, tt, ct, callers]
    for group in shared.values():
        for e in group:
            rows[id(e.code)] = [e.callcount - e.reccallcount, e.callcount,
                                e.inlinetime, e.totaltime, {}]
    for e in entries:
        caller = None
        for sub in e.calls or ():
            row = rows.get(id(sub.code))
            if row is None:
                continue
            caller = caller or label(e.code)
            nc, cc = sub.callcount, sub.callcount - sub.reccallcount
            prev = row[4].get(caller, (0, 0, 0.0, 0.0))
            row[4][caller] = (prev[0] + nc, prev[1] + cc, prev[2] + sub.inlinetime,
                              prev[3] + sub.totaltime)
    out = {}
    for key, group in shared.items():
        parts = [(_qualname(e.code), tuple(rows[id(e.code)])) for e in group]
        parts.sort(key=lambda p: (p[0], -p[1][1]))
        out[key] = parts
    return out


def _qualname(code):
    """*code*'s qualified name where it says more than its name (3.11+), else ""."""
    qual = getattr(code, "co_qualname", "")
    return qual if qual != code.co_name else ""


def callpaths_to_file(nodes):
    """Turn C ``callpaths()`` nodes into a ``profile_file.CallPaths``.

    C nodes are ``(parent, code, calls, inlinetime, totaltime)``; the file
    keeps ``(parent, function index, calls, tottime, cumtime)`` with the
    functions, named by ``label()``, listed once each. Sibling nodes whose
    functions share a label are merged into one (counts and times summed),
    and so are their children, recursively, as in ``entries_to_stats``.
    Nodes of ``_memory_callpaths()`` carry their memory after the times
    (memory.FIELDS): kept in ``CallPaths.memory``, merged alike (the peak
    of one call is the larger).
    """
    from ..data.names import label  # (deferred: import fastprof adds nothing to cProfile's imports)
    from ..data.profile_file import CallPaths  # (deferred: import fastprof adds nothing to cProfile's imports)
    functions = []
    index = {}
    out = []
    merged = {}  # (parent in out, function index) -> its node in out
    where = []   # C node index -> its node in out
    # C's times: inlinetime is own time (pstats' tottime), totaltime is
    # cumulative (pstats' cumtime), as in _lsprof
    memory = []
    for parent, code, calls, inlinetime, totaltime, *counts in nodes:
        key = label(code)
        i = index.get(key)
        if i is None:
            i = index[key] = len(functions)
            functions.append(key)
        parent = where[parent] if parent >= 0 else -1
        n = merged.get((parent, i))
        if n is None:
            n = merged[(parent, i)] = len(out)
            out.append((parent, i, calls, inlinetime, totaltime))
            memory.append(tuple(counts))
        else:
            _p, _i, c, own, cum = out[n]
            out[n] = (parent, i, c + calls, own + inlinetime, cum + totaltime)
            if counts:
                *summed, peak = (a + b for a, b in zip(memory[n], counts))
                memory[n] = tuple(summed) + (max(memory[n][-1], counts[-1]),)
        where.append(n)
    return CallPaths(functions, out, memory if nodes and len(nodes[0]) > 5 else None)


class Profile(_fastprof.Profiler):
    """Profile(timer=None, timeunit=0.0, subcalls=True, builtins=None, *,
    threads=False, clock="wall", coroutines="call", callpaths=False,
    max_depth=128, gc=True, lines=None, only=None, fast=False, compensate=True,
    memory=False)

    A drop-in replacement for ``cProfile.Profile``.

    The first four arguments are cProfile's: a custom ``timer`` returning a
    float means seconds; one returning an int is scaled by ``timeunit``
    seconds per unit.  ``subcalls=False`` records no caller/callee edges,
    ``builtins=False`` does not profile C functions.

    Keyword-only extras:

    - ``threads``: profile every thread of the process, not just the one
      that calls ``enable()``; see ``thread_stats()``.
    - ``clock``: ``"wall"`` (default) or ``"cpu"`` (per-thread CPU time).
      Ignored when ``timer`` is given.
    - ``coroutines``: ``"call"`` (cProfile: every resume of a generator or
      coroutine is a call) or ``"wall"`` (one call from start to finish;
      cumtime is wall time across suspensions).
    - ``callpaths``: also record the calling-context tree (written to the
      ``.prof`` trailer; drawn by the flame graph exports), ``max_depth``
      deep at most.
    - ``gc``: record each garbage collection as a call of the pseudo-function
      ``<gc>`` (pstats key ``('~', 0, '<gc>')``) made by the function that was
      running when it started, so its pause is not charged to that function's
      own time.  ``gc=False`` leaves the pauses where cProfile leaves them.
    - ``lines``: a list of function patterns (``"myapp.db:Query.*"``,
      ``"lines_prog:hot"``, ``"src/app/*.py"``; see docs/lines.md): those
      functions also get each line's hits and time, in ``line_stats()`` and
      the ``.prof`` trailer, and where exact its own time
      (``line_own_stats()``).
    - ``only``: function patterns (the same syntax): record only those
      functions, and the C functions they call directly; the time of calls
      into other Python code stays in the calling function's own time.
    - ``fast``: Python functions only, through a PEP 523 frame evaluator
      instead of the interpreter's events: much cheaper, counts as
      ``cProfile.Profile(builtins=False)``; a C function's time is its
      caller's own time.  ``builtins`` then defaults to False (True is a
      ValueError) and ``coroutines`` must be ``"call"``.  Refused while
      another frame evaluator is installed, or another fast profiler runs.
    - ``compensate``: take the profiler's own cost out of every time
      (default; each event's time inside the profiler, plus a per-event
      delivery cost measured once per process, when the first such
      profiler is made;
      see docs/performance.md).  ``False`` gives raw times, as cProfile's;
      a custom ``timer`` always gets raw times.
    - ``memory``: also count, while enabled, every block Python's
      allocators hand out and take back, for the function (and caller)
      that allocated it: ``memory_stats()``, ``memory_totals()`` (see
      docs/memory.md).  One memory profile at a time per process.
    """

    # a portable_names.PathsMemo that the trailer's ``paths`` are taken with
    # (one per run mode that writes many profiles in one process), or None
    paths_memo = None

    def __init__(self, timer=None, timeunit=0.0, subcalls=True, builtins=None, *,
                 threads=False, clock="wall", coroutines="call", callpaths=False,
                 max_depth=128, gc=True, lines=None, only=None, fast=False, compensate=True,
                 memory=False):
        if timer is not None and not callable(timer):
            raise TypeError("timer must be a callable or None, not %r" % (timer,))
        if timeunit is None:  # cProfile's docstring says timeunit=None
            timeunit = 0.0
        if isinstance(timeunit, bool) or not isinstance(timeunit, (int, float)):
            raise TypeError("timeunit must be a number, not %r" % (timeunit,))
        if not timeunit >= 0.0:
            raise ValueError("timeunit must be >= 0, not %r" % (timeunit,))
        subcalls = check_bool("subcalls", subcalls)
        fast = check_bool("fast", fast)
        builtins = not fast if builtins is None else check_bool("builtins", builtins)
        if fast and builtins:
            raise ValueError("fast=True profiles Python functions only: "
                             "builtins=True cannot be combined with it")
        if fast and coroutines == "wall":
            raise ValueError("fast=True supports coroutines='call' only "
                             "(coroutines='wall' needs the default mode)")
        threads = check_bool("threads", threads)
        callpaths = check_bool("callpaths", callpaths)
        gc = check_bool("gc", gc)
        compensate = check_bool("compensate", compensate) and timer is None
        memory = check_bool("memory", memory)
        check_choice("clock", clock, CLOCKS)
        check_choice("coroutines", coroutines, COROUTINE_MODES)
        check_max_depth("max_depth", max_depth)
        if fast and (lines is not None or only is not None):
            # the frame evaluator neither scopes its events nor starts the
            # line recording: refused rather than silently ignored
            raise ValueError("fast=True cannot be combined with %s= (not supported yet)"
                             % ("lines" if lines is not None else "only"))
        super().__init__(timer, float(timeunit), subcalls, builtins, threads=threads,
                         clock=clock, coroutines=coroutines, callpaths=callpaths,
                         max_depth=max_depth, gc=gc, fast=fast, compensate=compensate,
                         memory=memory)
        self._options = {
            "timer": timer, "timeunit": float(timeunit), "subcalls": subcalls,
            "builtins": builtins, "threads": threads, "clock": clock,
            "coroutines": coroutines, "callpaths": callpaths, "max_depth": max_depth,
            "gc": gc, "fast": fast, "compensate": compensate, "memory": memory,
        }
        if compensate:
            # the per-event cost the clock cannot see: measured once per
            # process (a few ms), here rather than in enable() so that it is
            # never inside a timed region (calibration.py)
            from .calibration import calibrate  # (deferred: import fastprof adds nothing to cProfile's imports)
            calibrate(self, fast, clock, builtins, callpaths=callpaths, memory=memory,
                      lines=None if lines is None else lambda patterns: _line_recorder(patterns, False))
        # line-level profiling (line_profiling.py): started before the C
        # enable() and stopped after its disable(), so none of it is recorded
        self._lines = None
        if lines is not None:
            self._lines = _line_recorder(lines, threads)
            self._lines.bind(self)  # its clock, and own times per line
            self._options["lines"] = list(lines)
            # an instance attribute: without lines=, disable() stays the C
            # method (cProfile's "{method 'disable' ...}" row)
            self.disable = self._disable_lines
        # scoped profiling: the C profiler asks _in_scope once per code object
        self._only = None
        if only is not None:
            from .func_patterns import FunctionPatterns  # (deferred: import fastprof adds nothing to cProfile's imports)
            if isinstance(only, str):
                raise TypeError("only must be a list of patterns, not a str: only=[%r]" % (only,))
            self._only = FunctionPatterns(list(only))
            self._options["only"] = list(only)
            self._set_scope(_scope_decider(self._only))
        if lines is not None or only is not None:
            # the script's functions answer to its name too (`app:score` in
            # `python app.py`); the run modes set their script's in its place
            from .func_patterns import script_stem  # (deferred: import fastprof adds nothing to cProfile's imports)
            self.set_main_alias(script_stem())
        # id from threads() -> thread name, kept after the thread is gone
        # (until its record is folded into its group's: thread_names.py)
        self._thread_names = {}
        # the numbers of the groups of thread names (thread_names.NameGroups)
        self._name_groups = None
        # (ident, native_id) -> name of the threads alive at enable() time
        self._names_at_enable = {}
        # the Thread objects that had ended before profiling started: they
        # cannot be profiled threads (their idents may be reused by some)
        self._ended_before_start = None
        # a profiler error that __exit__ could not raise (a user exception won)
        self.error = None
        # pstats key -> qualified name, filled with self.stats (3.11+)
        self.qualnames = {}
        # whether self.stats sums several code objects under one key (the
        # file then says which: ProfileData.shared_keys)
        self._keys_shared = False

    @property
    def options(self):
        """The (validated) arguments this profiler was built with, as a dict."""
        return dict(self._options)

    def __repr__(self):
        return "<%s.%s %s%s>" % (
            type(self).__module__, type(self).__qualname__,
            "enabled" if self.enabled else "disabled",
            "".join(" %s=%r" % (k, v) for k, v in self._options.items()
                    if k in ("threads", "clock", "coroutines", "callpaths")))

    # -- start / stop ------------------------------------------------------

    def enable(self):
        """Start profiling (cProfile's ``enable``)."""
        self.prepare_enable()
        if self._lines is not None and not self.enabled:
            self._lines.start()
        super().enable()

    def _disable_lines(self, *args, **kwargs):
        """disable() with line profiling: the lines stop with the profiler."""
        try:
            _fastprof.Profiler.disable(self, *args, **kwargs)
        finally:
            if not self.enabled:
                self._lines.stop()

    def line_stats(self):
        """Line-level stats of the functions ``lines=`` names:
        ``{(file, firstlineno, name): {lineno: (hits, seconds)}}`` (empty
        without ``lines=``)."""
        return self._lines.line_stats() if self._lines is not None else {}

    def memory_stats(self, threads=None):
        """With ``memory=True``: what each function allocated,
        ``{(file, firstlineno, name): MemoryRow}`` keyed like ``self.stats``:
        itself (``allocations``, ``allocated``, ``frees``, ``freed``,
        ``net``, ``live_at_peak``), with its callees (``allocated_incl``,
        ``peak``: the largest rise over one call); ``callers``: the same per
        caller.  Functions that allocated nothing have no row.  *threads*:
        only the rows of these thread records (ids of ``thread_records()``)."""
        from ..data.memory import memory_table  # (deferred: import fastprof adds nothing to cProfile's imports)
        return memory_table(*self._keyed_memory(threads))

    def memory_stats_by_thread(self):
        """With ``memory=True``: ``memory_stats()`` of each thread record,
        ``{id: table}`` (ids of ``thread_records()``; a record whose
        functions allocated nothing has no table)."""
        from ..data.memory import memory_table  # (deferred: import fastprof adds nothing to cProfile's imports)
        rows, calls = self._keyed_memory(None)
        by_thread = {}
        for row in rows:
            by_thread.setdefault(row[2], ([], []))[0].append(row)
        for call in calls:
            by_thread.setdefault(call[2], ([], []))[1].append(call)
        return {tid: memory_table(r, c) for tid, (r, c) in by_thread.items()}

    def _keyed_memory(self, threads):
        """The C memory rows and calls keyed as pstats rows are, of the
        thread records *threads* (None: all)."""
        from ..data.names import label  # (deferred: import fastprof adds nothing to cProfile's imports)

        def of(read, thread):
            try:
                return read(thread)
            except KeyError:  # (folded since it was listed: in its group's record)
                return []

        def keyed(read):
            rows = read() if threads is None else [r for t in threads for r in of(read, t)]
            return [(label(code), None if caller is None else label(caller), thread, *rest)
                    for code, caller, thread, *rest in rows]
        return keyed(self._memory_rows), keyed(self._memory_calls)

    def memory_totals(self):
        """With ``memory=True``: the process's traced memory while this
        profiler recorded, ``{"current", "peak", "blocks", "allocations",
        "lost", "numpy"}``: bytes alive now and at the highest point, blocks
        alive now, blocks allocated, blocks the profiler had no room to
        track (the numbers are exact while it is 0), and whether numpy's
        array data is counted now."""
        return self._memory_totals()

    def line_own_stats(self):
        """Each line's own time (its time less the calls made from it, as
        this profiler timed them), of the functions of ``line_stats()``
        where it is exact: ``{(file, firstlineno, name): {lineno:
        seconds}}`` (see docs/lines.md)."""
        return self._lines.own_stats() if self._lines is not None else {}

    def line_memory_stats(self):
        """With ``memory=True``: each line's bytes, of the functions of
        ``line_stats()``: ``{(file, firstlineno, name): {lineno:
        (allocated, net, own)}}``: bytes allocated while the line ran
        (the calls made from it included), the change of its thread's live
        bytes meanwhile, and its own bytes (the calls' left out; None
        where not exact, as ``line_own_stats()``).  Empty without
        ``lines=`` or ``memory=True``."""
        return self._lines.line_memory() if self._lines is not None else {}

    def request_lines(self, request):
        """``(line_stats, line_own_stats, line_memory_stats)`` of one
        request while this profiler routes by request
        (fastprof.middleware): the lines run in its context only."""
        if self._lines is None:
            return {}, {}, {}
        return (self._lines.line_stats(request), self._lines.own_stats(request),
                self._lines.line_memory(request))

    def request_times(self, request):
        """Where a routed request's time went, per thread that ran it: a
        list of ``(record id, ident, seconds, cpu_seconds, removed,
        extra_events)``: the thread's time in the request's context (from
        its first event there to its first event elsewhere) and its CPU time
        meanwhile, the profiler's own time taken out of it where the times
        are compensated, the profiler's cost taken out of the record's times
        (0 when raw) and the events charged to it that are no call's start
        or end (as ``_compensation()``'s; the C ``_route_times``). The
        calling thread's time in it ends here."""
        compensate = self._options["compensate"]
        return [(tid, ident, run, max(0.0, cpu - own) if compensate else cpu, removed, extra)
                for tid, ident, run, cpu, own, removed, extra in self._route_times(request)]

    def drop_request(self, request):
        """Free what was recorded for a routed request: its thread records
        (C ``_drop_route``) and its line counts."""
        try:
            self._drop_route(request)
        finally:
            if self._lines is not None:
                self._lines.drop(request)

    def unmatched_only_patterns(self):
        """The ``only=`` patterns that named no function that ran."""
        return self._only.unmatched() if self._only is not None else []

    def scope_note(self):
        """One line saying what ``only=`` left out, or None without it."""
        if self._only is None:
            return None
        from ..tools.view import scope_note  # (deferred: import fastprof adds nothing to cProfile's imports)
        return scope_note(self._only.texts)

    def unmatched_line_patterns(self):
        """The ``lines=`` patterns that named no function that ran."""
        return self._lines.patterns.unmatched() if self._lines is not None else []

    # -- what the run modes set and read (command lines, attach, subprocesses...)

    def set_main_alias(self, alias):
        """The module name ``__main__`` also answers to in the ``lines=`` and
        ``only=`` patterns: the script's stem (``prog:hot`` for prog.py)."""
        if self._lines is not None:
            self._lines.patterns.main_alias = alias
        if self._only is not None:
            self._only.main_alias = alias

    def add_line_keys(self, keys):
        """Also profile line by line the functions with these pstats keys
        (``--lines-from``); needs ``lines=``."""
        if self._lines is not None:
            self._lines.patterns.keys.update(tuple(k) for k in keys)

    def unmatched_line_keys(self):
        """``(keys, count)``: the add_line_keys() keys of functions that did
        not run, and how many keys were added."""
        if self._lines is None:
            return [], 0
        return self._lines.patterns.keys_unmatched(), len(self._lines.patterns.keys)

    def toggled_by(self, callback, *args):
        """A C callable for a signal handler (or ``os._exit``): disable(), then
        ``callback(error, was_enabled, *args, *its own args)``, then enable()
        if it returned true, with no frame of its own recorded and no Python
        code between the answer and the enable (the C ``_toggle_with``)."""
        import functools  # (deferred: import fastprof imports nothing cProfile does not)
        return functools.partial(self._toggle_with, callback, *args)

    def route_by(self, var, open_ids):
        """Record each thread's events per request: under the request id the
        context variable *var* holds, if that id is in the set *open_ids*
        (else not at all); ``None, None`` stops routing (the middleware;
        the C ``_route_by``)."""
        self._route_by(var, open_ids)

    def prepare_enable(self):
        """What the thread names need before the C enable(): enable() does
        it; the signal toggle calls it before its C handler enables
        (modes/signal_toggle.py)."""
        self._names_at_enable = _live_thread_names()
        if self._ended_before_start is None:
            self._ended_before_start = _ended_threads()

    # disable() is the C method itself, as in cProfile (so the profile shows
    # the same "{method 'disable' ...}" row): it closes the frames still
    # open, and raises a profiler failure (out of memory, a failing custom
    # timer) that happened meanwhile; the stats collected so far stay.

    def clear(self):
        """Drop all collected stats."""
        # the thread records (and so their names) outlive a clear
        super().clear()
        self._ended_before_start = None
        if self._lines is not None:
            self._lines.clear()

    # The methods below call the C disable() inline, not through a Python
    # helper: a helper called while profiling would show up as a row that
    # cProfile's profile does not have. (_profiled is called before enable(),
    # so it is never seen.)

    def _failed_under(self, err, exc, stacklevel=3):
        """The profiler failed (*err*) while the user's *exc* propagated.

        The profiler error must not replace the user's exception: it is kept
        in ``self.error`` and reported as a RuntimeWarning.
        """
        self.error = err
        import warnings
        warnings.warn("fastprof: profiling stopped early (%s: %s) while %s "
                      "propagated; the stats are partial"
                      % (type(err).__name__, err, type(exc).__name__),
                      RuntimeWarning, stacklevel=stacklevel)

    def _disable(self):
        try:
            self.disable()
        finally:
            self.take_thread_names()

    def __enter__(self):
        self.enable()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.disable()
        except Exception as err:
            if exc_type is None:
                raise
            self._failed_under(err, exc)
        finally:
            self.take_thread_names()
        return False

    # -- stats -------------------------------------------------------------

    def create_stats(self):
        """Stop profiling and fill ``self.stats`` (what pstats reads)."""
        self._disable()
        self.snapshot_stats()

    def snapshot_stats(self):
        """Fill ``self.stats`` from the current stats, as cProfile does."""
        if type(self).getstats is _fastprof.Profiler.getstats:
            # entries_to_stats(getstats()) and the entries' codes, built in
            # C without the entries (csrc/fpy_stats_dict.c)
            self.stats, codes = self._stats_and_codes()
        else:  # a subclass's getstats(), as cProfile reads it
            entries = self.getstats()
            self.stats, codes = entries_to_stats(entries), [e.code for e in entries]
        # read here, once, from the code objects
        self.qualnames = qualnames_of_codes(codes)
        # a row per code object: fewer rows than codes when some share a key
        self._keys_shared = len(codes) > len(self.stats)

    def print_stats(self, sort=-1, thread=None):
        """Print the stats table like cProfile (``sort``: a pstats sort key,
        or a tuple of them); ``thread``: only that thread (an id from
        ``thread_stats()``)."""
        stats = self._pstats(thread).strip_dirs().sort_stats(*_model().sort_args(sort))
        if self._only is not None:
            print(self.scope_note(), file=stats.stream)
        stats.print_stats()

    def print_callers(self, *restrictions, sort=-1, thread=None):
        """Print who called each function (``pstats.Stats.print_callers``);
        ``restrictions`` select rows as in pstats: a regex on the name, an
        int count or a float fraction."""
        (self._pstats(thread).strip_dirs().sort_stats(*_model().sort_args(sort))
         .print_callers(*restrictions))

    def print_callees(self, *restrictions, sort=-1, thread=None):
        """Print what each function called (``pstats.Stats.print_callees``)."""
        (self._pstats(thread).strip_dirs().sort_stats(*_model().sort_args(sort))
         .print_callees(*restrictions))

    def _pstats(self, thread):
        if thread is None:
            self.create_stats()
            return _model().pstats_of(self.stats)
        return _model().pstats_of(self._thread_stats_dict(self._thread_id(thread)))

    # -- threads -------------------------------------------------------------

    def thread_stats(self):
        """One ``(id, ident, name, stats)`` per profiled thread that
        recorded a call.

        ``id`` is unique per thread for this profiler (idents get reused by
        the OS), ``ident`` is ``threading.get_ident()`` of the thread,
        ``stats`` a pstats dict.  Names come from ``threading``; a thread
        that ended before its name could be seen is called
        ``"Thread-<ident> (ended)"``.  Threads that ended before the newest
        64 ended ones are summed per name group in one record each
        (``Thread-N (worker) x7994 ended``, ident 0): see
        docs/threads-coroutines.md.
        """
        return [(tid, ident, name, stats)
                for tid, ident, name, stats, _folded in self._thread_records(None)]

    def thread_records(self):
        """The per-thread records as a profile file keeps them
        (``ProfileData.threads``): a dict per ``thread_stats()`` row, with
        ``id``, ``ident``, ``name``, ``stats``, and for the record of a
        group of ended threads ``group`` (its name pattern) and ``threads``
        (how many it sums).  Does not stop profiling."""
        return self._with_memory([thread_record(*r) for r in self._thread_records(None)])

    def _with_memory(self, records):
        """*records* (thread_record's), each with its thread's ``memory``
        (``memory_stats()`` of that record alone) when memory is on."""
        if self._options["memory"]:
            tables = self.memory_stats_by_thread()
            for record in records:
                record["memory"] = tables.get(record["id"], {})
        return records

    def _thread_records(self, whole):
        """``(id, ident, name, stats, folded)`` per record, *folded*
        ``(pattern, threads)`` for a group's record, else None; *whole*: the
        stats of every thread, just taken, which one thread's are when there
        is one (not built again).  The records stay as listed meanwhile."""
        with self.threads_held():
            self.take_thread_names()
            records = self.threads()
            groups = self._thread_groups()
            out = []
            for tid, ident, _native in records:
                stats = (dict(whole) if whole is not None and len(records) == 1
                         else self._thread_stats_dict(tid))
                group = groups.get(tid)
                if group is None:
                    out.append((tid, ident, self.thread_name(tid, ident), stats, None))
                else:
                    name, pattern = self._groups().record(*group)
                    out.append((tid, ident, name, stats, (pattern, group[1])))
        return out

    def _thread_stats_dict(self, tid):
        return self._stats_and_codes(tid)[0]

    def thread_name(self, tid, ident):
        """The name of thread record *tid* (OS ident *ident*), as the views
        show it."""
        if tid >> 62 == 1:  # a group of ended threads' record (FPY_FOLDED_BIT)
            group, threads = self._thread_groups().get(tid, (0, 0))
            return self._groups().record(group, threads)[0]
        return _threads_mod().record_name(self._thread_names, tid, ident)

    def threads_held(self):
        """A context manager: while inside, no record of an ended thread is
        folded into its group's, so the records ``threads()`` listed stay
        readable one by one (a read of several steps while profiling goes
        on: ``fastprof top``'s snapshots)."""
        return _FoldsHeld(self)

    def _groups(self):
        """The numbers of the thread name groups (made on first use)."""
        if self._name_groups is None:
            self._name_groups = _threads_mod().NameGroups()
        return self._name_groups

    def name_thread(self, tid, name):
        """Give thread record *tid* the name *name* (a profiler that is a
        sum of others, never enabled: the per-test sum)."""
        self._thread_names[tid] = name

    def fold_into(self, other, pairs):
        """Add this profiler's threads into *other*, a profiler never
        enabled: *pairs* of (thread id here, thread id there) (the per-test
        sum; the C ``_fold_into``)."""
        self._fold_into(other, pairs)

    def one_thread_marshal(self, skip_file, hides_c_function):
        """A profile one thread recorded, straight to marshal bytes (the C
        ``_stats_marshal``): (its pstats table's bytes, the trailer's
        qualified names' bytes or b"", the rows' codes, their files, calls,
        thread id), without the rows of file *skip_file*, the edges from
        them, nor a C function called only from them whose name
        *hides_c_function(name)* accepts (None: none); None when it cannot
        (several threads, line stats, call paths): use getstats()."""
        return self._stats_marshal(skip_file, hides_c_function)

    def compensation_info(self):
        """What compensation removed so far: ``{"compensate": bool,
        "removed": seconds, "extra_events": the events charged that are no
        call's start or end, ...}`` (the C ``_compensation``)."""
        return self._compensation()

    def _thread_id(self, thread):
        """Accept an id from threads()/thread_stats() or a threading.Thread."""
        records = self.threads()
        threading = sys.modules.get("threading")
        if threading is not None and isinstance(thread, threading.Thread):
            ids = [tid for tid, ident, _n in records if ident == thread.ident]
            if not ids:
                raise ValueError("thread %r was not profiled (or it ended, and its record was "
                                 "folded into its group's: see thread_stats())" % (thread.name,))
            return max(ids)  # the newest record owns a reused ident
        if isinstance(thread, bool) or not isinstance(thread, int):
            raise TypeError("thread must be an id from thread_stats() or a "
                            "threading.Thread, not %r" % (thread,))
        if thread not in {tid for tid, _i, _n in records}:
            known = [str(r[0]) for r in records[:20]] + (["..."] if len(records) > 20 else [])
            raise ValueError("no profiled thread has id %r (known ids: %s)" % (
                thread, ", ".join(known) or "none"))
        return thread

    def take_thread_names(self):
        """Name the profiled threads now, while their Thread objects are at
        hand (``thread_names.name_records``): disable() does, and a run mode
        that reads thread stats of a profiler still enabled calls it first."""
        try:
            records = self.threads()
            self._forget_names(self._take_folded())
        except Exception:
            return
        _threads_mod().name_records(records, self._thread_names, self._names_at_enable,
                                    self._ended_before_start)

    def _thread_started(self, tid, folded=()):
        """Called by the C profiler (threads=True) on a new thread's first
        event, in that thread, before its record *tid* exists: its name is
        written down while its Thread object is at hand; returns its name's
        group (where its record is folded once the thread has ended).
        *folded*: the records folded away since the last call, whose names
        go.  Never recorded (the interpreter reports no events inside an
        event callback)."""
        self._forget_names(folded)
        name = _threads_mod().starting_thread_name()
        if name is not None:
            self._thread_names[tid] = name
        return self._groups().number(name)

    def _forget_names(self, folded):
        names = self._thread_names
        for tid in folded:
            names.pop(tid, None)

    # -- files -------------------------------------------------------------

    def profile_data(self, thread=None):
        """Stop profiling; return everything a profile file holds, as a
        ``profile_file.ProfileData`` (what ``fastprof.exports`` writes).

        With ``thread``, only that thread's stats and call paths.
        """
        from ..data.profile_file import ProfileData  # (deferred: import fastprof adds nothing to cProfile's imports)
        info = self.clock_info()
        if thread is None:
            self.create_stats()
            data = ProfileData(self.stats, clock=info.get("clock"),
                               qualnames=self.qualnames)
            if self._options["threads"]:
                data.threads = self._with_memory(
                    [thread_record(*r) for r in self._thread_records(self.stats)])
            if self._options["callpaths"]:
                data.callpaths = self.callpaths_file()
            if self._keys_shared:
                data.shared_keys = shared_key_rows(self.getstats())
            self.add_recording_details(data)
            return data
        self._disable()
        tid = self._thread_id(thread)
        entries = self.getstats(tid)
        data = ProfileData(entries_to_stats(entries), clock=info.get("clock"),
                           qualnames=qualnames_of_codes([e.code for e in entries]),
                           only=self._options.get("only"), fast=self._options["fast"])
        data.paths = _relative_paths(data.stats, self.paths_memo)
        data.compensation = self.compensation(data.stats)
        data.shared_keys = shared_key_rows(entries)
        if self._options["callpaths"]:
            data.callpaths = self.callpaths_file(tid)
        if self._options["memory"]:
            data.memory = self.memory_stats(threads={tid})
            data.memory_totals = self.memory_totals()
        return data

    def callpaths_file(self, thread=None):
        """``callpaths(thread)`` as a profile file keeps them
        (``profile_file.CallPaths``), each node's bytes with them when
        memory is on."""
        return callpaths_to_file(self._memory_callpaths(thread) if self._options["memory"]
                                 else self.callpaths(thread))

    def add_recording_details(self, data):
        """Put into *data* (a ``ProfileData``) what the profiler recorded
        beside the stats: line stats and own times, the ``only=`` and
        ``fast`` that say what the stats leave out, and memory."""
        data.lines = self.line_stats()
        data.lines_own = self.line_own_stats()
        data.lines_memory = self.line_memory_stats()
        data.only = self._options.get("only")
        data.fast = self._options["fast"]
        if self._options["coroutines"] == "wall":
            data.coroutines = "wall"
        data.paths = _relative_paths(data.stats, self.paths_memo)
        data.compensation = self.compensation(data.stats)
        if self._options["memory"]:
            data.memory = self.memory_stats()
            data.memory_totals = self.memory_totals()

    def compensation(self, stats=None):
        """Whether this profiler took its own cost out of the times, how
        much (seconds, every thread) and over how many events (a call and a
        return per call of *stats*, a pstats dict; by default all its
        calls so far): the ``.prof`` trailer's ``compensation``
        (cost_note.py).  Does not stop profiling."""
        from ..data.cost_note import record  # (deferred: import fastprof adds nothing to cProfile's imports)
        if stats is None:
            calls = sum(e.callcount for e in self.getstats())
        else:
            calls = sum(int(v[1]) for v in stats.values())
        info = self.compensation_info()
        return record(info["compensate"], info["removed"], calls, info["extra_events"])

    def dump_stats(self, file, thread=None):
        """Write a ``.prof`` file that pstats, snakeviz, gprof2dot... read;
        fastprof's extras (clock, call paths, per-thread stats) follow in a
        trailer those tools ignore.  ``thread``: that thread only."""
        from ..data.profile_file import write_profile  # (deferred: import fastprof adds nothing to cProfile's imports)
        write_profile(file, self.profile_data(thread))

    # -- running code ------------------------------------------------------

    def run(self, cmd):
        """Profile ``exec(cmd)`` in the namespace of ``__main__``."""
        import __main__
        dict = __main__.__dict__
        return self.runctx(cmd, dict, dict)

    def runctx(self, cmd, globals, locals):
        """Profile ``exec(cmd, globals, locals)``; return self."""
        self._profiled(exec, cmd, globals, locals)
        return self

    def runcall(self, func, /, *args, **kw):
        """Profile ``func(*args, **kw)``; return its result."""
        return self._profiled(func, *args, **kw)

    def _profiled(self, func, /, *args, **kw):
        """``func(*args, **kw)`` between enable() and disable(); an exception
        from func wins over a profiler failure reported by disable()."""
        self.enable()
        try:
            result = func(*args, **kw)
        except BaseException as exc:
            try:
                self.disable()
            except Exception as err:
                self._failed_under(err, exc, stacklevel=4)  # runcall's caller
            self.take_thread_names()
            raise
        try:
            self.disable()
        finally:
            self.take_thread_names()
        return result


class _FoldsHeld:
    """Profile.threads_held(): no ended thread's record folded meanwhile."""

    def __init__(self, prof):
        self.prof = prof

    def __enter__(self):
        self.prof._hold_folds(True)
        return self.prof

    def __exit__(self, *exc):
        self.prof._hold_folds(False)
        return False



def thread_record(tid, ident, name, stats, folded=None):
    """A thread's record as the file keeps it (``ProfileData.threads``);
    *folded*: ``(pattern, threads)`` of a group's record (thread_groups.py)."""
    record = {"id": tid, "ident": ident, "name": name, "stats": stats}
    if folded is not None:
        record["group"], record["threads"] = folded
    return record


def _line_recorder(lines, threads, main_alias=None, keys=()):
    from .line_profiling import make_recorder  # (deferred: import fastprof adds nothing to cProfile's imports)
    if isinstance(lines, str):
        raise TypeError("lines must be a list of patterns, not a str: lines=[%r]" % (lines,))
    return make_recorder(list(lines), main_alias=main_alias, keys=keys, threads=threads)


def _scope_decider(patterns):
    """The callable the C profiler asks whether a code object is in scope;
    called from the event callback, in the frame of that code (or its
    caller's), so the module is read from the frame that runs it."""
    getframe = sys._getframe

    def in_scope(code):
        frame = getframe(1)
        while frame is not None and frame.f_code is not code:
            frame = frame.f_back
        module = frame.f_globals.get("__name__") if frame is not None else None
        return patterns.matches(code, module)

    return in_scope


def _threads_mod():
    """thread_names, imported when first needed (not by ``import fastprof``)."""
    from . import thread_names  # (deferred: import fastprof adds nothing to cProfile's imports)
    return thread_names


def _model():
    """model (pstats.Stats over a dict), imported when a table is printed."""
    from ..data import model  # (deferred: import fastprof adds nothing to cProfile's imports)
    return model


def qualnames_of_codes(codes):
    """``{pstats key: qualified name}`` of the code objects in *codes* (C
    functions, as str, skipped): their ``co_qualname`` on 3.11+; on 3.9/3.10,
    which have none, what the modules holding them say
    (``func_patterns.code_qualnames``), so that the names there pair across
    installs as 3.11's do."""
    if sys.version_info >= (3, 11):
        from ..data.names import qualnames_of  # (deferred: import fastprof adds nothing to cProfile's imports)
        return qualnames_of(codes)
    from .func_patterns import code_qualnames  # (deferred: import fastprof adds nothing to cProfile's imports)
    return code_qualnames(codes)


def _relative_paths(stats, memo=None):
    """The recorded files' paths relative to their sys.path entries (the
    trailer's ``paths``), taken in the profiled process, whose sys.path says
    (by *memo*, a ``portable_names.PathsMemo``, if given)."""
    if memo is not None:
        return memo.relative_paths(key[0] for key in stats)
    from ..data.portable_names import relative_paths  # (deferred: import fastprof adds nothing to cProfile's imports)
    return relative_paths(key[0] for key in stats)


def _live_thread_names():
    return _threads_mod().live_thread_names()



def _ended_threads():
    return _threads_mod().ended_threads()


# -- module functions, as cProfile's ----------------------------------------

def _show(prof, filename, sort):
    if filename is not None:
        prof.dump_stats(filename)
    else:
        prof.print_stats(sort)


def run(statement, filename=None, sort=-1, **profile_kwargs):
    """Run statement under the profiler, optionally saving the results
    in filename (else printing them, sorted by ``sort``).

    Like ``cProfile.run``: the statement runs in ``__main__``'s namespace and
    a ``SystemExit`` it raises ends it quietly.  Extra keyword arguments go to
    ``Profile`` (``threads=True``, ``clock="cpu"``, ...).
    """
    prof = Profile(**profile_kwargs)
    try:
        prof.run(statement)
    except SystemExit:
        pass
    finally:
        _show(prof, filename, sort)


def runctx(statement, globals, locals, filename=None, sort=-1, **profile_kwargs):
    """Run statement under the profiler with the given globals and locals;
    as ``run()`` otherwise (and as ``cProfile.runctx``)."""
    prof = Profile(**profile_kwargs)
    try:
        prof.runctx(statement, globals, locals)
    except SystemExit:
        pass
    finally:
        _show(prof, filename, sort)


def profile(func=None, *, filename=None, sort=-1, **profile_kwargs):
    """Decorator: profile every call of the function.

    After each call the stats of that call are printed (sorted by ``sort``)
    or, with ``filename``, written there (overwriting).  Other keyword
    arguments go to ``Profile``.  The last call's ``Profile`` is kept as
    ``wrapper.profiler``.  A call made while the function is already being
    profiled (recursion, or a call from another thread meanwhile) gets no
    profiler of its own: recursion shows in the outer call's profile.
    Coroutine functions are profiled from first resume to final return.

        @fastprof.profile
        def work(): ...

        @fastprof.profile(filename="work.prof", threads=True)
        def work(): ...
    """
    Profile(**profile_kwargs)  # validate the arguments at decoration time

    def decorate(fn):
        import functools
        import inspect
        active = []

        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def wrapper(*args, **kwargs):
                if active:
                    return await fn(*args, **kwargs)
                prof = wrapper.profiler = Profile(**profile_kwargs)
                active.append(prof)
                try:
                    with prof:
                        return await fn(*args, **kwargs)
                finally:
                    active.pop()
                    _show(prof, filename, sort)
        else:
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                if active:
                    return fn(*args, **kwargs)
                prof = wrapper.profiler = Profile(**profile_kwargs)
                active.append(prof)
                try:
                    return prof.runcall(fn, *args, **kwargs)
                finally:
                    active.pop()
                    _show(prof, filename, sort)

        wrapper.profiler = None
        return wrapper

    if func is None:
        return decorate
    if not callable(func):
        raise TypeError("profile() takes a function, not %r" % (func,))
    return decorate(func)

