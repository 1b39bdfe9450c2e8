"""Memory profiling's data model: what a row allocated.

A ``MemoryRow`` holds one function's (or one caller->callee edge's) own
allocations: the blocks it allocated itself, not in the functions it
called. ``memory_table`` sums the C profiler's per-owner rows
(``_memory_rows()``, keys already made pstats keys) into
``{pstats key: MemoryRow}``, each with its ``callers``
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
      process's traced memory was highest (who held the peak).
    - ``callers`` (function rows only): ``{caller key: MemoryRow}``, the same
      counts for the calls from each caller.
    """

    __slots__ = ("allocations", "allocated", "frees", "freed", "net", "live_at_peak", "callers")

    def __init__(self, allocations=0, allocated=0, frees=0, freed=0, net=0, live_at_peak=0):
        self.allocations = allocations
        self.allocated = allocated
        self.frees = frees
        self.freed = freed
        self.net = net
        self.live_at_peak = live_at_peak
        self.callers: Optional[Dict[FuncKey, "MemoryRow"]] = None

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
                "live_at_peak=%d)" % (self.allocations, self.allocated, self.frees, self.freed,
                                      self.net, self.live_at_peak))


def memory_table(rows: Iterable[tuple]) -> Dict[FuncKey, MemoryRow]:
    """``{key: MemoryRow}`` of rows ``(key, caller key or None, thread,
    allocations, allocated, frees, freed, net, live_at_peak)``: every row of
    a key summed (threads, call paths, callers), and per caller into its
    ``callers``."""
    table: Dict[FuncKey, MemoryRow] = {}
    for key, caller, _thread, *counts in rows:
        row = table.get(key)
        if row is None:
            row = table[key] = MemoryRow()
            row.callers = {}
        row.add(counts)
        if caller is not None:
            edge = row.callers.get(caller)
            if edge is None:
                edge = row.callers[caller] = MemoryRow()
            edge.add(counts)
    return table
