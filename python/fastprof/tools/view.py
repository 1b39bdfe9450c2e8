"""``fastprof view``: a profile as an aligned table with human units.

Reads any cProfile or fastprof ``.prof`` file.  Times are shown as
ns / µs / ms / s with three significant digits, each with its percent of
the total profiled time (the sum of all tottimes, what pstats calls
"total time").
"""

import re
import sys
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, TextIO, Tuple

from ..data import cost_note
from ..data.arguments import check_percent
from ..data.calltree import build_tree
from ..data.memory import WEIGHT_TEXT, add_table
from ..data.model import is_builtin
from ..data.names import func_label, readable_name, short_path, stdname
from ..data.profile_file import FuncKey, ProfileData
from ..data.thread_groups import group_threads, merged_thread_stats, thread_count, thread_group

# ---------------------------------------------------------------- units


def micro_sign(stream: Optional[TextIO] = None) -> str:
    """'µ' if *stream* can print it, else 'u'."""
    encoding = getattr(stream if stream is not None else sys.stdout, "encoding", None) or "ascii"
    try:
        "\u00b5".encode(encoding)
        return "\u00b5"
    except (UnicodeEncodeError, LookupError):
        return "u"


def format_time(seconds: float, micro: str = "\u00b5") -> str:
    """Three significant digits in ns, µs, ms or s: ``'12.3 ms'``."""
    if seconds != seconds:  # NaN
        return "?"
    neg = seconds < 0
    s = -seconds if neg else seconds
    if s == 0:
        text = "0 s"
    else:
        if s < 1e-6:
            v, unit = s * 1e9, "ns"
        elif s < 1e-3:
            v, unit = s * 1e6, micro + "s"
        elif s < 1.0:
            v, unit = s * 1e3, "ms"
        else:
            v, unit = s, "s"
        # rounding may carry into the next unit: 999.96 µs -> 1.00 ms
        if round(v, _digits(v)) >= 1000 and unit != "s":
            nxt = {"ns": micro + "s", micro + "s": "ms", "ms": "s"}
            v, unit = v / 1000, nxt[unit]
        text = "%.*f %s" % (_digits(v), v, unit)
    return "-" + text if neg else text


def _digits(v: float) -> int:
    v = abs(v)
    if v >= 99.95:
        return 0
    if v >= 9.995:
        return 1
    return 2


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


def format_percent(part: float, total: float) -> str:
    if total <= 0:
        return "-"
    p = 100.0 * part / total
    if p == 0:
        return "0%"
    if abs(p) < 0.01:
        return "<0.01%" if p > 0 else ">-0.01%"
    return "%.*f%%" % (1 if abs(p) >= 9.95 else 2, p)


def format_count(n) -> str:
    return "{:,}".format(int(n))


def format_calls(cc, nc) -> str:
    """``nc`` or ``nc/cc`` when some calls were recursive, as pstats prints."""
    return format_count(nc) if nc == cc else "%s/%s" % (format_count(nc), format_count(cc))


# ---------------------------------------------------------------- sorting

# name -> (key function on (key, cc, nc, tt, ct), descending?)
_SORTS: Dict[str, Tuple[Callable, bool]] = {
    "tottime": (lambda r: r[3], True),
    "cumtime": (lambda r: r[4], True),
    "calls": (lambda r: r[2], True),
    "pcalls": (lambda r: r[1], True),
    "percall": (lambda r: r[3] / r[2] if r[2] else 0.0, True),
    "cumpercall": (lambda r: r[4] / r[1] if r[1] else 0.0, True),
    "name": (lambda r: (r[0][2], str(r[0][0]), r[0][1]), False),
    "file": (lambda r: (str(r[0][0]), r[0][1], r[0][2]), False),
    "line": (lambda r: (r[0][1], str(r[0][0]), r[0][2]), False),
}
_SORT_ALIASES = {
    "time": "tottime", "tt": "tottime", "self": "tottime",
    "cumulative": "cumtime", "cum": "cumtime", "ct": "cumtime",
    "ncalls": "calls", "filename": "file", "module": "file", "nfl": "file", "stdname": "file",
    "primitive": "pcalls",
}
SORT_CHOICES = tuple(_SORTS)


def parse_sort(text: str) -> str:
    """Normalise a sort name (pstats' names work too); ValueError if unknown."""
    name = _SORT_ALIASES.get(text.lower(), text.lower())
    if name not in _SORTS:
        raise ValueError("unknown sort %r; use one of: %s" % (text, ", ".join(SORT_CHOICES)))
    return name


def sorted_rows(stats: Dict[FuncKey, tuple], sort: str = "tottime") -> List[tuple]:
    """``(key, cc, nc, tt, ct)`` rows, sorted; ties broken by file, line, name."""
    keyfn, desc = _SORTS[parse_sort(sort)]
    rows = [(k, v[0], v[1], v[2], v[3]) for k, v in stats.items()]
    rows.sort(key=lambda r: (str(r[0][0]), r[0][1], str(r[0][2])))
    rows.sort(key=keyfn, reverse=desc)
    return rows


def matcher(pattern: Optional[str], qualnames: Optional[Dict[FuncKey, str]] = None
            ) -> Callable[[FuncKey], bool]:
    """A test of functions against a regex searched in ``name``, the
    qualified name (``Node.__init__``) and ``file:line(name)``."""
    if not pattern:
        return lambda key: True
    rx = re.compile(pattern)
    return lambda key: bool(rx.search(str(key[2])) or rx.search(stdname(key))
                            or (qualnames is not None and key in qualnames
                                and rx.search(qualnames[key])))


# ---------------------------------------------------------------- table output

def render_table(headers: Sequence[str], rows: Iterable[Sequence[str]], align: str) -> List[str]:
    """Columns padded to their widest cell; *align* has one 'l' or 'r' per column.

    The last column is never padded (it is the function name, often long).
    """
    rows = [list(r) for r in rows]
    widths = [len(h) for h in headers]
    for r in rows:
        for i, cell in enumerate(r):
            widths[i] = max(widths[i], len(cell))
    out = []
    for r in [list(headers)] + rows:
        cells = []
        for i, cell in enumerate(r):
            if i == len(r) - 1:
                cells.append(cell)
            elif align[i] == "r":
                cells.append(cell.rjust(widths[i]))
            else:
                cells.append(cell.ljust(widths[i]))
        out.append("  ".join(cells).rstrip())
    return out


def function_text(key: FuncKey, qualnames: Optional[Dict[FuncKey, str]] = None) -> str:
    """``name  file:line`` (file shortened; the qualified name if known), or
    the C function's name (without an address)."""
    if is_builtin(key):
        return readable_name(key)
    return "%s  %s:%s" % (readable_name(key, qualnames), short_path(str(key[0])), key[1])


def overlapping(ct: float, total: float) -> bool:
    """True if a cumulative time exceeds the whole profile's total: it sums
    activations that ran at the same time (concurrent coroutines timed in
    coroutine wall mode, or the same function in several threads), so a
    percent of the total means nothing."""
    return total > 0 and ct > total * (1 + 1e-9)


def cumtime_cells(ct: float, total: float, micro: str) -> List[str]:
    """[cumtime, percent]: an overlapping sum is marked "*" and gets no percent."""
    if overlapping(ct, total):
        return [format_time(ct, micro) + "*", "-"]
    return [format_time(ct, micro), format_percent(ct, total)]


def concurrency_recorded(data) -> bool:
    """Whether the file (a ProfileData) says activations could overlap in
    time: threads recorded, or coroutines timed start to end."""
    return bool(data.threads) or data.coroutines == "wall"


def _ratio(x: float) -> str:
    return "%.1f" % x if x < 10 else "%.0f" % x


def overlap_note(stats: Dict[FuncKey, tuple], total: float, concurrent: bool = True) -> List[str]:
    """The footnote that explains "*" cumtimes, if any row has one;
    *concurrent*: the file says threads or wall-timed coroutines were
    recorded (else the footnote does not guess why)."""
    worst = max((v[3] for v in stats.values()), default=0.0)
    if not overlapping(worst, total):
        return []
    if not concurrent:
        return ["* cumtime above the total time of the profile (as the file has them): "
                "up to %s\u00d7 the total, so no percent is shown" % _ratio(worst / total)]
    return ["* cumtime summed over activations that overlapped in time (concurrent coroutines, "
            "or threads): up to %s\u00d7 the total, so no percent is shown" % _ratio(worst / total)]


def totals(stats: Dict[FuncKey, tuple]) -> Tuple[float, int, int]:
    """(total tottime, all calls, primitive calls)."""
    return (sum(v[2] for v in stats.values()), sum(int(v[1]) for v in stats.values()),
            sum(int(v[0]) for v in stats.values()))


def summary_line(name: str, stats: Dict[FuncKey, tuple], micro: str = "\u00b5",
                 threads: int = 1, clock: Optional[str] = None) -> str:
    """*threads*: how many threads' times the stats sum; with several and a
    wall clock the total is thread-seconds, and the line says so."""
    total, calls, pcalls = totals(stats)
    what = format_time(total, micro)
    if threads > 1:
        what += (" (CPU time of %s threads)" if clock == "cpu" else
                 " (thread-seconds: wall time summed over %s threads)") % format_count(threads)
    text = "%s: total profiled time %s, %s functions, %s calls" % (
        name, what, format_count(len(stats)), format_count(calls))
    if pcalls != calls:
        text += " (%s primitive)" % format_count(pcalls)
    return text


def function_table(stats: Dict[FuncKey, tuple], sort: str = "tottime", limit: int = 30,
                   pattern: Optional[str] = None, micro: str = "\u00b5",
                   qualnames: Optional[Dict[FuncKey, str]] = None, concurrent: bool = True) -> List[str]:
    total = totals(stats)[0]
    match = matcher(pattern, qualnames)
    rows = [r for r in sorted_rows(stats, sort) if match(r[0])]
    shown = rows if limit <= 0 else rows[:limit]
    cells = []
    for key, cc, nc, tt, ct in shown:
        cells.append([
            format_time(tt, micro), format_percent(tt, total),
        ] + cumtime_cells(ct, total, micro) + [
            format_calls(cc, nc),
            format_time(tt / nc if nc else 0.0, micro),
            format_time(ct / cc if cc else 0.0, micro),
            function_text(key, qualnames),
        ])
    lines = render_table(["tottime", "%", "cumtime", "%", "calls", "tot/call", "cum/call", "function"],
                         cells, "rrrrrrrl")
    what = "sorted by %s" % parse_sort(sort)
    if pattern:
        what += ", matching /%s/" % pattern
    lines.append("")
    lines.extend(overlap_note(dict((r[0], stats[r[0]]) for r in shown), total, concurrent))
    if len(shown) < len(rows):
        lines.append("%d of %d functions shown (%s; -n 0 shows all)" % (len(shown), len(rows), what))
    else:
        lines.append("%d functions shown (%s)" % (len(shown), what))
    return lines


def _callees_of(stats: Dict[FuncKey, tuple]) -> Dict[FuncKey, Dict[FuncKey, tuple]]:
    callees: Dict[FuncKey, Dict[FuncKey, tuple]] = {}
    for key, value in stats.items():
        for caller, edge in value[4].items():
            callees.setdefault(caller, {})[key] = edge
    return callees


def edge_tables(stats: Dict[FuncKey, tuple], pattern: str, direction: str,
                micro: str = "\u00b5", limit: int = 30,
                qualnames: Optional[Dict[FuncKey, str]] = None, concurrent: bool = True) -> List[str]:
    """For each function matching *pattern*: its callers or callees, with edge times.

    An edge's numbers are those of the callee when called from that caller
    (calls, tottime, cumtime), as pstats' print_callers/print_callees show.
    """
    total = totals(stats)[0]
    match = matcher(pattern, qualnames)
    targets = [r for r in sorted_rows(stats, "cumtime") if match(r[0])]
    if not targets:
        return ["no function matches /%s/" % pattern]
    callees = _callees_of(stats) if direction == "callees" else None
    lines: List[str] = []
    shown = targets if limit <= 0 else targets[:limit]
    for key, cc, nc, tt, ct in shown:
        if lines:
            lines.append("")
        lines.append("%s  (%s)" % (function_text(key, qualnames), stdname(key)) if not is_builtin(key)
                     else function_text(key))
        lines.append("  calls %s, tottime %s (%s), cumtime %s (%s)" % ((
            format_calls(cc, nc), format_time(tt, micro), format_percent(tt, total))
            + tuple(cumtime_cells(ct, total, micro))))
        edges = stats[key][4] if direction == "callers" else callees.get(key, {})
        if not edges:
            lines.append("  no %s%s" % (direction, " (a root of the profile)" if direction == "callers" else ""))
            continue
        rows = sorted(edges.items(), key=lambda kv: (-kv[1][3], -kv[1][0], str(kv[0])))
        cells = []
        for other, (e_nc, e_cc, e_tt, e_ct) in rows:
            cells.append(["", format_calls(e_cc, e_nc), format_time(e_tt, micro), format_time(e_ct, micro),
                          format_percent(e_ct, ct) if ct > 0 else "-", function_text(other, qualnames)])
        label = "caller" if direction == "callers" else "callee"
        share = "% of cum"
        lines.extend(render_table([" ", "calls", "tottime", "cumtime", share, label], cells, "rrrrrl"))
        lines.extend(("  " + n) for n in overlap_note({key: stats[key]}, total, concurrent))
    if len(shown) < len(targets):
        lines.append("")
        lines.append("%d of %d matching functions shown (-n 0 shows all)" % (len(shown), len(targets)))
    return lines


def tree_lines(data: ProfileData, min_percent: float = 1.0, micro: str = "\u00b5",
               max_depth: int = 0, limit: int = 0) -> List[str]:
    """The call paths as an indented tree: total, percent, self, calls, function.

    Percentages are of the profile's total time (the sum of all tottimes, as
    in the table).  Paths below *min_percent* of it are folded into one
    "... N more" line per parent (left out when even together they stay
    below it).  A profile weighed by bytes (``data.weight``,
    memory.weighed_by_bytes) shows bytes, as percentages of all its paths'.
    """
    min_percent = check_percent("min_percent", min_percent)
    tree = build_tree(data)
    totals_ = tree.totals()
    if data.weight:
        def amount(n):
            return format_bytes(int(n))
        grand = tree.total_time()
        lines = ["(%s, along each call path)" % WEIGHT_TEXT[data.weight]]
    else:
        def amount(t):
            return format_time(t, micro)
        grand = totals(data.stats)[0] if data.stats else tree.total_time()
        lines = []
    if not tree.exact:
        lines.append("(no call paths in this profile: tree estimated from the caller graph;")
        lines.append(" record exact paths with fastprof's callpaths=True / --callpaths)")
    tree_total = tree.total_time()
    if not data.weight and grand > 0 and abs(tree_total - grand) > 1e-3 * grand:
        lines.append("(the call paths add up to %s, the functions' own times to %s; percentages are of the latter)"
                     % (format_time(tree_total, micro), format_time(grand, micro)))
    cells = []
    threshold = grand * min_percent / 100.0
    stack: list = []

    def push_children(node, kids, depth):
        kids = sorted(kids, key=lambda c: -totals_[c])
        big = [c for c in kids if totals_[c] >= threshold]
        small = [c for c in kids if totals_[c] < threshold]
        count = len(small)
        folded = sum(totals_[c] for c in small)
        if node >= 0:  # paths the tree itself cut (estimated trees, --min-percent of exports)
            count += tree.folded_count[node]
            folded += tree.folded[node]
        if count and folded >= threshold and folded > 0:  # smaller folds are noise: leave them out
            stack.append((("...", count, folded), depth))
        for c in reversed(big):
            stack.append((c, depth))

    push_children(-1, tree.roots, 0)
    while stack:
        n, depth = stack.pop()
        if isinstance(n, tuple):  # folded small children: ("...", count, time)
            _tag, count, t = n
            cells.append([amount(t), format_percent(t, grand), "", "",
                          "  " * depth + "... %d more below %.3g%%" % (
                              count, max(min_percent, 100 * tree.min_fraction))])
            continue
        key = tree.functions[tree.func[n]]
        cells.append([amount(totals_[n]), format_percent(totals_[n], grand),
                      amount(tree.self_time[n]), format_count(round(tree.calls[n])),
                      "  " * depth + func_label(key)])
        if max_depth and depth + 1 >= max_depth:
            continue
        push_children(n, tree.children[n], depth + 1)
    shown = cells if limit <= 0 else cells[:limit]
    lines.extend(render_table(["total", "%", "self", "calls", "call path"], shown, "rrrrl"))
    if len(shown) < len(cells):
        lines.append("")
        lines.append("%d of %d lines shown (-n 0 shows all)" % (len(shown), len(cells)))
    return lines


def select_stats(data: ProfileData, thread: Optional[str]) -> Tuple[Dict[FuncKey, tuple], str]:
    """The stats of the whole profile, or of one thread (by id or name), or
    of a group of threads (by the pattern ``threads_line`` shows, e.g.
    ``Thread-N (process_request_thread)``: their stats summed)."""
    if thread is None:
        return data.stats, ""
    records, what = _thread_records(data, thread)
    return (records[0]["stats"] if len(records) == 1 else merged_thread_stats(records)), what


def select_memory(data: ProfileData, thread: str) -> Tuple[Dict[FuncKey, Any], str]:
    """The memory table (``{key: MemoryRow}``) of one thread or group of
    threads, as select_stats picks them; ValueError when the profile keeps
    no memory per thread."""
    records, what = _thread_records(data, thread)
    if any("memory" not in t for t in records):
        raise ValueError("this profile keeps no memory per thread (an older fastprof wrote it): "
                         "leave out --thread")
    if len(records) == 1:
        return records[0]["memory"], what
    table: Dict[FuncKey, Any] = {}
    for t in records:
        add_table(table, t["memory"])
    return table, what


def _thread_records(data: ProfileData, thread: str) -> Tuple[List[dict], str]:
    for t in data.threads:
        if str(t.get("id")) == thread or t.get("name") == thread:
            return [t], "thread %s (id %s)" % (t.get("name"), t.get("id"))
    group = [t for t in data.threads if thread_group(t) == thread]
    if group:
        return group, "%s threads %s" % (format_count(sum(thread_count(t) for t in group)), thread)
    known = ", ".join("%s (%s)" % (t.get("id"), t.get("name")) for t in data.threads[:10])
    if len(data.threads) > 10:
        known += ", ... (%d in all)" % len(data.threads)
    raise ValueError("no thread %r in this profile; %s" % (
        thread, "threads: " + known if known else "it has no per-thread stats"))


def threads_selected(data: ProfileData, thread: Optional[str]) -> int:
    """How many threads' times the stats ``select_stats`` returns sum."""
    if thread is None:
        return max(1, sum(thread_count(t) for t in data.threads))
    for t in data.threads:
        if str(t.get("id")) == thread or t.get("name") == thread:
            return thread_count(t)
    return sum(thread_count(t) for t in data.threads if thread_group(t) == thread)


def threads_line(data: ProfileData, most: int = 5) -> Optional[str]:
    """One line about the recorded threads: the *most* busiest groups
    (threads whose names differ only in numbers), then how many more."""
    if sum(thread_count(t) for t in data.threads) <= 1:
        return None
    groups = group_threads(data.threads)
    parts = []
    for pattern, members in groups[:most]:
        count = sum(thread_count(t) for t in members)
        if count == 1:
            parts.append("%s=%s" % (members[0].get("id"), members[0].get("name")))
        else:
            parts.append("%s\u00d7 %s" % (format_count(count), pattern))
    if len(groups) > most:
        parts.append("%d more groups" % (len(groups) - most))
    return "%s threads recorded (--thread ID, NAME or group for one): %s" % (
        format_count(sum(thread_count(t) for t in data.threads)), ", ".join(parts))


# C functions in which a thread waits rather than computes (cProfile's names)
_WAITING = re.compile(
    r"'(acquire|acquire_lock|wait)' of '_thread\.|time\.sleep>|select\.(select|poll|epoll)>"
    r"|'(poll|select|control)' of 'select\.|"
    r"'(accept|_accept|recv|recv_into|recvfrom|recvfrom_into)' of '_socket\.socket'"
    r"|posix\.(waitpid|wait|wait4|waitid)>|'get' of '_queue\.SimpleQueue'")
WAITING_SHARE = 0.5


def scope_note(patterns: Sequence[str]) -> str:
    """What a profile scoped to *patterns* (``--only``) leaves out."""
    return ("Only %s: calls into other Python code are not recorded; their time "
            "is in the calling function's own time" % ", ".join(patterns))


FAST_NOTE = ("Fast mode: Python functions only; the time of C functions "
             "(builtins, methods of C types) is in their callers' own time")


def mode_notes(data: ProfileData) -> List[str]:
    """One line for each way *data* was recorded that leaves something out
    (``--only``, ``--fast``), so a reader of the file knows, and whether the
    profiler's own cost is in the times (cost_note.py)."""
    notes = [scope_note(data.only)] if data.only is not None else []
    if data.fast:
        notes.append(FAST_NOTE)
    if data.request is not None:
        notes[:0] = [request_line(data.request)] + request_hint(data.request, data.clock)
    cost = cost_note.note(data.compensation)
    if cost:
        notes.append(cost)
    return notes


def request_line(request) -> str:
    """The web request a profile is of (fastprof.middleware), one line:
    'Request: GET /items/3 -> 200 in 12.5 ms: 11.9 ms in recorded frames,
    10.2 ms CPU' (and, for a request in an asyncio task, how long the task
    was suspended; files of older versions: the duration only)."""
    status = request.get("status") or "no response"
    line = "Request: %s %s -> %s in %s" % (request.get("method", "?"), request.get("path", "?"),
                                           status, format_time(float(request.get("duration", 0.0))))
    parts = []
    if request.get("recorded") is not None:
        parts.append("%s in recorded frames" % format_time(float(request["recorded"])))
    if request.get("cpu") is not None:
        parts.append("%s CPU" % format_time(float(request["cpu"])))
    if request.get("suspended") is not None:
        parts.append("suspended %s" % format_time(float(request["suspended"])))
    return line + (": " + ", ".join(parts) if parts else "")


# a request's time is worth a word when the part explained is below this share
REQUEST_SHARE = 0.5


def request_hint(request, clock: Optional[str] = None) -> List[str]:
    """One line saying where most of a request's time went, when its
    recorded frames or its CPU time do not hold most of it (a task
    suspended, threads off the CPU, time outside the recorded frames);
    else none. *clock*: the profile's (its frames' times are wall time
    unless it is "cpu" or "custom")."""
    wall = float(request.get("duration") or 0.0)
    if wall <= 0.0:
        return []
    suspended = request.get("suspended")
    if suspended is not None and float(suspended) >= REQUEST_SHARE * wall:
        return ["Its task was suspended %s of its time (awaiting I/O, a timer or worker "
                "threads, or the event loop running other tasks): in no frame below"
                % format_percent(float(suspended), wall)]
    recorded = request.get("recorded") if clock not in ("cpu", "custom") else None
    outside = recorded is not None and float(recorded) < REQUEST_SHARE * wall
    cpu = request.get("cpu")
    if cpu is not None and float(cpu) < REQUEST_SHARE * wall:
        share = format_percent(float(cpu), wall)
        if outside:
            return ["Its threads were on the CPU %s of its time and its recorded frames hold "
                    "%s: it mostly waited outside them (for the GIL while other threads ran, "
                    "a lock, or I/O)" % (share, format_percent(float(recorded), wall))]
        return ["Its threads were on the CPU %s of its time: the times below are mostly "
                "waiting (I/O, a sleep, a lock, or the GIL while other threads ran)" % share]
    if outside:
        return ["Its recorded frames hold %s of its time: the rest ran outside them (the "
                "server's or the middleware's own code, or code the profile leaves out)"
                % format_percent(float(recorded), wall)]
    return []


def waiting_time(stats: Dict[FuncKey, tuple]) -> float:
    """The tottime of the known blocking C functions (lock acquire, sleep,
    select/poll, socket accept/recv, waitpid, queue get)."""
    return sum(v[2] for k, v in stats.items() if is_builtin(k) and _WAITING.search(str(k[2])))


def clock_hint(stats: Dict[FuncKey, tuple], clock: Optional[str]) -> Optional[str]:
    """A suggestion to profile CPU time, when a wall-clock profile is mostly
    waiting: at least WAITING_SHARE of the total in blocking calls."""
    if clock in ("cpu", "custom"):
        return None
    total = totals(stats)[0]
    waiting = waiting_time(stats)
    if total <= 0 or waiting < WAITING_SHARE * total:
        return None
    return ("%s of the time is waiting (locks, sleep, select, sockets): "
            "profile with --clock cpu to see where the CPU time goes" % format_percent(waiting, total))
