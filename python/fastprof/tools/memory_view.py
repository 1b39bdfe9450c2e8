"""The memory table: what each function allocated, in human units
(``fastprof view --memory``, ``python -m fastprof --memory``)."""

from typing import Dict, List, Optional

from ..data.memory import MemoryRow
from ..data.model import FuncKey
from .view import function_text, matcher, render_table

# sort key -> (MemoryRow attribute, what the table says it is sorted by)
MEMORY_SORTS = {
    "allocated": "allocated",
    "incl": "allocated_incl",
    "allocated_incl": "allocated_incl",
    "net": "net",
    "peak": "peak",
    "live_at_peak": "live_at_peak",
    "held": "live_at_peak",
    "allocations": "allocations",
    "blocks": "allocations",
    "freed": "freed",
}
DEFAULT_MEMORY_SORT = "allocated"
MEMORY_SORT_NOTE = ("memory sort keys: allocated (default), incl (allocated_incl), net, peak, "
                    "held (live_at_peak), blocks (allocations), freed")

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def format_bytes(n: int) -> str:
    """``512 B``, ``1.5 KiB``, ``80.0 MiB``: three significant digits
    from KiB up; negative for memory a row freed more of than it made."""
    size = float(abs(n))
    unit = 0
    while size >= 1024 and unit < len(_UNITS) - 1:
        size /= 1024
        unit += 1
    sign = "-" if n < 0 else ""
    if unit == 0:
        return "%s%d B" % (sign, int(size))
    return "%s%.*f %s" % (sign, 1 if size < 100 else 0, size, _UNITS[unit])


def totals_line(totals: Optional[dict]) -> str:
    """The header line of a profile with memory: the process's traced bytes."""
    totals = totals or {}
    line = "memory: %s at the peak, %s alive at the end (%s blocks)" % (
        format_bytes(totals.get("peak", 0)), format_bytes(totals.get("current", 0)),
        "{:,}".format(totals.get("blocks", 0)))
    if totals.get("lost"):
        line += "; %s blocks not tracked (out of memory): the bytes are low" % "{:,}".format(totals["lost"])
    return line


def parse_memory_sort(text: str) -> str:
    """The MemoryRow attribute a memory sort key names; ValueError if none."""
    key = text.strip().lower()
    if key not in MEMORY_SORTS:
        raise ValueError("unknown memory sort key %r (%s)" % (text, MEMORY_SORT_NOTE))
    return MEMORY_SORTS[key]


def memory_table(rows: Dict[FuncKey, MemoryRow], sort: str = DEFAULT_MEMORY_SORT, limit: int = 30,
                 pattern: Optional[str] = None,
                 qualnames: Optional[Dict[FuncKey, str]] = None) -> List[str]:
    """The functions' rows sorted by the memory column *sort* (largest
    first), the first *limit* (0: all), those matching *pattern*."""
    column = parse_memory_sort(sort)
    match = matcher(pattern, qualnames)
    ordered = sorted((key for key in rows if match(key)),
                     key=lambda key: (-getattr(rows[key], column), str(key)))
    shown = ordered if limit <= 0 else ordered[:limit]
    cells = []
    for key in shown:
        row = rows[key]
        cells.append([format_bytes(row.allocated), format_bytes(row.allocated_incl),
                      format_bytes(row.net), format_bytes(row.peak), format_bytes(row.live_at_peak),
                      "{:,}".format(row.allocations), function_text(key, qualnames)])
    lines = render_table(["allocated", "incl", "net", "peak", "held", "blocks", "function"],
                         cells, "rrrrrrl")
    what = "sorted by %s" % column
    if pattern:
        what += ", matching /%s/" % pattern
    lines.append("")
    lines.append("allocated: bytes it allocated itself; incl: with its callees; net: of those, "
                 "alive at the end; peak: the most one call rose above its start; held: of its "
                 "bytes, alive at the process's peak")
    if len(shown) < len(ordered):
        lines.append("%d of %d functions shown (%s; -n 0 shows all)" % (len(shown), len(ordered), what))
    else:
        lines.append("%d functions shown (%s)" % (len(shown), what))
    return lines
