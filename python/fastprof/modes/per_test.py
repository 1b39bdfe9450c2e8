"""``pytest --fastprof-per-test DIR``: each test's profile as its own file,
and the session's sum of them, at about two small file writes a test
(docs/pytest-ipython.md).

One profiler records every test and is cleared after each one.  Before
that, its tables go two ways, both in C:

- into the test's file: the pstats table and the trailer's qualified
  names are written straight to marshal bytes (``Profiler._stats_marshal``),
  the rest of the trailer by the usual ``ProfileData``;
- into the session's sum, a second profiler that is never enabled
  (``Profiler._fold_into``): the tables added as they are, threads of one
  name into one thread, so the sum is never built as dicts until the end.

A profile that C does not write (line stats, call paths, several threads,
two functions sharing one pstats key) takes the general path: the
``ProfileData`` written by ``profile_file``.  With line stats the sum is
``merge``'s, as for files.

Imported by the pytest plugin when ``--fastprof-per-test`` is given.
"""

import sys

from ..data.atomic_file import write_bytes_atomically
from ..data.cost_note import record as cost_record
from ..data.portable_names import PathsMemo
from ..data.profile_file import ProfileData, file_bytes, write_profile
from ..recording.profiler import qualnames_of_codes
from . import run_options


class TestProfiles:
    """Writes each test's profile and keeps their sum.

    *options*: the profiler's (``run_options.profile_options``); *hidden*:
    what every profile leaves out, the plugin's rule
    (``pytest_plugin.HiddenRows``): C is handed its ``file`` and
    ``hides_c_function``, the general path (the profiles C does not write,
    the sum) takes ``hidden.without(data)``.  Made before the first test,
    with the sum's profiler: what runs between two tests must allocate
    little, or it moves the garbage collections inside them."""

    def __init__(self, options, hidden):
        self.options = options
        self.hidden = hidden
        # the files' relative paths, taken once per session (the profilers' too)
        self.paths_memo = PathsMemo()
        self.lines = options.get("lines") is not None
        # line stats and memory are summed from the files' data (merge), the rest in C
        self.by_files = self.lines or bool(options.get("memory"))
        self.direct = not self.by_files and not options.get("callpaths")
        self.constants = None     # (the profiler, its clock's name, its options)
        self.thread_records = {}  # thread id -> (the profiler, its record in a file)
        self.sum = None       # the profiler the tests are folded into (not with line stats or memory)
        self.sum_ids = {}     # thread name -> its id in self.sum
        self.merged = None    # with line stats or memory: the files' sum (RunningSum)
        self.summed = False   # whether a test was added
        if not self.by_files:
            self.sum = run_options.new_profile(options)
            self.sum.paths_memo = self.paths_memo
        else:
            self.merged = RunningSum()

    # -- one test --------------------------------------------------------------

    def write(self, prof, path):
        """Write *prof*'s profile (disabled) to *path*; return its ProfileData
        when it took the general path (else None)."""
        made = self._bytes(prof) if self.direct else None
        if made is not None:
            write_bytes_atomically(path, made)
            return None
        data = self.general(prof)
        write_profile(path, data)
        return data

    def _bytes(self, prof):
        """The file's bytes, or None when C does not write this profile."""
        got = prof.one_thread_marshal(self.hidden.file, self.hidden.hides_c_function)
        if got is None:
            return None
        table, qualnames, codes, files, calls, tid = got
        clock, options = self._constants(prof)
        info = prof.compensation_info()
        data = ProfileData({}, clock=clock, only=options.get("only"), fast=options["fast"],
                           paths=self.paths_memo.relative_paths(files),
                           compensation=cost_record(info["compensate"], info["removed"], calls,
                                                    info["extra_events"]))
        if sys.version_info < (3, 11):  # no co_qualname: read from the modules
            data.qualnames = qualnames_of_codes(codes)
        if options["coroutines"] == "wall":
            data.coroutines = "wall"
        # one thread: its stats are the file's table (written once)
        data.threads = [dict(self._thread(prof, tid), stats=data.stats)]
        return file_bytes(table, data, qualnames)

    def _constants(self, prof):
        """*prof*'s clock and options, read once."""
        if self.constants is None or self.constants[0] is not prof:
            self.constants = (prof, prof.clock_info().get("clock"), prof.options)
        return self.constants[1:]

    def _thread(self, prof, tid):
        """The record of *prof*'s thread *tid*, named once: clear() keeps the
        thread records, and a record is named once (thread_names.py)."""
        record = self.thread_records.get(tid)
        if record is None or record[0] is not prof:
            prof.take_thread_names()
            ident = next(r[1] for r in prof.threads() if r[0] == tid)
            record = self.thread_records[tid] = (
                prof, {"id": tid, "ident": ident, "name": prof.thread_name(tid, ident)})
        return record[1]

    def add(self, prof, data=None):
        """Add *prof*'s profile (disabled, not yet cleared; *data*: its
        ProfileData if it was made) into the sum."""
        self.summed = True
        if self.by_files:
            self.merged.add(data if data is not None else self.general(prof))
            return
        pairs = []
        with prof.threads_held():  # the records listed stay until folded into the sum
            for tid, _ident, _native in prof.threads():
                name = self._thread(prof, tid)["name"]
                to = self.sum_ids.get(name)
                if to is None:
                    to = self.sum_ids[name] = len(self.sum_ids) + 1
                    self.sum.name_thread(to, name)
                pairs.append((tid, to))
            prof.fold_into(self.sum, pairs)

    def general(self, prof):
        """*prof*'s ProfileData without the hidden rows (the general path)."""
        return self.hidden.without(prof.profile_data())

    # -- the session -------------------------------------------------------------

    def result(self):
        """The sum of the tests' profiles (ProfileData), None if none."""
        if not self.summed:
            return None
        return self.merged.result() if self.by_files else self.general(self.sum)


class RunningSum:
    """Profiles (each test's, each worker's) added one at a time, each folded
    into the sum (merge.ProfileSum): a test costs its own profile's size, not
    the sum's.  The threads of one name are one thread."""

    def __init__(self):
        from ..tools.merge import ProfileSum  # (deferred: nothing at pytest start-up)
        self.total = ProfileSum(pair_installs=False)  # one session: one install
        self.threads = {}  # name -> (the first thread record of that name, its stats summed as lists)
        # while every input had one thread, the same, whose stats were the
        # input's: its record (its sum is the total's); False once not
        self.single = None

    def add(self, data):
        """Add ProfileData *data* (its threads are taken out of it)."""
        from ..data.model import add_stats  # (deferred: nothing at pytest start-up)
        threads, data.threads = data.threads, []
        if self.single is not False:
            if len(threads) == 1 and threads[0]["stats"] == data.stats and (
                    self.single is None or self.single["name"] == threads[0]["name"]):
                self.single = self.single or threads[0]
                self.total.add(data)
                return
            if self.single is not None:  # its sum so far is the total's
                rows = {}
                add_stats(rows, self.total.result().stats, self.total.keys)
                self.threads[self.single["name"]] = (self.single, rows)
            self.single = False
        self.total.add(data)
        for t in threads:
            first, rows = self.threads.setdefault(t["name"], (t, {}))
            add_stats(rows, t["stats"], self.total.keys)

    def result(self):
        from ..data.model import stats_result  # (deferred: nothing at pytest start-up)
        out = self.total.result()
        if self.single:
            out.threads = [dict(self.single, id=0, stats=out.stats)]
            return out
        out.threads = [dict(first, id=i, stats=stats_result(rows))
                       for i, (first, rows) in enumerate(self.threads.values())]
        return out
