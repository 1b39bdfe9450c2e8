"""Exact call counts as a regression signal: what ``pytest --fastprof-counts``
keeps per test and ``fastprof check`` compares (docs/gate.md).

A *count table* is ``{entry: count}``, every entry a line of text that
survives installs and machines (``portable_names``)::

    toolz/itertoolz.py:groupby                                   a function's calls
    toolz/itertoolz.py:groupby -> ~:<method 'append' of 'list' objects>   an edge's
    toolz/itertoolz.py:groupby line 101                          a line's hits (--lines)
    toolz/itertoolz.py:groupby bytes                             bytes it allocated (--memory)

A test's table is made from its call paths (``counts_of_test``): only the
test's own work is counted -- its test function, fixtures and what they
call -- and what does not depend on the code under test is left out
(``NOISE``, ``SEALED``, ``OPAQUE`` and the test framework, ``FRAMEWORK``).
A whole program's table (``counts_of_profile``) is all its rows and edges
but the garbage collector's.

Baselines are text files of sections, one per test, sorted (``write_tables``,
``read_tables``)::

    # fastprof call counts, Python 3.12 ...
    [test_groupby]
    # runs: 3
    1 toolz/itertoolz.py:groupby
    4 toolz/itertoolz.py:groupby -> ~:<method 'append' of 'list' objects>
    9..14 toolz/itertoolz.py:groupby -> ~:<method 'acquire' of '_thread.lock' objects>

A baseline learned over several runs (``merge``) keeps a count that varied
as the range it was seen in (``9..14``); ``compare`` accepts a count inside
that range widened by its width (``allowed``).  ``# runs: N`` and other
``# name: N`` lines of a section are its meta entries (``#runs``: how many
runs it was learned over; ``#threads``: threads the test left running;
``#memory``: recorded with bytes).

With memory on, a test's table also holds *bytes entries* (``NAME bytes``,
``<test> bytes``: ``bytes_of_test``): what each counted function allocated
(an opaque one: with what ran inside it, uncounted), and the test's sum.
They are no counts: ``compare`` and the noise rules leave them out
(``counts_only``) and ``compare_bytes`` fails only on growth beyond a
tolerance, as ``fastprof check --memory`` does.
"""

import json
import os
import re
import sys
import sysconfig
from dataclasses import dataclass
from typing import Collection, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from ..data.memory import FIELDS as MEMORY_FIELDS
from ..data.model import FuncKey, is_builtin, profiler_method
from ..data.portable_names import portable_names

CountTable = Dict[str, int]
# a baseline's count: exact, or the (low, high) range it varied in while learned
Count = Union[int, Tuple[int, int]]
BaselineTable = Dict[str, Count]

EDGE = " -> "
LINE = " line "
BYTES = " bytes"                 # NAME bytes: what a counted function allocated
TEST_BYTES = "<test>" + BYTES    # what the test's counted code allocated in all
GC_NAME = "<gc>"

# The test framework: its frames are not the test's work.  What they call is
# not counted either, except code of the project (the test function, its
# fixtures, the project's functions: "user code", below), which is counted
# with everything it calls.  Top-level packages (a file's path relative to
# its sys.path entry, first part).
FRAMEWORK = frozenset((
    "_pytest", "pytest", "pluggy", "py", "iniconfig", "xdist", "execnet",
    "fastprof", "exceptiongroup", "tomli", "pytest_timeout", "_virtualenv",
))
# Standard modules whose insides depend on timing or on caches filled by
# earlier tests: a call of one of their functions from counted code is
# counted, what it runs inside is not -- except code of the project it calls
# back (a thread's target, a re.sub callback, a singledispatch implementation,
# a coroutine under asyncio's loop), which is counted again.
OPAQUE = frozenset((
    "threading", "queue", "_threading_local", "concurrent", "multiprocessing",
    "asyncio", "selectors", "socket", "ssl", "socketserver", "sched", "subprocess",
    "re", "sre_compile", "sre_parse", "sre_constants", "functools", "linecache",
    "logging", "weakref", "_weakrefset", "contextvars",
))
# The same, with nothing inside counted at all (ABC subclass caches call
# __subclasshook__ once per type; imports run once per process).
SEALED = frozenset(("abc", "_py_abc", "importlib", "typing"))
# Never counted, nor anything below: module bodies (run once, by the first
# test that imports the module), the import system's frozen modules, codec
# search functions (run at an encoding's first use), garbage collections
# (and the finalizers they run: when a collection starts depends on every
# allocation since the process started).
NOISE_FILES = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>",
               "<frozen zipimport>")
NOISE_PACKAGES = frozenset(("encodings",))

_ALLOCATED = MEMORY_FIELDS.index("allocated")

# kinds of function
USER, OTHER, OPAQUE_KIND, SEALED_KIND, FRAMEWORK_KIND, NOISE_KIND = range(6)
# what a node's children are counted under
_HIDDEN, _COUNTING, _DEAD = range(3)


_STDLIB_DIRS: List[List[str]] = []


def _stdlib_dirs() -> List[str]:
    if not _STDLIB_DIRS:   # (the same for the whole process: asked once)
        paths = sysconfig.get_paths()
        dirs = {os.path.join(os.path.normpath(paths[k]), "") for k in ("stdlib", "platstdlib")
                if paths.get(k)}
        _STDLIB_DIRS.append(sorted(dirs, key=len, reverse=True))
    return _STDLIB_DIRS[0]


def _top(relpath: str) -> str:
    """The top-level module of a path relative to its sys.path entry."""
    first = relpath.replace("\\", "/").split("/", 1)[0]
    return first[:-3] if first.endswith(".py") else first


def function_kind(key: FuncKey, relpath: str, stdlib_dirs: Iterable[str],
                  framework_files: Collection[str] = ()) -> int:
    """What the test gate does with function *key* (file relative path
    *relpath*); *framework_files*: more files of the test framework (the
    pytest plugins' modules, as relative paths)."""
    filename, _line, name = key
    if is_builtin(key):
        return NOISE_KIND if name == GC_NAME else OTHER
    if name == "<module>" or filename in NOISE_FILES:
        return NOISE_KIND
    if filename.startswith("<frozen "):
        top = filename[len("<frozen "):-1].split(".", 1)[0]
    elif filename.startswith("<"):
        return OTHER          # exec'd text: namedtuple and dataclass methods...
    else:
        top = _top(relpath)
        in_stdlib = any(filename.startswith(d) for d in stdlib_dirs) and not any(
            m in filename for m in ("site-packages", "dist-packages"))
        if not in_stdlib:
            if top in FRAMEWORK or top.startswith("pytest_") or relpath in framework_files:
                return FRAMEWORK_KIND
            return USER
    if top in NOISE_PACKAGES:
        return NOISE_KIND
    if top in SEALED:
        return SEALED_KIND
    if top in OPAQUE:
        return OPAQUE_KIND
    return OTHER


def counts_of_test(data, lines: bool = True, framework_files: Collection[str] = (),
                   noise_keys: Collection[FuncKey] = (),
                   kinds_memo: Optional[Dict[FuncKey, int]] = None,
                   memory: bool = False) -> CountTable:
    """The count table of one test's profile *data* (a ProfileData with call
    paths): functions, edges and, with *lines*, line hits of what the test
    itself ran (see the module docstring).  *framework_files*: see
    ``function_kind``; *noise_keys*: functions never counted, nor what they
    call (fixtures of a wider scope than the test's, whose setup runs in
    whichever test needs them first); *kinds_memo*: a dict kept from test to
    test of one run (the same *framework_files*), each function's kind
    (``function_kind``) found once; *memory*: with the bytes entries
    (``bytes_of_test``; the call paths must carry memory)."""
    cp = data.callpaths
    if cp is None:
        raise ValueError("the profile has no call paths (record it with callpaths=True)")
    keys = [tuple(k) for k in cp.functions]
    memo = {} if kinds_memo is None else kinds_memo
    new = {k for k in keys if k not in memo}
    if new:
        everyone = portable_names(new, data.qualnames, data.paths)  # for the files' paths
        dirs = _stdlib_dirs()
        for k in new:
            memo[k] = function_kind(k, _relpath(k, everyone), dirs, framework_files)
    kinds = [NOISE_KIND if k in noise_keys else memo[k] for k in keys]
    fcalls: Dict[int, int] = {}
    ecalls: Dict[Tuple[int, int], int] = {}
    table: CountTable = {}
    under: List[int] = []
    counted: List[bool] = []
    # the counted node whose bytes each node's are (-1: not counted)
    owner: List[int] = []
    # edges: (caller, callee) function indexes -> [calls seen counted, seen hidden]
    edges: Dict[Tuple[int, int], List[int]] = {}
    for parent, func, calls, _tt, _ct in cp.nodes:
        kind = kinds[func]
        ctx = _HIDDEN if parent < 0 else under[parent]
        if ctx == _DEAD or kind == NOISE_KIND:
            ok, below = False, _DEAD
        elif ctx == _COUNTING:
            ok = True
            below = (_DEAD if kind == SEALED_KIND else
                     _HIDDEN if kind in (OPAQUE_KIND, FRAMEWORK_KIND) else _COUNTING)
        else:
            ok = kind == USER
            below = _COUNTING if ok else _HIDDEN
        under.append(below)
        counted.append(ok)
        if ok:
            owner.append(len(owner))
        elif ctx == _HIDDEN and parent >= 0 and kind != NOISE_KIND:
            owner.append(owner[parent])   # inside an opaque call: the caller's bytes
        else:
            owner.append(-1)
        if parent >= 0:
            seen = edges.setdefault((cp.nodes[parent][1], func), [0, 0])
            seen[0 if ok and counted[parent] else 1] += calls
        seen = edges.setdefault((func, func), [0, 0])  # direct recursion: folded into the node
        seen[0 if ok else 1] += 1
        if not ok or not calls:
            continue
        fcalls[func] = fcalls.get(func, 0) + calls
    # An edge's calls: the stats' (exact, direct recursion too) when the edge
    # was only seen in counted code, else the call paths' (where a node folds
    # direct recursion, its calls are all the edge's from its parent).
    stats = data.stats
    for (a, b), (inside, outside) in edges.items():
        if not inside:
            continue
        ka, kb = keys[a], keys[b]
        row = stats.get(kb)
        exact = row[4].get(ka) if row is not None else None
        if a == b:
            if outside or exact is None:
                continue
            calls = int(exact[0])
        elif not outside and exact is not None:
            calls = int(exact[0])
        else:
            calls = inside - (int(row[4][kb][0]) if row is not None and kb in row[4] else 0)
            if calls <= 0:
                continue
        if calls:
            ecalls[(a, b)] = calls
    # named among the counted functions only (a "#2" among repeated names
    # must not depend on what else ran, uncounted)
    names = {k: steady_name(n) for k, n in
             portable_names({keys[f] for f in fcalls}, data.qualnames, data.paths).items()}
    for f, calls in fcalls.items():
        name = names[keys[f]]
        table[name] = table.get(name, 0) + calls
    for (a, b), calls in ecalls.items():
        if keys[a] in names and keys[b] in names:
            edge = names[keys[a]] + EDGE + names[keys[b]]
            table[edge] = table.get(edge, 0) + calls
    if lines:
        for key, per_line in (data.lines or {}).items():
            name = names.get(tuple(key))
            if name is None or name not in table:
                continue
            for lineno, value in per_line.items():
                hits = value[0] if isinstance(value, (tuple, list)) else value
                if hits:
                    table["%s%s%d" % (name, LINE, lineno)] = int(hits)
    if memory:
        table.update(bytes_of_test(cp, owner, names, keys))
    return table


def bytes_of_test(cp, owner: List[int], names: Mapping[FuncKey, str],
                  keys: List[FuncKey]) -> CountTable:
    """The bytes entries of a test: per counted function (*names*), the
    bytes its counted nodes allocated, an opaque function's with what ran
    inside it (*owner*: the counted node each node's bytes go to, -1 for
    none), and ``TEST_BYTES``, their sum.  The garbage collector's and imports' bytes
    are not in them (their nodes are not counted), nor the framework's."""
    if cp.memory is None:
        raise ValueError("the call paths carry no memory (record them with memory=True)")
    per_node: Dict[int, int] = {}
    for i, counts in enumerate(cp.memory):
        o = owner[i]
        if o >= 0 and counts[_ALLOCATED]:
            per_node[o] = per_node.get(o, 0) + int(counts[_ALLOCATED])
    out: CountTable = {}
    total = 0
    for node, allocated in per_node.items():
        name = names.get(keys[cp.nodes[node][1]])
        if name is None:
            continue
        out[name + BYTES] = out.get(name + BYTES, 0) + allocated
        total += allocated
    out[TEST_BYTES] = total
    return out


_NUMBERED = re.compile(r"\d+")


def steady_name(name: str) -> str:
    """*name* with the numbers of an exec'd code's file name made ``N``
    (``<boltons.funcutils.FunctionBuilder-10>:f``: a counter of the code
    compiled before it in the process, which the tests that ran before set)."""
    if name.startswith("<") and not name.startswith("<frozen "):
        head, sep, tail = name.partition(">:")
        if sep:
            return _NUMBERED.sub("N", head) + sep + tail
    return name


def _relpath(key: FuncKey, names: Mapping[FuncKey, str]) -> str:
    name = names[key]
    return name.split(":", 1)[0] if ":" in name else ""


def left_out(key: FuncKey) -> bool:
    """The garbage collector's row and the profiler's own (enable, disable:
    cProfile's and fastprof's differ)."""
    return is_builtin(key) and (key[2] == GC_NAME or profiler_method(key) is not None)


def counts_of_profile(data, qualnames: bool = True) -> CountTable:
    """The count table of a whole program's profile *data*: every function's
    calls and every edge's, but the garbage collector's (a collection starts
    when allocations since the last one say so) and the profiler's own
    enable/disable -- cProfile files too.  ``qualnames=False`` names functions
    by the key's name (what a cProfile file has), for comparing with one."""
    keys = [k for k in data.stats if not left_out(k)]
    callers = set()
    for row in data.stats.values():
        callers.update(row[4])
    names = portable_names(set(keys) | {c for c in callers if not left_out(c)},
                           data.qualnames if qualnames else {}, data.paths)
    table: CountTable = {}
    for key in keys:
        row = data.stats[key]
        name = names[key]
        table[name] = table.get(name, 0) + int(row[1])
        for caller, edge in row[4].items():
            if caller in names:
                text = names[caller] + EDGE + name
                table[text] = table.get(text, 0) + int(edge[0])
        for lineno, value in (data.lines or {}).get(key, {}).items():
            hits = value[0] if isinstance(value, (tuple, list)) else value
            if hits:
                table["%s%s%d" % (name, LINE, lineno)] = int(hits)
    return table


# ---------------------------------------------------------------- comparing

@dataclass(frozen=True)
class Change:
    entry: str
    old: int
    new: int
    learned: Optional[Tuple[int, int]] = None   # the range a noisy count was learned in

    @property
    def delta(self) -> int:
        return self.new - self.old


def is_c_entry(entry: str) -> bool:
    """Whether *entry* counts a C function (a function's, or the callee's of an edge)."""
    callee = entry.rsplit(EDGE, 1)[-1]
    return callee.startswith("~:")


def parse_tolerance(text) -> float:
    """A tolerance in percent of the old count: ``0``, ``5``, ``"5%"``; ValueError
    unless a number >= 0."""
    try:
        value = float(text.rstrip("%") if isinstance(text, str) else text)
    except (TypeError, ValueError):
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ValueError("%r is not a percentage >= 0 (e.g. 0 or 5)" % (text,))
    return value


META = "#"            # meta entries of a baseline table start with it
RUNS = "#runs"        # how many runs a baseline table was learned over
THREADS = "#threads"  # threads the test left running after its teardown
MEMORY = "#memory"    # 1: the table has bytes entries (recorded with memory on)


def is_meta(entry: str) -> bool:
    return entry.startswith(META)


def is_bytes(entry: str) -> bool:
    return entry.endswith(BYTES)


def counts_only(table: Mapping[str, Count]) -> Dict[str, Count]:
    """*table* without its bytes entries: what the count rules read."""
    return {e: c for e, c in table.items() if not is_bytes(e)}


def bytes_only(table: Mapping[str, Count]) -> Dict[str, Count]:
    """*table*'s bytes entries."""
    return {e: c for e, c in table.items() if is_bytes(e)}


def bounds(count: Count) -> Tuple[int, int]:
    """(low, high) of a baseline count: a learned range, or the exact count twice."""
    return count if isinstance(count, tuple) else (count, count)


def runs_of(table: Mapping[str, Count]) -> Optional[int]:
    """How many runs *table* was learned over; None for a table written
    before baselines were learned (taken as complete)."""
    runs = table.get(RUNS)
    return runs if isinstance(runs, int) else None


def noisy_entries(table: Mapping[str, Count]) -> List[str]:
    """The count entries of baseline *table* learned as ranges (bytes vary
    by nature: not told)."""
    return sorted((e for e, c in counts_only(table).items() if isinstance(c, tuple)),
                  key=entry_sort_key)


def merge(old: Mapping[str, Count], new: Mapping[str, int]) -> BaselineTable:
    """Baseline *old* after one more run's table *new*: a count that differs
    becomes the range of both (an entry missing on one side counts 0);
    ``#runs`` is one more; the other meta entries keep their highest value."""
    out: BaselineTable = {}
    for entry in set(old) | set(new):
        if is_meta(entry):
            if entry != RUNS:
                out[entry] = max(old.get(entry, 0), new.get(entry, 0))
            continue
        lo_a, hi_a = bounds(old.get(entry, 0))
        lo_b, hi_b = bounds(new.get(entry, 0))
        lo, hi = min(lo_a, lo_b), max(hi_a, hi_b)
        if hi:
            out[entry] = lo if lo == hi else (lo, hi)
    out[RUNS] = (runs_of(old) or 1) + 1
    return out


# C functions and standard modules whose call counts follow the scheduling of
# threads and the arrival of I/O, not the work: (kind, what the entry starts
# or contains).  An entry is classified by its callee (an edge's) or itself.
SCHEDULING = (
    ("lock", ("~:<method 'acquire' of '_thread.", "~:<method 'release' of '_thread.",
              "~:<method '__enter__' of '_thread.", "~:<method '__exit__' of '_thread.",
              "~:<method 'locked' of '_thread.", "~:<method '_is_owned' of '_thread.",
              "~:<method '_release_save' of '_thread.", "~:<method '_acquire_restore' of '_thread.",
              "threading.py:Condition.", "threading.py:Semaphore.",
              "threading.py:BoundedSemaphore.", "threading.py:Barrier.",
              "threading.py:_RLock.")),
    ("wait", ("~:<built-in method time.sleep>", "threading.py:Event.", "threading.py:Thread.join",
              "threading.py:Thread.is_alive", "threading.py:Thread._wait_for_tstate_lock",
              "queue.py:", "~:<method 'get' of '_queue.SimpleQueue' objects>",
              "~:<method 'put' of '_queue.SimpleQueue' objects>",
              "concurrent/futures/", "asyncio/", "multiprocessing/", "subprocess.py:")),
    ("io", ("~:<method 'recv", "~:<method 'send", "~:<method 'accept' of '_socket.",
            "~:<method 'connect", "~:<method 'settimeout' of '_socket.", "socket.py:",
            "ssl.py:", "selectors.py:", "socketserver.py:", "~:<built-in method select.",
            "~:<method 'poll' of 'select.", "~:<method 'select' of 'select.",
            "~:<method 'register' of 'select.", "~:<method 'unregister' of 'select.",
            "~:<method 'modify' of 'select.", "~:<built-in method posix.read>",
            "~:<built-in method posix.write>", "~:<method 'readinto' of '_io.FileIO' objects>")),
)


# what starts another thread, a pool or an event loop: a test that calls one
# (or whose code does) has waits whose count follows the machine's speed --
# a poll with a timeout finds the item on the first try or the third --
# even when they did not vary while it was learned
CONCURRENT = ("threading.py:Thread.start", "~:<built-in method _thread.start",
              "concurrent/futures/", "multiprocessing/", "asyncio/")


def starts_concurrency(table: Mapping[str, Count]) -> bool:
    """Whether the test of *table* starts a thread, a pool or an event loop
    (an entry, an edge's callee, from ``CONCURRENT``)."""
    return any(not is_meta(entry) and entry.rsplit(EDGE, 1)[-1].startswith(CONCURRENT)
               for entry in table)


def scheduling_kind(entry: str) -> Optional[str]:
    """"lock", "wait" or "io" when *entry* (a function or an edge, by its
    callee) counts calls that follow thread scheduling or I/O arrival; None
    for work."""
    callee = entry.rsplit(EDGE, 1)[-1]
    if LINE in callee:
        return None
    for kind, starts in SCHEDULING:
        for start in starts:
            if callee.startswith(start):
                return kind
    return None


# a count of a test whose counts vary may move beyond its range by the
# range's width, by this part of its highest value or by one, whichever is
# more: a few runs see less than all of the spread (a socket read's chunks
# on a loaded machine, one more message handled by a server thread before
# the test ends), and a regression that doubles a call of more than one is
# still outside
NOISY_MARGIN = 0.25
# a count learned as a range whose top is this many times its bottom (or
# more) follows the machine's speed -- a worker producing until the test
# stops it -- and is not compared: any value passes
SPEED_BOUND = 1.5


def allowed(count: Count, tolerance: float, scheduling: bool = False) -> Tuple[int, float]:
    """(low, high) a new count may take against baseline *count*: an exact
    count moves by *tolerance* percent; a learned range (low, high) is widened
    on both sides by ``NOISY_MARGIN`` (or its width), then by the tolerance;
    a range whose top is ``SPEED_BOUND`` times its bottom: anything;
    *scheduling* (a row of a test whose counts follow thread scheduling or
    I/O): anything up to twice its highest count (a path that waits or
    reads once or twice more: at least 2)."""
    lo, hi = bounds(count)
    width = hi - lo
    if width >= 2 and hi >= SPEED_BOUND * lo:
        return 0, float("inf")   # work done until another thread stops it
    if scheduling:
        lo, top = 0, max(2 * hi, hi + 2 * width, 2)
    else:
        margin = max(width, NOISY_MARGIN * hi, 1)
        lo, top = lo - margin, hi + margin
    slack = tolerance / 100.0
    return max(0, int(lo - slack * lo)), top + slack * top


def counts_vary(old: Mapping[str, Count]) -> bool:
    """Whether the test of baseline *old* has counts that vary: some were
    learned as ranges, or it leaves threads running (whose last steps land
    before or after its end)."""
    return bool(old.get(THREADS)) or any(isinstance(c, tuple) for c in counts_only(old).values())


def compare(old: Mapping[str, Count], new: Mapping[str, int], tolerance: float = 0.0,
            c_tolerance: Optional[float] = None) -> List[Change]:
    """The entries whose count moved by more than *tolerance* percent of the
    old count (*c_tolerance* for C functions; default: *tolerance*), new or
    gone entries always.  In a test whose counts vary (*old* has learned
    ranges, or the test leaves threads running): a count outside its
    ``allowed`` range (a range or an exact count widened by
    ``NOISY_MARGIN``).  In a noisy test or one that starts threads
    (``starts_concurrency``): a scheduling row (``scheduling_kind``) beyond
    twice its highest count (or 2: a new one too); biggest change first.
    Bytes entries are not compared here (``compare_bytes``)."""
    c_tolerance = tolerance if c_tolerance is None else c_tolerance
    old, new = counts_only(old), counts_only(new)
    noisy = counts_vary(old)
    waits_vary = noisy or starts_concurrency(old)
    out = []
    for entry in set(old) | set(new):
        if is_meta(entry):
            continue
        base, b = old.get(entry, 0), new.get(entry, 0)
        if base == b:
            continue
        tol = c_tolerance if is_c_entry(entry) else tolerance
        learned = base if isinstance(base, tuple) else None
        waits = waits_vary and scheduling_kind(entry) is not None
        if learned is not None or waits or (noisy and base):
            lo, hi = allowed(base, tol, waits)
            if lo <= b <= hi:
                continue
            a = bounds(base)[0 if b < bounds(base)[0] else 1]
        else:
            a = base
            if a and b and abs(b - a) <= tol / 100.0 * a:
                continue
        out.append(Change(entry, a, b, learned))
    out.sort(key=lambda c: (-abs(c.delta), entry_sort_key(c.entry)))
    return out


# bytes may grow by this percent of their baseline and this many bytes
# (fastprof check --memory, the gate's --fastprof-memory)
BYTES_TOLERANCE = 10.0
BYTES_MIN = 1024


def compare_bytes(old: Mapping[str, Count], new: Mapping[str, int],
                  tolerance: float = BYTES_TOLERANCE, min_bytes: int = BYTES_MIN) -> List[Change]:
    """The bytes entries of *new* above their baseline in *old* (the top of
    a learned range) by more than *tolerance* percent of it, the range's
    width and *min_bytes*, all three (a function new to the test counts
    from 0); in a test whose counts vary (``counts_vary``: its reads return
    what has arrived, its polls follow the machine's speed) by more than
    the top itself: such bytes follow the counts.  Allocating less passes.
    Biggest growth first."""
    out = []
    noisy = counts_vary(old)
    for entry, b in bytes_only(new).items():
        base = old.get(entry, 0)
        lo, hi = bounds(base)
        if b <= hi + max(tolerance / 100.0 * hi, hi - lo, min_bytes, hi if noisy else 0):
            continue
        out.append(Change(entry, hi, b, base if isinstance(base, tuple) else None))
    out.sort(key=lambda c: (-c.delta, entry_sort_key(c.entry)))
    return out


def entry_sort_key(entry: str) -> Tuple[str, int]:
    """Entries sorted by text, line entries by line number."""
    if LINE in entry:
        head, _, tail = entry.rpartition(LINE)
        if tail.isdigit():
            return head + LINE, int(tail)
    return entry, -1


# ---------------------------------------------------------------- baseline files

HEADER = ("# fastprof call counts, Python %s: per test, the calls of each function and\n"
          "# caller -> callee edge it ran (docs/gate.md). Written by pytest --fastprof-counts;\n"
          "# --fastprof-counts-update rewrites it.\n")


class BaselineError(ValueError):
    """A baseline file that cannot be read: its path and line say where."""


def format_tables(tables: Mapping[str, BaselineTable], version: str) -> str:
    """The text of a baseline file: *tables* ({test name: table}), sorted."""
    out = [HEADER % version]
    for test in sorted(tables):
        out.append("\n[%s]\n" % test)
        table = tables[test]
        for entry in sorted(table, key=entry_sort_key):
            count = table[entry]
            if is_meta(entry):
                out.append("# %s: %d\n" % (META_NAMES.get(entry, entry[1:]), count))
            elif isinstance(count, tuple):
                out.append("%d..%d %s\n" % (count[0], count[1], entry))
            else:
                out.append("%d %s\n" % (count, entry))
    return "".join(out)


# meta entries as a section's comment lines name them
META_NAMES = {RUNS: "runs", THREADS: "threads left running", MEMORY: "bytes recorded"}
_META_OF = {v: k for k, v in META_NAMES.items()}
_META_LINE = re.compile(r"# ([a-z][a-z ]*): (\d+)$")
_RANGE = re.compile(r"(\d+)\.\.(\d+)$")


def parse_tables(text: str, where: str = "baseline") -> Dict[str, BaselineTable]:
    """The inverse of ``format_tables``; BaselineError on a malformed line."""
    tables: Dict[str, CountTable] = {}
    current: Optional[CountTable] = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            meta = _META_LINE.match(line) if current is not None else None
            if meta:
                current[_META_OF.get(meta.group(1), META + meta.group(1))] = int(meta.group(2))
            continue
        if line.startswith("[") and line.endswith("]"):
            current = tables.setdefault(line[1:-1], {})
            continue
        count, _, entry = line.partition(" ")
        learned = _RANGE.match(count)
        if current is None or not (count.isdigit() or learned) or not entry:
            raise BaselineError("%s:%d: not a count line: %r" % (where, n, line))
        current[entry] = (int(learned.group(1)), int(learned.group(2))) if learned else int(count)
    return tables


def read_tables(path: str) -> Dict[str, BaselineTable]:
    """A baseline file's tables ({} if there is no file); BaselineError if malformed."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError("cannot read %s: %s" % (path, exc)) from None
    return parse_tables(text, path)


def version_tag() -> str:
    """This interpreter's minor version, as baselines are keyed: ``py3.12``."""
    return "py%d.%d" % sys.version_info[:2]


def baseline_file(directory: str, nodeid: str) -> Tuple[str, str]:
    """(path of the baseline file, test name inside it) for test *nodeid*:
    ``DIR/py3.12/tests/test_foo.py.counts`` and ``test_a[1]``."""
    module, sep, test = nodeid.partition("::")
    if not sep:
        module, test = "tests", nodeid
    parts = [p if p not in ("", ".", "..") else "__" for p in module.replace("\\", "/").split("/")]
    return os.path.join(directory, version_tag(), *parts) + ".counts", test


# ---------------------------------------------------------------- reports

@dataclass
class Outcome:
    """What a comparison found: per test (node id) its changes; the tests
    recorded anew; notes (one line each)."""
    changed: Dict[str, List[Change]]
    recorded: List[str]
    compared: int = 0
    notes: Optional[List[str]] = None
    errors: Optional[List[str]] = None   # baselines that could not be read
    # per changed test whose counts vary by nature: (likely cause, the one-line fix)
    causes: Optional[Dict[str, Tuple[str, str]]] = None

    @property
    def failed(self) -> bool:
        return bool(self.changed or self.errors)


def describe(change: Change) -> str:
    if is_bytes(change.entry):
        from .view import format_bytes  # (deferred: the gate's summary only)
        return "%s -> %s (+%s)" % (format_bytes(change.old), format_bytes(change.new),
                                   format_bytes(change.delta))
    if change.learned is not None:
        return "%d (learned %d..%d)" % ((change.new,) + change.learned)
    if change.old == 0:
        return "new: %d" % change.new
    if change.new == 0:
        return "gone: was %d" % change.old
    return "%d -> %d (%+d)" % (change.old, change.new, change.delta)


def text_lines(outcome: Outcome, limit: int = 20) -> List[str]:
    """The terminal summary of *outcome*: per changed test, its biggest changes."""
    lines = []
    for test in sorted(outcome.changed):
        changes = outcome.changed[test]
        lines.append("%s: %s" % (test, _what_changed(changes)))
        cause = (outcome.causes or {}).get(test)
        if cause is not None:
            lines.append("    likely cause: %s" % cause[0])
            lines.append("    fix: %s" % cause[1])
        for c in changes[:limit or None]:
            lines.append("    %-20s %s" % (describe(c), c.entry))
        if limit and len(changes) > limit:
            lines.append("    ... and %d more" % (len(changes) - limit))
    return lines


def _what_changed(changes: List[Change]) -> str:
    """``4 counts changed``, ``bytes grew (2 rows)``, or both."""
    grew = sum(1 for c in changes if is_bytes(c.entry))
    moved = len(changes) - grew
    parts = []
    if moved:
        parts.append("%d count%s changed" % (moved, "" if moved == 1 else "s"))
    if grew:
        parts.append("bytes grew (%d row%s)" % (grew, "" if grew == 1 else "s"))
    return ", ".join(parts)


def changed_tests(outcome: Outcome) -> str:
    """``2 tests changed their call counts`` (``... or allocate more bytes``
    when some did)."""
    n = len(outcome.changed)
    grew = any(is_bytes(c.entry) for cs in outcome.changed.values() for c in cs)
    return "%d test%s changed their call counts%s" % (n, "" if n == 1 else "s",
                                                      " or allocate more bytes" if grew else "")


def md_escape(text: str) -> str:
    """*text* for markdown prose (no HTML tags, no table breaks)."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def md_code(text: str) -> str:
    """*text* as a markdown code span in a table cell."""
    return "`%s`" % text.replace("`", "'").replace("|", "\\|")


def markdown(outcome: Outcome, title: str = "fastprof call counts", limit: int = 20) -> str:
    """*outcome* as markdown (a GitHub step summary)."""
    out = ["## %s\n" % title]
    if outcome.failed:
        out.append("**%s** (%d compared)\n" % (changed_tests(outcome), outcome.compared))
    else:
        out.append("No call count changed (%d compared).\n" % outcome.compared)
    for test in sorted(outcome.changed):
        changes = outcome.changed[test]
        out.append("\n### %s\n" % md_code(test))
        cause = (outcome.causes or {}).get(test)
        if cause is not None:
            out.append("Likely cause: %s. Fix: %s\n" % (md_escape(cause[0]), md_escape(cause[1])))
        out.append("| before | after | change | function or edge |\n|---:|---:|---:|---|")
        for c in changes[:limit or None]:
            out.append("| %d | %d | %+d | %s |" % (c.old, c.new, c.delta, md_code(c.entry)))
        if limit and len(changes) > limit:
            out.append("\n... and %d more" % (len(changes) - limit))
    if outcome.recorded:
        out.append("\n%d test%s recorded anew (no baseline)." % (
            len(outcome.recorded), "" if len(outcome.recorded) == 1 else "s"))
    for note in (outcome.errors or []) + (outcome.notes or []):
        out.append("\n%s" % md_escape(note))
    return "\n".join(out) + "\n"


def as_json(outcome: Outcome) -> str:
    obj = {"failed": outcome.failed, "compared": outcome.compared,
           "changed": {t: [{"entry": c.entry, "old": c.old, "new": c.new} for c in cs]
                       for t, cs in sorted(outcome.changed.items())},
           "causes": {t: {"cause": c, "fix": f} for t, (c, f) in sorted((outcome.causes or {}).items())},
           "recorded": sorted(outcome.recorded), "notes": list(outcome.notes or []),
           "errors": list(outcome.errors or [])}
    return json.dumps(obj, indent=1, sort_keys=True) + "\n"

