"""The memory table: what each function allocated, in human units
(``fastprof view --memory``, ``python -m fastprof --memory``)."""

from dataclasses import dataclass
from typing import Dict, List, Optional

from ..data.memory import MemoryRow
from ..data.model import FuncKey
from ..data.portable_names import portable_names
from .view import format_bytes, function_text, matcher, render_table

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


def _byte_cells(row: MemoryRow) -> List[str]:
    """A row's (or an edge's) six memory cells: allocated, incl, net,
    peak, held, blocks."""
    return [format_bytes(row.allocated), format_bytes(row.allocated_incl), format_bytes(row.net),
            format_bytes(row.peak), format_bytes(row.live_at_peak), "{:,}".format(row.allocations)]


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
        cells.append(_byte_cells(row) + [function_text(key, qualnames)])
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


def memory_edge_tables(rows: Dict[FuncKey, MemoryRow], pattern: str, direction: str,
                       limit: int = 30, qualnames: Optional[Dict[FuncKey, str]] = None) -> List[str]:
    """For each function matching *pattern* (most bytes with callees
    first): its callers or callees with bytes.  An edge's bytes are the
    callee's when called from that caller, as a time edge's are; ``% of
    incl`` is of the function's own allocated-with-callees."""
    match = matcher(pattern, qualnames)
    targets = sorted((key for key in rows if match(key)),
                     key=lambda key: (-rows[key].allocated_incl, str(key)))
    if not targets:
        return ["no function that allocated matches /%s/" % pattern]
    callees: Dict[FuncKey, Dict[FuncKey, MemoryRow]] = {}
    if direction == "callees":
        for key, row in rows.items():
            for caller, edge in (row.callers or {}).items():
                callees.setdefault(caller, {})[key] = edge
    shown = targets if limit <= 0 else targets[:limit]
    lines: List[str] = []
    for key in shown:
        row = rows[key]
        if lines:
            lines.append("")
        lines.append(function_text(key, qualnames))
        lines.append("  allocated %s itself, %s with callees; net %s, peak %s, held %s, %s blocks"
                     % tuple(_byte_cells(row)))
        edges = (row.callers or {}) if direction == "callers" else callees.get(key, {})
        if not edges:
            lines.append("  no callers (a root of the profile)" if direction == "callers"
                         else "  no callees that allocated")
            continue
        cells = []
        for other, edge in sorted(edges.items(),
                                  key=lambda kv: (-kv[1].allocated_incl, -kv[1].allocated, str(kv[0]))):
            share = ("%.0f%%" % (100.0 * edge.allocated_incl / row.allocated_incl)
                     if row.allocated_incl > 0 else "-")
            cells.append([""] + _byte_cells(edge) + [share, function_text(other, qualnames)])
        label = "caller" if direction == "callers" else "callee"
        lines.extend(render_table([" ", "allocated", "incl", "net", "peak", "held", "blocks", "% of incl",
                                   label], cells, "rrrrrrrrl"))
    if len(shown) < len(targets):
        lines.append("")
        lines.append("%d of %d matching functions shown (-n 0 shows all)" % (len(shown), len(targets)))
    return lines


# -- two profiles' bytes compared (fastprof check --memory, fastprof diff) ------------


@dataclass
class MemoryChange:
    name: str
    old: int   # bytes the function allocated itself, before (0: it allocated nothing)
    new: int   # and after


def allocated_bytes(data, qualnames: bool = True) -> Dict[str, int]:
    """{portable name: bytes it allocated itself} of a profile made with
    memory (C functions summed without addresses)."""
    keys = list(data.memory or {})
    names = portable_names(keys, data.qualnames if qualnames else {}, data.paths)
    out: Dict[str, int] = {}
    for key in keys:
        out[names[key]] = out.get(names[key], 0) + int(data.memory[key].allocated)
    return out


def _moved(old: int, new: int, tolerance: float, minimum: int) -> bool:
    return abs(new - old) > max(minimum, old * tolerance / 100.0)


def memory_growth(base, new, tolerance: float, minimum: int, qualnames: bool = True) -> List[MemoryChange]:
    """The functions of both profiles that allocated more than *tolerance*
    percent and *minimum* bytes above their base value, most grown first.
    ValueError when a profile holds no memory stats."""
    for data, which in ((base, "BASE"), (new, "NEW")):
        if data.memory is None:
            raise ValueError("--memory: %s has no memory stats (profile it with python -m "
                             "fastprof --memory or Profile(memory=True))" % which)
    a, b = allocated_bytes(base, qualnames), allocated_bytes(new, qualnames)
    grown = [MemoryChange(name, a[name], b[name]) for name in set(a) & set(b)
             if b[name] > a[name] and _moved(a[name], b[name], tolerance, minimum)]
    grown.sort(key=lambda m: (-(m.new - m.old), m.name))
    return grown


def memory_changes(base, new, tolerance: float = 10.0, minimum: int = 1024) -> List[MemoryChange]:
    """Every function whose own bytes moved by more than *tolerance*
    percent and *minimum* bytes, either way (one that allocated on one side
    only: 0 on the other), the biggest move first."""
    qualnames = bool(base.qualnames) and bool(new.qualnames)
    a, b = allocated_bytes(base, qualnames), allocated_bytes(new, qualnames)
    moved = [MemoryChange(name, a.get(name, 0), b.get(name, 0)) for name in set(a) | set(b)
             if _moved(a.get(name, 0), b.get(name, 0), tolerance, minimum)]
    moved.sort(key=lambda m: (-abs(m.new - m.old), m.name))
    return moved


def _signed_bytes(n: int) -> str:
    return ("+" if n >= 0 else "") + format_bytes(n)


def memory_diff_lines(base, new, base_name: str, new_name: str, limit: int = 20,
                      tolerance: float = 10.0, minimum: int = 1024) -> List[str]:
    """``fastprof diff``'s memory section: the processes' peaks and the
    functions whose own bytes moved (MemoryChange, beyond *tolerance* percent
    and *minimum* bytes); nothing when neither profile has memory stats."""
    if base.memory is None and new.memory is None:
        return []
    if base.memory is None or new.memory is None:
        return ["", "Memory: only %s has memory stats (profiled with --memory): bytes not compared"
                % (new_name if base.memory is None else base_name)]
    peaks = [(data.memory_totals or {}).get("peak", 0) for data in (base, new)]
    out = ["", "Memory: the process's peak %s -> %s (%s)" % (
        format_bytes(peaks[0]), format_bytes(peaks[1]), _signed_bytes(peaks[1] - peaks[0]))]
    moved = memory_changes(base, new, tolerance, minimum)
    rule = "more than %g%% and %s" % (tolerance, format_bytes(minimum))
    if not moved:
        out.append("no function's own bytes moved by %s" % rule)
        return out
    shown = moved if limit <= 0 else moved[:limit]
    cells = [[format_bytes(m.old), format_bytes(m.new), _signed_bytes(m.new - m.old),
              "%+.0f%%" % (100.0 * (m.new - m.old) / m.old) if m.old else "new", m.name] for m in shown]
    out.extend(render_table(["base allocated", "new allocated", "change", "rel", "function"], cells, "rrrrl"))
    out.append("%d of %d functions whose own bytes moved by %s shown, biggest first%s" % (
        len(shown), len(moved), rule, " (-n 0 shows all)" if len(shown) < len(moved) else ""))
    return out
