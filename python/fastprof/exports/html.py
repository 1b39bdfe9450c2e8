"""One self-contained HTML report: no network fetch, no CDN, works offline.

The page (template, CSS and JavaScript in ``fastprof/html/``) is filled in
with the profile as one JSON blob:

- the function table (calls, tottime, cumtime, per call, percent), sortable
  and filterable;
- callers and callees of the selected function, each a link;
- an icicle flame graph of the call paths (click a frame to zoom, click the
  root to reset); exact for fastprof files with call paths, estimated from
  the caller graph for plain cProfile files, and labelled so;
- the source of the selected function, read when the report is written
  (when the file is readable then), at most ``MAX_SOURCE_LINES`` lines per
  function and ``MAX_SOURCE_BYTES`` in all, the most expensive functions
  first.
"""

import datetime
import html
import inspect
import json
import linecache
import pkgutil
from typing import Dict, List, Optional, TextIO

from ..profile_file import FuncKey, ProfileData
from ._tree import build_tree, is_builtin, short_path

MAX_SOURCE_LINES = 300
MAX_SOURCE_BYTES = 4 * 1024 * 1024


def _asset(name: str) -> str:
    raw = pkgutil.get_data("fastprof", "html/" + name)
    if raw is None:  # pragma: no cover - a loader without get_data
        raise FileNotFoundError("fastprof/html/" + name)
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


def report_data(data: ProfileData, title: Optional[str] = None, source_name: str = "") -> dict:
    """Everything the page shows, as JSON-able lists (functions by cumtime)."""
    stats = data.stats
    keys = sorted(stats, key=lambda k: -stats[k][3])
    index = {k: i for i, k in enumerate(keys)}
    tree = build_tree(data)
    # functions the tree knows but pstats does not (should not happen; be safe)
    for key in tree.functions:
        if key not in index:
            index[key] = len(keys)
            keys.append(key)

    def row(key):
        cc, nc, tt, ct, _ = stats.get(key, (0, 0, 0.0, 0.0, {}))
        filename = str(key[0])
        return [str(key[2]), "" if is_builtin(key) else filename,
                "" if is_builtin(key) else short_path(filename),
                key[1] if isinstance(key[1], int) else 0,
                _num(cc), _num(nc), _num(tt), _num(ct)]

    functions = [row(k) for k in keys]
    callers: List[list] = []
    for key in keys:
        entry = stats.get(key)
        edges = []
        if entry is not None:
            for ckey, e in entry[4].items():
                if ckey in index:
                    edges.append([index[ckey], _num(e[0]), _num(e[1]), _num(e[2]), _num(e[3])])
        callers.append(edges)

    tree_funcs = [index[k] for k in tree.functions]
    tree_json = {
        "exact": tree.exact,
        "parent": tree.parent,
        "func": [tree_funcs[f] for f in tree.func],
        "calls": [_num(c) for c in tree.calls],
        "self": [_num(t) for t in tree.self_time],
        "cum": [_num(t) for t in tree.cum_time],
    }

    sources: Dict[str, dict] = {}
    budget = MAX_SOURCE_BYTES
    for i, key in enumerate(keys):
        if budget <= 0:
            break
        block = _source_block(key)
        if block is None:
            continue
        size = sum(len(ln) + 1 for ln in block["lines"])
        if size > budget:
            continue
        budget -= size
        sources[str(i)] = block

    total_tt = sum(v[2] for v in stats.values())
    return {
        "title": title or "profile",
        "source": source_name,
        "created": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
        "clock": data.clock,
        "total": _num(total_tt),
        "total_calls": sum(int(v[1]) for v in stats.values()),
        "primitive_calls": sum(int(v[0]) for v in stats.values()),
        "functions": functions,
        "callers": callers,
        "tree": tree_json,
        "sources": sources,
        "threads": len(data.threads),
    }


def _json_for_script(obj) -> str:
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    # '</' could end the <script> element; '\/' is the same string in JSON.
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


def render_html(data: ProfileData, title: Optional[str] = None, source_name: str = "") -> str:
    payload = report_data(data, title=title, source_name=source_name)
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


def write_html(data: ProfileData, out: TextIO, title: Optional[str] = None) -> None:
    """Write the report; *title* (e.g. the profile's file name) heads the page."""
    out.write(render_html(data, title=title, source_name=title or ""))
