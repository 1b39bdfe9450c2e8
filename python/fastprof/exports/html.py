"""One self-contained HTML report: no network fetch, no CDN, works offline.

The page (template, CSS and JavaScript in ``fastprof/report_assets/``) is filled in
with the profile as one JSON blob:

- the function table (calls, tottime, cumtime, per call, percent), sortable
  and filterable;
- with several threads, a selector: all threads, each thread, or (when
  there are many) groups of threads whose names differ only in numbers;
- callers and callees of the selected function, each a link;
- an icicle flame graph of the call paths (click a frame to zoom, click the
  root to reset); exact for fastprof files with call paths, estimated from
  the caller graph for plain cProfile files and for a single thread, and
  labelled so; paths below the export's ``min_percent`` are folded into
  their callers (and the page says so); each chain of the import system's
  frames is one frame (``_fold_imports.py``), so nested imports do not make
  it tall;
- the source of the selected function, read when the report is written
  (when the file is readable then), at most ``MAX_SOURCE_LINES`` lines per
  function and ``MAX_SOURCE_BYTES`` in all, the most expensive functions
  first;
- for functions with line stats (``--lines``), that source line by line:
  hits, time, percent of the function and a bar of it, the hottest lines
  marked (line numbers and stats only when the file is not readable);
- for a profile made with memory (``--memory``): the process's traced
  bytes in the header and a memory table (bytes each function allocated,
  with callees, still alive, the peak of one call, held at the process's
  peak); with call paths too, the flame graph by bytes allocated or held
  at the peak (a selector beside it).
"""

import datetime
import html
import inspect
import json
import linecache
import pkgutil
import re
from typing import Dict, List, Optional, TextIO, Tuple

from ..data import cost_note, line_sources
from ..data.calltree import MIN_ESTIMATED_FRACTION, CallTree, build_tree, tree_from_callers
from ..data.memory import add_table, weighed_by_bytes
from ..data.model import is_builtin
from ..data.names import readable_name, short_path
from ..data.profile_file import FuncKey, ProfileData
from ..tools.line_view import function_total, hottest
from ._fold_imports import fold_import_frames

MAX_SOURCE_LINES = 300
MAX_SOURCE_BYTES = 1024 * 1024
# no source for functions below this fraction of the total cumulative time
MIN_SOURCE_FRACTION = 1e-4


# the page's template, CSS and JavaScript: package data (setup.py ships every
# non-Python file under python/fastprof)
ASSETS = "report_assets"


def _asset(name: str) -> str:
    raw = pkgutil.get_data("fastprof", ASSETS + "/" + name)
    if raw is None:  # pragma: no cover - a loader without get_data
        raise FileNotFoundError("fastprof/%s/%s" % (ASSETS, name))
    return raw.decode("utf-8")


def _num(x):
    """JSON-friendly number: ints stay ints, floats keep ~9 significant digits."""
    if isinstance(x, int):
        return x
    x = float(x)
    if x != x or x in (float("inf"), float("-inf")):
        return 0
    return float("%.9g" % x)


def _source_block(key: FuncKey) -> Optional[Dict]:
    filename, first, name = key
    if is_builtin(key) or not isinstance(first, int) or not filename or filename.startswith("<"):
        return None
    lines = linecache.getlines(filename)
    if not lines:
        return None
    start = max(first, 1)
    if start > len(lines):
        return None
    if name == "<module>":
        block = lines[start - 1:start - 1 + MAX_SOURCE_LINES]
    else:
        try:
            block = inspect.getblock(lines[start - 1:])
        except Exception:  # tokenizer errors on odd code: show the first line
            block = lines[start - 1:start]
        block = block[:MAX_SOURCE_LINES]
    if not block:
        return None
    return {"start": start, "lines": [ln.rstrip("\r\n") for ln in block],
            "truncated": len(block) >= MAX_SOURCE_LINES}


def _line_block(key: FuncKey, table: Dict[int, Tuple[int, float]], cumtime: Optional[float],
                own: Optional[Dict[int, float]] = None,
                sources: Optional[Dict[str, Dict[int, str]]] = None,
                memory: Optional[Dict[int, Tuple[int, int, Optional[int]]]] = None) -> Dict:
    """A function's line stats for the page: one row per line from its first
    to its last line with stats, ``[lineno, hits, seconds, text, own]``
    (hits None for a line without stats, text "" when the file is not
    readable now, own None when not known), and with *memory* a sixth,
    ``[allocated, net, own allocated or None]``; the time the percents are
    of, and the hottest lines."""
    filename = str(key[0])
    getline, known = line_sources.line_getter(sources or {})
    readable = known(filename)
    rows = []
    for lineno in line_sources.listed_lines(key, table):
        text = getline(filename, lineno) if readable else ""
        if lineno in table:
            hits, seconds = table[lineno]
            rows.append([lineno, _num(hits), _num(seconds), text,
                         _num(own.get(lineno, 0.0)) if own is not None else None])
            if memory is not None:
                rows[-1].append(list(memory.get(lineno, (0, 0, 0))))
        elif readable:
            rows.append([lineno, None, 0, text, None] + ([None] if memory is not None else []))
    block = {"rows": rows, "total": _num(function_total(table, cumtime)), "hot": hottest(table),
             "readable": readable, "own": own is not None}
    if memory is not None:
        block["bytes"] = True
        block["own_bytes"] = all(b[2] is not None for b in memory.values())
    return block


# A thread selector lists each thread when there are at most this many, else
# groups of threads whose names differ only in numbers ("Thread-N (handler)"),
# the biggest MAX_THREAD_VIEWS of them, the rest as one "other threads".
MAX_SINGLE_THREADS = 12
MAX_THREAD_VIEWS = 20
# the estimated tree of one thread (group) stops at this many nodes
MAX_THREAD_TREE_NODES = 5000


def _thread_pattern(name: str) -> str:
    return re.sub(r"\d+", "N", name)


def thread_groups(threads: List[dict]) -> List[Tuple[str, List[dict]]]:
    """(label, threads) per entry of the HTML thread selector, biggest first."""
    def tottime(ts):
        return sum(v[2] for t in ts for v in t.get("stats", {}).values())

    if len(threads) <= MAX_SINGLE_THREADS:
        names = [str(t.get("name")) for t in threads]
        groups = []
        for t, name in zip(threads, names):
            label = name if names.count(name) == 1 else "%s (id %s)" % (name, t.get("id"))
            groups.append((label, [t]))
    else:
        by_pattern: Dict[str, List[dict]] = {}
        for t in threads:
            by_pattern.setdefault(_thread_pattern(str(t.get("name"))), []).append(t)
        groups = []
        for pattern, ts in by_pattern.items():
            if len(ts) == 1:
                groups.append((str(ts[0].get("name")), ts))
            else:
                groups.append(("%s \u00d7 %d threads" % (pattern, len(ts)), ts))
    groups.sort(key=lambda g: -tottime(g[1]))
    if len(groups) > MAX_THREAD_VIEWS:
        rest = [t for _label, ts in groups[MAX_THREAD_VIEWS - 1:] for t in ts]
        groups = groups[:MAX_THREAD_VIEWS - 1] + [("other threads \u00d7 %d" % len(rest), rest)]
    return groups


def _sum_stats(stats_list: List[dict]) -> Dict[FuncKey, tuple]:
    if len(stats_list) == 1:
        return stats_list[0]
    out: Dict[FuncKey, list] = {}
    for stats in stats_list:
        for key, (cc, nc, tt, ct, callers) in stats.items():
            row = out.get(key)
            if row is None:
                out[key] = [cc, nc, tt, ct, dict(callers)]
                continue
            row[0] += cc
            row[1] += nc
            row[2] += tt
            row[3] += ct
            for ckey, e in callers.items():
                prev = row[4].get(ckey)
                row[4][ckey] = e if prev is None else tuple(a + b for a, b in zip(prev, e))
    return {k: tuple(v) for k, v in out.items()}


# the flame graphs by bytes a report with memory along call paths has (memory.WEIGHTS)
BYTE_FLAMES = ("allocated", "held")


def _tree_json(tree: CallTree, func_index: Dict[FuncKey, int]) -> dict:
    funcs = [func_index[k] for k in tree.functions]
    return {
        "exact": tree.exact,
        "min_percent": _num(100 * tree.min_fraction),
        "parent": tree.parent,
        "func": [funcs[f] for f in tree.func],
        "calls": [_num(c) for c in tree.calls],
        "self": [_num(t) for t in tree.self_time],
        "folded": [_num(t) for t in tree.folded],
    }


def _view(stats: Dict[FuncKey, tuple], tree: CallTree, func_index: Dict[FuncKey, int],
          label: str, nthreads: int) -> dict:
    """One selectable view: a function table (rows and caller edges, by
    global function index) and a call tree."""
    keys = sorted(stats, key=lambda k: -stats[k][3])
    rows, callers = [], []
    for key in keys:
        cc, nc, tt, ct, edges = stats[key]
        rows.append([func_index[key], _num(cc), _num(nc), _num(tt), _num(ct)])
        callers.append([[func_index[c], _num(e[0]), _num(e[1]), _num(e[2]), _num(e[3])]
                        for c, e in edges.items() if c in func_index])
    return {
        "label": label,
        "threads": nthreads,
        "total": _num(sum(v[2] for v in stats.values())),
        "total_calls": sum(int(v[1]) for v in stats.values()),
        "primitive_calls": sum(int(v[0]) for v in stats.values()),
        "rows": rows,
        "callers": callers,
        "tree": _tree_json(tree, func_index),
    }


def report_data(data: ProfileData, title: Optional[str] = None, source_name: str = "",
                min_fraction: float = 0.0) -> dict:
    """Everything the page shows, as JSON-able lists.

    ``functions`` names every function once; ``views[0]`` is the whole
    profile, the next ones (when it has several threads) its threads or
    groups of threads, each with its own table and call tree.  A tree drops
    the paths below *min_fraction* of its total into their parents.
    """
    stats = data.stats
    tree = fold_import_frames(build_tree(data, min_fraction))
    # memory along call paths: the same flame graph by bytes
    flames = {}
    if data.callpaths is not None and data.callpaths.memory is not None:
        for weight in BYTE_FLAMES:
            flames[weight] = fold_import_frames(build_tree(weighed_by_bytes(data, weight), min_fraction))
    groups = thread_groups(data.threads) if len(data.threads) > 1 else []
    group_stats = [_sum_stats([t.get("stats", {}) for t in ts]) for _label, ts in groups]

    # every function once, the most expensive first (sources are read in this order)
    cum: Dict[FuncKey, float] = {}
    for st in [stats] + group_stats:
        for k, v in st.items():
            cum[k] = max(cum.get(k, 0.0), v[3])
    for k in tree.functions:
        cum.setdefault(k, 0.0)
    for k in list(data.memory or ()) + [k for t in flames.values() for k in t.functions]:
        cum.setdefault(k, 0.0)
    group_memory = [_sum_memory(ts) for _label, ts in groups]
    for table in group_memory:
        for k in table or ():
            cum.setdefault(k, 0.0)
    keys = sorted(cum, key=lambda k: -cum[k])
    index = {k: i for i, k in enumerate(keys)}

    def row(key):
        filename = str(key[0])
        return [readable_name(key, data.qualnames), "" if is_builtin(key) else filename,
                "" if is_builtin(key) else short_path(filename),
                key[1] if isinstance(key[1], int) else 0]

    functions = [row(k) for k in keys]
    views = [_view(stats, tree, index, "all threads", len(data.threads))]
    for (label, ts), st, table in zip(groups, group_stats, group_memory):
        t = tree_from_callers(st, max_nodes=MAX_THREAD_TREE_NODES,
                              min_fraction=max(min_fraction, MIN_ESTIMATED_FRACTION))
        views.append(_view(st, fold_import_frames(t), index, label, len(ts)))
        if data.memory is not None and table is not None:  # its threads' own memory table
            views[-1]["memory"] = _memory_rows(table, index)

    sources: Dict[str, dict] = {}
    budget = MAX_SOURCE_BYTES
    for i, key in enumerate(keys):
        if budget <= 0 or cum[key] < MIN_SOURCE_FRACTION * views[0]["total"]:
            break
        block = _source_block(key)
        if block is None:
            continue
        size = sum(len(ln) + 1 for ln in block["lines"])
        if size > budget:
            continue
        budget -= size
        sources[str(i)] = block

    return {
        "title": title or "profile",
        "lines": {str(index[k]): _line_block(k, table, stats[k][3] if k in stats else None,
                                             data.lines_own.get(k), data.sources, data.lines_memory.get(k))
                  for k, table in data.lines.items() if k in index},
        "source": source_name,
        "created": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
        "clock": data.clock,
        "only": data.only,
        "fast": data.fast,
        "request": data.request,
        "cost": cost_note.note(data.compensation),
        "functions": functions,
        "views": views,
        "sources": sources,
        "memory": _memory_json(data, index),
        "flames": {weight: _tree_json(t, index) for weight, t in flames.items()},
    }


def _memory_json(data: ProfileData, index: Dict[FuncKey, int]) -> Optional[dict]:
    """The memory table (a profile made with memory): the process's totals
    and the rows of all threads (a view of some threads has its own)."""
    if data.memory is None:
        return None
    return {"totals": dict(data.memory_totals or {}), "rows": _memory_rows(data.memory, index)}


def _memory_rows(table, index: Dict[FuncKey, int]) -> List[list]:
    """Each function's [index, allocated, allocated_incl, net, peak,
    live_at_peak, allocations], most allocated first."""
    rows = sorted(table.items(), key=lambda kv: -kv[1].allocated)
    return [[index[k], r.allocated, r.allocated_incl, r.net, r.peak, r.live_at_peak, r.allocations]
            for k, r in rows if k in index]


def _sum_memory(threads: List[dict]):
    """The memory table of these thread records together, or None when one
    has none (a file written before threads kept their memory)."""
    if not all("memory" in t for t in threads):
        return None
    total: dict = {}
    for t in threads:
        add_table(total, t["memory"])
    return total


def _json_for_script(obj) -> str:
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    # '</' could end the <script> element; '\/' is the same string in JSON.
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


def render_html(data: ProfileData, title: Optional[str] = None, source_name: str = "",
                min_fraction: float = 0.0) -> str:
    payload = report_data(data, title=title, source_name=source_name, min_fraction=min_fraction)
    page = _asset("report.html")
    title_text = html.escape(payload["title"])
    # Fill the placeholders in one pass, so no inserted text is searched again.
    parts = {
        "/*@@CSS@@*/": _asset("report.css"),
        "/*@@JS@@*/": _asset("report.js").replace("</script", "<\\/script"),
        "@@TITLE@@": title_text,
        "@@DATA@@": _json_for_script(payload),
    }
    out = []
    pos = 0
    while True:
        hits = [(page.find(p, pos), p) for p in parts]
        hits = [(i, p) for i, p in hits if i >= 0]
        if not hits:
            out.append(page[pos:])
            break
        i, p = min(hits)
        out.append(page[pos:i])
        out.append(parts[p])
        pos = i + len(p)
    return "".join(out)


def write_html(data: ProfileData, out: TextIO, title: Optional[str] = None,
               min_fraction: float = 0.0) -> None:
    """Write the report; *title* (e.g. the profile's file name) heads the page."""
    out.write(render_html(data, title=title, source_name=title or "", min_fraction=min_fraction))
