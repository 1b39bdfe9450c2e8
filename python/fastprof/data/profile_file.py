"""Reading and writing profile files.

A fastprof ``.prof`` file is exactly what cProfile writes -- one marshal'd
pstats dict ``{(file, line, name): (cc, nc, tt, ct, {caller: (nc, cc, tt, ct)})}``
-- optionally followed by a second marshal'd object, the *trailer*, holding
what pstats has no room for (call paths, per-thread stats, clock).
``pstats.Stats``, gprof2dot, snakeviz and friends read only the first object,
so they read our files unchanged; a cProfile file is a fastprof file with no
trailer.

Trailer (a plain dict; only marshal-able values)::

    {
      "format": "fastprof", "version": 1,
      "clock": "tsc" | "monotonic" | "cpu" | "custom",   # optional
      "callpaths": {                                      # optional
          "functions": [(file, line, name), ...],
          "nodes": [(parent, function, calls, tottime, cumtime), ...],
          "memory": [counts, ...],                        # optional, one per node
      },
      "threads": [                                        # optional
          {"id": int, "ident": int, "name": str, "stats": <pstats dict>,
           "memory": {(file, line, name): (counts, {caller: counts})}},  # (memory: optional)
          ...
      ],
      "qualnames": [(file, line, name, qualname), ...],   # optional
      "lines": {(file, line, name): {lineno: (hits, seconds)}},  # optional
      "lines_own": {(file, line, name): {lineno: seconds}},      # optional
      "lines_memory": {(file, line, name): {lineno: (allocated, net, own)}},  # optional
      "only": [pattern, ...],                             # optional
      "fast": True,                                       # optional
      "sources": {file: {lineno: text}},                  # optional
      "coroutines": "wall",                               # optional
      "paths": {file: path relative to its sys.path entry},  # optional
      "request": {"method": str, "path": str, "status": int,   # optional
                  "duration": seconds, "time": unix time,
                  "recorded": seconds, "cpu": seconds, "suspended": seconds},
      "compensation": {"on": bool, "removed": seconds, "events": int},  # optional
      "shared_keys": {(file, line, name): [(qualname, <pstats row>), ...]},  # optional
      "memory": {"rows": {(file, line, name): (counts, {caller: counts})},  # optional
                 "totals": {"current": int, "peak": int, ...}},
    }

A thread record may hold ``"stats_of_file": True`` instead of ``stats``
(added without a version bump): its stats are the file's pstats table
(one thread, the same rows), written once instead of twice; ``load_profile``
gives the record its ``stats`` again (a copy of the table), so readers see
what they saw before.  pstats reads the table only, which is unchanged.
Likewise ``"memory_of_file": True`` instead of a record's ``memory``: the
file's memory rows.

``request`` (fastprof.middleware, added without a version bump): the web
request the profile is of: its method, path (without the query), response
status (0: none sent), duration (wall time) and start time; and, added
later without a bump (each optional: a file without them is read as
before), where that time went: ``recorded``, the time in its recorded
frames (the sum of the table's tottime, every thread's, on the profile's
clock), ``cpu``, its threads' CPU time while they ran it (less the
profiler's own time where the times are compensated), and for a request
in an asyncio task ``suspended``, the time its event loop's thread was
not running it.

``lines`` (``--lines``, ``Profile(lines=...)``): per matched function, each
line's hits and time (from the line's start to the next line or the
function's exit, callees included).  ``lines_own`` (added without a
version bump, like ``qualnames``): each line's own time, its time less
the calls made from it, for the functions of ``lines`` where it is exact.
``lines_memory`` (with ``memory`` too, added without a version bump): each
line's bytes: allocated while it ran, callees included; ``net``, the change
of its thread's live bytes meanwhile (negative where it freed more); own
bytes, the calls' left out (None where not exact).

``sources`` (with ``lines``, added without a version bump): the text of
the lines a line listing shows (each function of ``lines`` from its first
line to its last line with stats), read when the file is written, so the
listing shows the code wherever the file is read (``line_sources.py``);
a reader without it reads the source file then.

A file cut short inside the trailer is still read: its pstats table, with
``damaged`` saying what was lost (the command lines warn); it is never
taken for a plain cProfile file.

``coroutines`` (``--coroutines wall``, added without a version bump): a
coroutine's cumtime runs from its start to its end, suspensions included,
so concurrent ones overlap; with ``threads``, what lets a viewer explain a
cumtime above the total.

``only`` (``--only``, ``Profile(only=...)``): the patterns the profile was
scoped to; calls into other Python code are in their callers' own time.
``fast`` (``--fast``, ``Profile(fast=True)``): Python functions only; C
functions' time is in their callers' own time.  Both are there so a viewer
of the file can say what it leaves out.  ``compensation`` (added without a
version bump): whether the profiler's own cost was taken out of the times,
how much in all and over how many events (a call and a return per call;
``on`` is None in a sum of profiles that differ): ``cost_note.py``.

``paths`` (added without a version bump): each recorded file's path
relative to the ``sys.path`` entry that held it in the profiled process
(``jinja2/runtime.py``), so functions pair up across installs
(``portable_names.py``).

``shared_keys`` (added without a version bump): the rows that are sums of
several code objects sharing one key (the ``__init__`` of every dataclass at
``<string>:2``, the namedtuples' ``<string>:1(<lambda>)``), each code
object's own row (its qualified name, "" where none is known, and its pstats
row: callers are the edges into that code object, by caller key).  cProfile
keeps one of them, the last its table lists, and drops the others' calls
(fastprof sums them); with these a comparison with a cProfile file is made
on cProfile's terms (``tools/diff.as_cprofile_keeps``).  ``pstats_only`` (not
written) says a file read had no trailer: a cProfile file, or another
pstats writer's.

``memory`` (``Profile(memory=True)``, ``--memory``; added without a
version bump): what each function allocated, and per caller, each
``counts`` a tuple of ``memory.FIELDS`` (allocations, allocated bytes,
frees, freed bytes, net, live at the peak, allocated including callees,
peak of one call); and the process's traced bytes (``memory.TOTALS``:
alive at the end, at the peak, blocks alive, blocks allocated, blocks not
tracked). With call paths, ``callpaths["memory"]`` holds each node's
counts (what the calls along that path allocated themselves, and with
their callees). ``ProfileData.memory`` is ``{key: MemoryRow}``, the dict
``Profile.memory_stats()`` returns, and ``memory_totals`` the totals.

``qualnames`` (added in version 1 without a bump: readers ignore keys they
do not know, and a file without it is read as before) gives the qualified
name (``co_qualname``, Python 3.11+) of the functions whose key alone says
less (``Node.__init__`` for ``(file, 12, "__init__")``); several code
objects sharing one key are listed together, ``"A.__init__ | B.__init__"``.
The pstats keys themselves are always cProfile's.

``nodes`` is the calling-context tree: ``parent`` is the index of the parent
node in the same list (-1 for a root) and always smaller than the node's own
index; ``function`` indexes ``functions``.  ``calls``/``tottime`` of a node
are those of the function when called along that path; ``cumtime`` counts
outermost activations only (as pstats does).
"""

import marshal
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from . import line_sources, memory
from .atomic_file import write_atomically
from .cost_note import check as check_compensation
from .memory import FIELDS
from .model import FuncKey

FORMAT_NAME = "fastprof"
FORMAT_VERSION = 1

# (parent index or -1, function index, calls, tottime, cumtime)
Node = Tuple[int, int, int, float, float]


class ProfileFileError(Exception):
    """A file is missing, unreadable, or not a profile."""


@dataclass
class CallPaths:
    functions: List[FuncKey] = field(default_factory=list)
    nodes: List[Node] = field(default_factory=list)
    # memory profiling: per node, its counts in memory.FIELDS' order (None: not recorded)
    memory: Optional[List[tuple]] = None

    def to_marshal(self) -> Dict[str, Any]:
        out = {"functions": list(self.functions), "nodes": list(self.nodes)}
        if self.memory is not None:
            out["memory"] = [tuple(int(n) for n in counts) for counts in self.memory]
        return out

    @classmethod
    def from_marshal(cls, obj: Dict[str, Any]) -> "CallPaths":
        functions = [tuple(f) for f in obj["functions"]]
        nodes = [tuple(n) for n in obj["nodes"]]
        for i, (parent, func, *_rest) in enumerate(nodes):
            if not (-1 <= parent < i) or not (0 <= func < len(functions)):
                raise ValueError("malformed call-path node %d" % i)
        memory = None
        if "memory" in obj:
            memory = [tuple(counts) for counts in obj["memory"]]
            if len(memory) != len(nodes) or any(len(c) != len(FIELDS) for c in memory):
                raise ValueError("call-path memory does not match the nodes")
        return cls(functions, nodes, memory)


@dataclass
class ProfileData:
    """Everything one profile file holds."""

    stats: Dict[FuncKey, tuple]
    callpaths: Optional[CallPaths] = None
    threads: List[Dict[str, Any]] = field(default_factory=list)
    clock: Optional[str] = None
    # pstats key -> qualified name, where it says more than the key's name
    qualnames: Dict[FuncKey, str] = field(default_factory=dict)
    # pstats key -> {lineno: (hits, seconds)} (line-level profiling)
    lines: Dict[FuncKey, Dict[int, Tuple[int, float]]] = field(default_factory=dict)
    # the only= patterns it was scoped to, and whether it was fast mode
    only: Optional[List[str]] = None
    fast: bool = False
    # pstats key -> {lineno: own seconds}, the functions of lines with exact own times
    lines_own: Dict[FuncKey, Dict[int, float]] = field(default_factory=dict)
    # pstats key -> {lineno: (allocated, net, own allocated or None)}: the
    # functions of lines measured in bytes (memory profiling)
    lines_memory: Dict[FuncKey, Dict[int, Tuple[int, int, Optional[int]]]] = field(default_factory=dict)
    # the profiler's own cost taken out or not (cost_note.py); None: not said
    compensation: Optional[Dict[str, Any]] = None
    # the web request profiled (fastprof.middleware): method, path, status, duration, time
    request: Optional[Dict[str, Any]] = None
    # filename -> path relative to its sys.path entry where it was recorded
    paths: Dict[str, str] = field(default_factory=dict)
    # filename -> {lineno: text}: the source of the lines of ``lines``, as stored
    sources: Dict[str, Dict[int, str]] = field(default_factory=dict)
    # "wall" when coroutines were timed start to end (--coroutines wall)
    coroutines: Optional[str] = None
    # pstats key -> [(qualified name or "", pstats row)]: the rows of the
    # code objects summed under a key several shared
    shared_keys: Dict[FuncKey, List[Tuple[str, tuple]]] = field(default_factory=dict)
    # memory profiling: pstats key -> MemoryRow (memory.py), and the process's traced bytes
    memory: Optional[Dict[FuncKey, Any]] = None
    memory_totals: Optional[Dict[str, int]] = None
    # read from a file with no trailer (cProfile's: one code object per key); not written
    pstats_only: bool = False
    # read from a damaged file: what was lost ("fastprof data cut short ..."); not written
    damaged: Optional[str] = None
    # the call paths' times are bytes of this memory.WEIGHTS column (memory.weighed_by_bytes); not written
    weight: Optional[str] = None

    def trailer(self) -> Optional[Dict[str, Any]]:
        """The trailer's dict, or None when there is nothing beside the stats."""
        header = {"format": FORMAT_NAME, "version": FORMAT_VERSION}
        out: Dict[str, Any] = dict(header)
        if self.clock is not None:
            out["clock"] = self.clock
        if self.callpaths is not None:
            out["callpaths"] = self.callpaths.to_marshal()
        memory_out = memory.table_to_marshal(self.memory, self.memory_totals) if self.memory is not None else None
        if self.threads:
            out["threads"] = _threads_to_marshal(self.threads, self.stats,
                                                 memory_out["rows"] if memory_out else None)
        if self.qualnames:
            out["qualnames"] = [tuple(k) + (q,) for k, q in self.qualnames.items()]
        if self.lines:
            out["lines"] = {tuple(k): {int(n): (int(h), float(t)) for n, (h, t) in v.items()}
                            for k, v in self.lines.items()}
            # the listed lines' text: as stored, else read now
            sources = line_sources.to_marshal(line_sources.capture(self.lines, self.sources))
            if sources:
                out["sources"] = sources
        if self.only is not None:
            out["only"] = [str(p) for p in self.only]
        if self.fast:
            out["fast"] = True
        if self.coroutines is not None:
            out["coroutines"] = str(self.coroutines)
        if self.lines_own:
            out["lines_own"] = {tuple(k): {int(n): float(t) for n, t in v.items()}
                                for k, v in self.lines_own.items()}
        if self.lines_memory:
            out["lines_memory"] = {tuple(k): {int(n): _line_bytes(b) for n, b in v.items()}
                                   for k, v in self.lines_memory.items()}
        if self.compensation is not None:
            out["compensation"] = dict(self.compensation)
        if self.request is not None:
            out["request"] = dict(self.request)
        if self.paths:
            out["paths"] = {str(f): str(r) for f, r in self.paths.items()}
        if self.shared_keys:
            out["shared_keys"] = {tuple(k): [(str(q), tuple(row)) for q, row in parts]
                                  for k, parts in self.shared_keys.items()}
        if memory_out is not None:
            out["memory"] = memory_out
        return None if out == header else out


# a thread record's key in place of "stats": the file's pstats table (module doc)
STATS_OF_FILE = "stats_of_file"
MEMORY_OF_FILE = "memory_of_file"


def _line_bytes(b):
    """A line's ``(allocated, net, own or None)``, checked."""
    allocated, net, own = b
    return int(allocated), int(net), None if own is None else int(own)


def _threads_to_marshal(threads, stats, memory_rows):
    """The trailer's thread records: one thread whose stats (memory) are
    the file's table says so instead of holding it again (the file's size
    halved); a record's memory (``{key: MemoryRow}``) as the trailer's
    memory rows (*memory_rows*: the file's)."""
    out = [dict(t, memory=memory.table_to_marshal(t["memory"], None)["rows"]) if "memory" in t else t
           for t in threads]
    if len(out) != 1:
        return out
    record = dict(out[0])
    for name, mark, whole in (("stats", STATS_OF_FILE, stats), ("memory", MEMORY_OF_FILE, memory_rows)):
        if whole is not None and record.get(name) == whole:
            del record[name]
            record[mark] = True
    return [record]


def _threads_from_marshal(threads, stats, memory_table):
    """The thread records as written before STATS_OF_FILE and
    MEMORY_OF_FILE: each with its stats, and its memory as ``{key:
    MemoryRow}`` (ValueError if it is not memory rows)."""
    out = []
    for t in threads:
        if isinstance(t, dict):
            t = dict(t)
            if t.pop(STATS_OF_FILE, None) is True and "stats" not in t:
                t["stats"] = dict(stats)
            if t.pop(MEMORY_OF_FILE, None) is True and "memory" not in t and memory_table is not None:
                t["memory"] = dict(memory_table)
            elif "memory" in t:
                t["memory"] = memory.table_from_marshal({"rows": t["memory"]})[0]
        out.append(t)
    return out


def _shared_keys_from_marshal(obj) -> Dict[FuncKey, List[Tuple[str, tuple]]]:
    """The trailer's ``shared_keys``; ValueError if they are not rows."""
    out = {}
    for key, parts in obj.items():
        rows = []
        for qualname, row in parts:
            if not (isinstance(row, tuple) and len(row) == 5 and isinstance(row[4], dict)):
                raise ValueError("a shared key's row is not a pstats row")
            rows.append((str(qualname), row))
        out[tuple(key)] = rows
    return out


def file_parts(table: bytes, data: ProfileData, qualnames: bytes = b"") -> List[bytes]:
    """A profile file's bytes, in pieces to write one after the other: its
    pstats table's marshal bytes *table*, then *data*'s trailer.  If not
    empty, *qualnames* is the marshal bytes of the trailer's ``qualnames``
    list, in place of ``data.qualnames``.  That list refers to objects of
    its own (marshal's references, counted from the start of the trailer's
    ``marshal.loads``), so what comes before it in the trailer is written
    without any (marshal version 2).  The one maker of a .prof file's bytes:
    write_profile's and per-test's C fast path's (file_bytes)."""
    if not qualnames:
        trailer = data.trailer()
        return [table] if trailer is None else [table, marshal.dumps(trailer)]
    head = marshal.dumps(data.trailer() or {"format": FORMAT_NAME, "version": FORMAT_VERSION}, 2)
    return [table, head[:-1] + marshal.dumps("qualnames", 2) + qualnames + b"0"]  # (b"0": the dict's end)


def file_bytes(table: bytes, data: ProfileData, qualnames: bytes = b"") -> bytes:
    """A profile file's bytes in one piece (file_parts): what per-test's C
    fast path writes, its table marshalled by ``Profiler._stats_marshal``."""
    return b"".join(file_parts(table, data, qualnames))


def write_profile(path, data: ProfileData) -> None:
    """Write *data* to *path* (str, PathLike or a binary file object); a
    path is replaced whole or not at all (atomic_file.py).

    The one writer of pstats output: ``Profile.dump_stats``, the exports'
    pstats row (so every command line's -o/--to pstats, the middleware's
    request profiles), per-process, per-test and the attach and top agents
    all write through it (per-test's C fast path writes the same bytes,
    file_bytes)."""
    if hasattr(path, "write"):
        _write(path, data)
        return
    write_atomically(path, lambda f: _write(f, data))


def _write(f, data: ProfileData) -> None:
    for part in file_parts(marshal.dumps(data.stats), data):  # (= marshal.dump of each)
        f.write(part)


def load_profile(path) -> ProfileData:
    """Read a cProfile or fastprof file; raise ProfileFileError if it is not one."""
    try:
        with open(path, "rb") as f:
            try:
                stats = marshal.load(f)
            except EOFError as exc:
                if f.tell() == 0:
                    raise ProfileFileError("%s: an empty file, not a profile" % (path,)) from None
                raise ProfileFileError("%s: not a profile file, or one cut short (file truncated?): %s"
                                       % (path, exc)) from None
            except (ValueError, TypeError) as exc:
                raise ProfileFileError("%s: not a profile file (%s)" % (path, exc)) from None
            _check_stats(path, stats)
            data = ProfileData(stats)
            rest = f.read()
            if not rest:  # the file ends with the pstats table: a cProfile file
                data.pstats_only = True
                return data
            try:
                trailer = marshal.loads(rest)
            except EOFError:  # the trailer (a dict) begun but cut short
                if rest[0] & 0x7F != ord("{"):
                    raise ProfileFileError("%s: unexpected data after the pstats table" % (path,)) from None
                data.damaged = "fastprof data cut short (file truncated?); only the pstats table is read"
                return data
            except (ValueError, TypeError) as exc:
                raise ProfileFileError("%s: corrupt fastprof trailer (%s)" % (path, exc)) from None
    except OSError as exc:
        raise ProfileFileError("%s: %s" % (path, exc.strerror or exc)) from None
    if not (isinstance(trailer, dict) and trailer.get("format") == FORMAT_NAME):
        raise ProfileFileError("%s: unexpected data after the pstats table" % (path,))
    try:
        if "callpaths" in trailer:
            data.callpaths = CallPaths.from_marshal(trailer["callpaths"])
        if "memory" in trailer:
            data.memory, data.memory_totals = memory.table_from_marshal(trailer["memory"])
        data.threads = _threads_from_marshal(trailer.get("threads", []), stats, data.memory)
        data.clock = trailer.get("clock")
        data.qualnames = {(f, line, name): str(q) for f, line, name, q in trailer.get("qualnames", ())}
        data.lines = {tuple(k): {int(n): (int(h), float(t)) for n, (h, t) in v.items()}
                      for k, v in trailer.get("lines", {}).items()}
        if "only" in trailer:
            data.only = [str(p) for p in trailer["only"]]
        data.fast = bool(trailer.get("fast", False))
        data.coroutines = trailer.get("coroutines")
        data.lines_own = {tuple(k): {int(n): float(t) for n, t in v.items()}
                          for k, v in trailer.get("lines_own", {}).items()}
        data.lines_memory = {tuple(k): {int(n): _line_bytes(b) for n, b in v.items()}
                             for k, v in trailer.get("lines_memory", {}).items()}
        data.sources = line_sources.from_marshal(trailer.get("sources", {}))
        data.paths = {str(f): str(r) for f, r in trailer.get("paths", {}).items()}
        data.shared_keys = _shared_keys_from_marshal(trailer.get("shared_keys", {}))
        if isinstance(trailer.get("request"), dict):
            data.request = dict(trailer["request"])
        data.compensation = check_compensation(trailer.get("compensation"))
    except (KeyError, TypeError, ValueError) as exc:
        raise ProfileFileError("%s: corrupt fastprof trailer (%s)" % (path, exc)) from None
    return data


# Since 3.15, `python -m profiling.sampling` writes pstats dicts of sample
# counts marked with this key (pstats then loads them as SampledStats).
# fastprof never writes it, and its tools would read the samples as calls.
SAMPLED_MARKER = ("__sampled__",)


def _check_stats(path, stats) -> None:
    if not isinstance(stats, dict):
        raise ProfileFileError("%s: not a profile file (no pstats table)" % (path,))
    if SAMPLED_MARKER in stats:
        raise ProfileFileError("%s: a sampled profile (sample counts, not calls: "
                               "python -m profiling.sampling); fastprof reads "
                               "cProfile and fastprof files only" % (path,))
    for key, value in stats.items():
        ok = (isinstance(key, tuple) and len(key) == 3 and isinstance(value, tuple)
              and len(value) == 5 and isinstance(value[4], dict))
        if not ok:
            raise ProfileFileError("%s: not a profile file (bad entry %r)" % (path, key))


def same_file(a, b) -> bool:
    """True if paths *a* and *b* name the same existing file."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
