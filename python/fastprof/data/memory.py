"""Memory profiling's data model: what a row allocated.

A ``MemoryRow`` holds what one function (or one caller->callee edge)
allocated: itself, and with the functions it called. ``memory_table``
sums the C profiler's rows (``_memory_rows()`` per heap owner and
``_memory_calls()`` per function and edge, keys already made pstats keys)
into ``{pstats key: MemoryRow}``, each with its ``callers``
(``{caller key: MemoryRow}``), the shape of a pstats dict.
"""

from typing import Dict, Iterable, Optional, Tuple

FuncKey = Tuple[str, int, str]


class MemoryRow:
    """What a row allocated itself, in bytes and blocks.

    - ``allocations``: blocks allocated; ``allocated``: their bytes (the
      sizes asked for, as tracemalloc counts them);
    - ``frees`` / ``freed``: of those, the blocks and bytes freed since,
      by whatever thread;
    - ``net``: what is still alive (``allocated - freed``);
    - ``live_at_peak``: the bytes it had allocated that were alive when the
      process's traced memory was highest (who held the peak);
    - ``allocated_incl``: bytes allocated while its calls ran, callees
      included (outermost calls only, as pstats' cumtime);
    - ``peak``: the largest rise of its thread's live bytes above their
      value when a call started, over any single call, callees included (a
      call that allocates 300 MB and frees it before returning: 300 MB).
    - ``callers`` (function rows only): ``{caller key: MemoryRow}``, the same
      counts for the calls from each caller.
    """

    __slots__ = ("allocations", "allocated", "frees", "freed", "net", "live_at_peak",
                 "allocated_incl", "peak", "callers")

    def __init__(self, allocations=0, allocated=0, frees=0, freed=0, net=0, live_at_peak=0,
                 allocated_incl=0, peak=0):
        self.allocations = allocations
        self.allocated = allocated
        self.frees = frees
        self.freed = freed
        self.net = net
        self.live_at_peak = live_at_peak
        self.allocated_incl = allocated_incl
        self.peak = peak
        self.callers: Optional[Dict[FuncKey, "MemoryRow"]] = None

    def add_call(self, allocated_incl, peak):
        """Adds another thread's (or path's) bytes including callees; the
        peak of one call is the larger."""
        self.allocated_incl += allocated_incl
        self.peak = max(self.peak, peak)

    def add(self, counts):
        """Adds (allocations, allocated, frees, freed, net, live_at_peak)."""
        a, b, c, d, e, f = counts
        self.allocations += a
        self.allocated += b
        self.frees += c
        self.freed += d
        self.net += e
        self.live_at_peak += f

    def __eq__(self, other):
        if not isinstance(other, MemoryRow):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # mutable

    def __repr__(self):
        return ("MemoryRow(allocations=%d, allocated=%d, frees=%d, freed=%d, net=%d, "
                "live_at_peak=%d, allocated_incl=%d, peak=%d)"
                % (self.allocations, self.allocated, self.frees, self.freed, self.net,
                   self.live_at_peak, self.allocated_incl, self.peak))


def memory_table(rows: Iterable[tuple], calls: Iterable[tuple] = ()) -> Dict[FuncKey, MemoryRow]:
    """``{key: MemoryRow}`` of *rows* ``(key, caller key or None, thread,
    allocations, allocated, frees, freed, net, live_at_peak)`` (every row of
    a key summed: threads, call paths, callers; and per caller into its
    ``callers``) and of *calls* ``(key, caller key or None, thread,
    allocated_incl, peak)`` (a function's with no caller, an edge's with
    one). A function that allocated nothing, itself or below, has no row."""
    table: Dict[FuncKey, MemoryRow] = {}

    def row_of(key, caller):
        row = table.get(key)
        if row is None:
            row = table[key] = MemoryRow()
            row.callers = {}
        if caller is None:
            return row
        edge = row.callers.get(caller)
        if edge is None:
            edge = row.callers[caller] = MemoryRow()
        return edge

    for key, caller, _thread, *counts in rows:
        row_of(key, None).add(counts)
        if caller is not None:
            row_of(key, caller).add(counts)
    for key, caller, _thread, allocated_incl, peak in calls:
        row_of(key, caller).add_call(allocated_incl, peak)
    return table


# -- profiles added together (fastprof merge, --subprocesses) ------------------------

def add_row(into: MemoryRow, row: MemoryRow) -> None:
    """Adds *row*'s counts to *into*; the peak of one call is the larger."""
    into.add(tuple(getattr(row, name) for name in FIELDS[:6]))
    into.add_call(row.allocated_incl, row.peak)


def add_counts(into: list, counts) -> None:
    """Adds counts in FIELDS order (a call path's) to the list *into*;
    the peak of one call is the larger, as add_row's."""
    for j, value in enumerate(counts):
        into[j] = max(into[j], value) if FIELDS[j] == "peak" else into[j] + value


def add_table(into: Dict[FuncKey, MemoryRow], table: Dict[FuncKey, MemoryRow], keys=lambda k: k) -> None:
    """Adds a memory table (``{key: MemoryRow}`` with callers) to *into*,
    each key (and caller key) as *keys* names it."""
    for key, row in table.items():
        mine = into.get(keys(key))
        if mine is None:
            mine = into[keys(key)] = MemoryRow()
            mine.callers = {}
        add_row(mine, row)
        for caller, edge in (row.callers or {}).items():
            theirs = mine.callers.setdefault(keys(caller), MemoryRow())
            add_row(theirs, edge)


def add_line_bytes(into: Dict[int, tuple], table: Dict[int, tuple]) -> None:
    """Adds one function's bytes per line (``{lineno: (allocated, net, own
    or None)}``) to *into*'s: own stays None once either side's is."""
    for lineno, (allocated, net, own) in table.items():
        a, n, o = into.get(lineno, (0, 0, 0))
        into[lineno] = (a + allocated, n + net, None if own is None or o is None else o + own)


def add_totals(into: Dict[str, int], totals: Optional[dict]) -> None:
    """Adds a profile's process totals: each count summed, the peaks too
    (the processes' peaks need not have come at once: the sum is the most
    they can have held together)."""
    for name in TOTALS:
        into[name] = into.get(name, 0) + int((totals or {}).get(name, 0))


# -- in the .prof trailer ------------------------------------------------------

# a row's counts in the trailer, in this order
FIELDS = ("allocations", "allocated", "frees", "freed", "net", "live_at_peak", "allocated_incl", "peak")
# the totals kept (memory_totals()), each an int
TOTALS = ("current", "peak", "blocks", "allocations", "lost")


def _counts(row: MemoryRow) -> tuple:
    return tuple(int(getattr(row, name)) for name in FIELDS)


def _row(counts) -> MemoryRow:
    if not (isinstance(counts, tuple) and len(counts) == len(FIELDS)
            and all(isinstance(n, int) for n in counts)):
        raise ValueError("a memory row is not %d integers" % len(FIELDS))
    return MemoryRow(*counts)


def table_to_marshal(table: Dict[FuncKey, MemoryRow], totals: Optional[dict]) -> dict:
    """The trailer's ``memory``: ``{"rows": {key: (counts, {caller key:
    counts})}, "totals": {name: int}}``, counts in FIELDS' order."""
    rows = {tuple(key): (_counts(row), {tuple(c): _counts(edge) for c, edge in (row.callers or {}).items()})
            for key, row in table.items()}
    kept = {name: int(totals[name]) for name in TOTALS if name in (totals or {})}
    return {"rows": rows, "totals": kept}


def table_from_marshal(obj) -> Tuple[Dict[FuncKey, MemoryRow], dict]:
    """``(table, totals)`` from the trailer's ``memory``; ValueError if it
    is not what table_to_marshal writes."""
    if not (isinstance(obj, dict) and isinstance(obj.get("rows"), dict)):
        raise ValueError("memory without rows")
    table: Dict[FuncKey, MemoryRow] = {}
    for key, (counts, callers) in obj["rows"].items():
        row = _row(counts)
        row.callers = {tuple(c): _row(edge) for c, edge in callers.items()}
        table[tuple(key)] = row
    totals = obj.get("totals", {})
    if not isinstance(totals, dict):
        raise ValueError("memory totals are not a dict")
    return table, {name: int(totals[name]) for name in TOTALS if name in totals}


# -- call paths weighed by bytes (the flame graphs of memory) ------------------------

# what a flame graph by bytes can weigh each path by: the memory.FIELDS column
WEIGHTS = {"allocated": "allocated", "held": "live_at_peak", "net": "net"}
# what each weight's bytes are, as the views say it
WEIGHT_TEXT = {"allocated": "bytes allocated", "held": "bytes alive at the process's peak",
               "net": "bytes still alive at the end"}


def weighed_by_bytes(data, weight: str):
    """A copy of *data* (a ProfileData with memory along its call paths)
    whose call-path nodes hold bytes where they held seconds: own, the
    node's *weight* column (WEIGHTS: allocated, held, net), and cumulative,
    its own plus its descendants'. ``weight`` on the copy names it, for the
    writers' units. ValueError if *data* has no memory along call paths."""
    import dataclasses
    if weight not in WEIGHTS:
        raise ValueError("unknown weight %r (%s)" % (weight, ", ".join(["time"] + list(WEIGHTS))))
    cp = data.callpaths
    if cp is None or cp.memory is None:
        raise ValueError("no memory along call paths: profile with --memory --callpaths "
                         "(or Profile(memory=True, callpaths=True))")
    column = FIELDS.index(WEIGHTS[weight])
    own = [max(0, int(counts[column])) for counts in cp.memory]
    cum = list(own)
    for i in range(len(cp.nodes) - 1, -1, -1):  # (parents come before their children)
        parent = cp.nodes[i][0]
        if parent >= 0:
            cum[parent] += cum[i]
    nodes = [(parent, func, calls, float(own[i]), float(cum[i]))
             for i, (parent, func, calls, *_times) in enumerate(cp.nodes)]
    return dataclasses.replace(data, callpaths=type(cp)(cp.functions, nodes, None), weight=weight)
