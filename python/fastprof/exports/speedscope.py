"""speedscope JSON (https://www.speedscope.app, file format v0.0.1 schema).

One ``evented`` profile laid out from the calling-context tree: each node
opens, its children follow one after another, and it closes after its total
time (self time plus the children's).  Times are integer nanoseconds, so the
events nest exactly.  The order of siblings is alphabetical, not the order
of the calls (a deterministic profile keeps totals, not a timeline): read
the "Left Heavy" and "Sandwich" views, not "Time Order", as time.

A cProfile file without call paths gets the tree estimated from its callers
(see ``fastprof.data.calltree``); the profile name then says "(estimated call paths)".  A
profile weighed by bytes (``fastprof convert --weight allocated``) is in
the unit ``bytes``.  Paths
below *min_fraction* of the total are folded into their callers' self time,
and the name says that too.
"""

import json
from typing import List, Optional, TextIO, Tuple

from ..data.calltree import CallTree, build_tree
from ..data.model import is_builtin
from ..data.names import readable_name
from ..data.profile_file import ProfileData

SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"


def _document(data: ProfileData, name: str, min_fraction: float = 0.0):
    tree = build_tree(data, min_fraction)
    frames = []
    for key in tree.functions:
        frame = {"name": readable_name(key, data.qualnames)}
        if not is_builtin(key):
            frame["file"] = str(key[0])
            if isinstance(key[1], int) and key[1] > 0:
                frame["line"] = key[1]
        frames.append(frame)
    # a profile weighed by bytes (memory.weighed_by_bytes): its "times" are bytes
    events = _events(tree, 1.0 if data.weight else 1e9)
    end = events[-1][2] if events else 0
    if data.weight:
        name += " (bytes: %s)" % data.weight
    if not tree.exact:
        name += " (estimated call paths)"
    if min_fraction > 0:
        name += " (paths below %g%% folded into their callers)" % (100 * min_fraction)
    doc = {
        "$schema": SCHEMA_URL,
        "shared": {"frames": frames},
        "profiles": [{
            "type": "evented",
            "name": name,
            "unit": "bytes" if data.weight else "nanoseconds",
            "startValue": 0,
            "endValue": end,
            "events": None,
        }],
        "name": name,
        "activeProfileIndex": 0,
        "exporter": "fastprof",
    }
    return doc, events


def _events(tree: CallTree, scale: float = 1e9) -> List[Tuple[str, int, int]]:
    """(type "O"/"C", frame, at) in order; zero-width subtrees left out;
    times in seconds times *scale* (nanoseconds), bytes as they are."""
    # Integer totals bottom-up, so a parent is exactly self + children.
    self_ns = [max(0, int(round((t + f) * scale))) for t, f in zip(tree.self_time, tree.folded)]
    total = list(self_ns)
    parent = tree.parent
    for i in range(len(total) - 1, -1, -1):
        p = parent[i]
        if p >= 0:
            total[p] += total[i]
    func, children = tree.func, tree.children
    events: List[Tuple[str, int, int]] = []
    t = 0
    # iterative DFS: a node opens, its children follow, then its self time
    # passes and it closes (negative entries mean "close node ~n")
    stack = list(reversed(tree.roots))
    while stack:
        n = stack.pop()
        if n < 0:
            n = ~n
            t += self_ns[n]
            events.append(("C", func[n], t))
            continue
        if total[n] == 0:
            continue
        events.append(("O", func[n], t))
        stack.append(~n)
        stack.extend(reversed(children[n]))
    return events


def write_speedscope(data: ProfileData, out: TextIO, title: Optional[str] = None,
                     min_fraction: float = 0.0) -> None:
    doc, events = _document(data, title or "fastprof profile", min_fraction)
    # Everything but the events through json; the events (most of the file)
    # formatted directly, which is several times faster.
    head = json.dumps(doc, separators=(",", ":"))
    marker = '"events":null'
    i = head.index(marker)
    out.write(head[:i])
    out.write('"events":[')
    chunk = []
    for k, (kind, frame, at) in enumerate(events):
        chunk.append('%s{"type":"%s","frame":%d,"at":%d}' % ("," if k else "", kind, frame, at))
        if len(chunk) >= 4096:
            out.write("".join(chunk))
            chunk = []
    out.write("".join(chunk))
    out.write("]")
    out.write(head[i + len(marker):])
    out.write("\n")
