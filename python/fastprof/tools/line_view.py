"""The line-level listing: a function's source with each line's hits, time,
own time (where known), time per hit and share of the function, the
hottest lines marked, and with memory each line's bytes
(``fastprof view FILE --lines [NAME]``, ``python -m fastprof --lines``)."""

from typing import Dict, List, Mapping, Optional, Tuple

from ..data import line_sources
from ..data.names import func_label
from ..data.profile_file import FuncKey
from .view import format_bytes, format_count, format_time

LineTable = Dict[int, Tuple[int, float]]
# a line's bytes: allocated (callees included), net, own allocated or None
LineBytes = Tuple[int, int, Optional[int]]

# the lines with the most time get this mark, as many as HOTTEST
HOT_MARK = ">>"
HOTTEST = 3


def function_total(table: LineTable, cumtime: Optional[float] = None) -> float:
    """What a line's percent is of: the function's cumtime when known, else
    the sum of its line times."""
    return cumtime if cumtime else sum(t for _h, t in table.values())


def hottest(table: LineTable) -> List[int]:
    """The HOTTEST lines with the most time (none without time), hottest first."""
    return sorted((ln for ln, (_h, t) in table.items() if t > 0),
                  key=lambda ln: (-table[ln][1], ln))[:HOTTEST]


def function_listing(key: FuncKey, table: LineTable, cumtime: Optional[float] = None,
                     qualname: Optional[str] = None, micro: str = "\u00b5",
                     own: Optional[Dict[int, float]] = None,
                     sources: Optional[Mapping[str, Mapping[int, str]]] = None,
                     memory: Optional[Dict[int, LineBytes]] = None) -> List[str]:
    """The listing of one function.  The percentages are of *cumtime* (the
    function's cumtime from the pstats table) when known, else of the sum of
    its line times.  *own*: each line's own time, a column when given.
    *sources*: the lines' text as stored in the file (else read now).
    *memory*: each line's ``(allocated, net, own allocated or None)``:
    columns Alloc, Net and (where every line's is known) Own alloc."""
    getline, _known = line_sources.line_getter(sources or {})
    total = function_total(table, cumtime)
    hot = hottest(table)
    title = func_label(key, qualnames={key: qualname} if qualname else None)
    out = [title,
           "total %s, %s line hits" % (format_time(total, micro),
                                        format_count(sum(h for h, _t in table.values())))]
    headers = ["Line", "Hits", "Time"] + (["Own"] if own is not None else []) + ["Per hit", "% func"]
    if memory is not None:
        headers += ["Alloc", "Net"]
        if all(b[2] is not None for b in memory.values()):
            headers.append("Own alloc")
    headers += ["", "Source"]
    rows = []
    source_seen = False
    for lineno in line_sources.listed_lines(key, table):
        text = getline(key[0], lineno)
        source_seen = source_seen or bool(text)
        cells = {"Line": str(lineno), "": "", "Source": text}
        if lineno in table:
            hits, seconds = table[lineno]
            cells.update({"Hits": format_count(hits) if hits else "",
                          "Time": format_time(seconds, micro),
                          "Own": format_time(own.get(lineno, 0.0), micro) if own is not None else "",
                          "Per hit": format_time(seconds / hits, micro) if hits else "",
                          "% func": "%.1f" % (100.0 * seconds / total) if total else "",
                          "": HOT_MARK if lineno in hot else ""})
            if memory is not None:
                allocated, net, own_bytes = memory.get(lineno, (0, 0, 0))
                cells.update({"Alloc": format_bytes(allocated) if allocated else "",
                              "Net": format_bytes(net) if net else "",
                              "Own alloc": format_bytes(own_bytes) if own_bytes else ""})
        rows.append(tuple(cells.get(h, "") for h in headers))
    headers = tuple(headers)
    n = len(headers) - 2  # the number columns, then the mark and the source
    widths = [max(len(r[i]) for r in rows + [headers]) for i in range(n)]

    def fmt(r):
        cells = [c.rjust(w) for c, w in zip(r[:n], widths)]
        return "  ".join(cells + [r[n].ljust(2), r[n + 1]]).rstrip()
    out.append(fmt(headers))
    out.extend(fmt(r) for r in rows)
    if not source_seen:
        out.append("(source of %s not found)" % key[0])
    rest = call_share(table, cumtime)
    if rest is not None:
        out.append("the other %.1f%% of the function's time is its call: entering and "
                   "leaving it, which no line is charged with" % rest)
    return out


def call_share(table: LineTable, cumtime: Optional[float]) -> Optional[float]:
    """For a function with one line (``def f(): return x``): the percent of
    its cumtime not in that line, the call's own cost; None otherwise, or
    when that is under half a percent."""
    if not cumtime or len(table) != 1:
        return None
    (_hits, seconds), = table.values()
    rest = 100.0 * (cumtime - seconds) / cumtime
    return rest if rest >= 0.5 else None


def listings(lines: Dict[FuncKey, LineTable], stats: Optional[dict] = None,
             qualnames: Optional[Dict[FuncKey, str]] = None, match=None,
             micro: str = "\u00b5", own: Optional[Dict[FuncKey, Dict[int, float]]] = None,
             sources: Optional[Mapping[str, Mapping[int, str]]] = None,
             memory: Optional[Dict[FuncKey, Dict[int, LineBytes]]] = None) -> List[str]:
    """The listings of every function in *lines* that *match* accepts, the
    one with the most time first; an Own column for those in *own*, bytes
    columns for those in *memory*."""
    own = own or {}
    memory = memory or {}
    stats = stats or {}
    qualnames = qualnames or {}

    def weight(key):
        if key in stats:
            return stats[key][3]
        return sum(t for _h, t in lines[key].values())

    out: List[str] = []
    for key in sorted(lines, key=lambda k: -weight(k)):
        if match is not None and not match(key):
            continue
        if out:
            out.append("")
        cum = stats[key][3] if key in stats else None
        out.extend(function_listing(key, lines[key], cum, qualnames.get(key), micro, own.get(key),
                                    sources, memory.get(key)))
    return out
