"""The calling-context tree every flame-graph-like export draws.

With a fastprof file that recorded call paths (``callpaths=True``) the tree
is exact: it is the trailer's node list.  A plain cProfile file only has the
caller graph (who called whom, with the time of each edge), so the tree is
*estimated* the way gprof2dot/flameprof do: start at the functions nobody
called, and split each callee's time among its call sites in proportion to
the cumulative time of each caller->callee edge.  Such a tree can show paths
that never happened (it assumes a callee behaves the same whoever calls it);
``CallTree.exact`` says which kind a tree is, and every exporter says so in
its output.
"""

import heapq
import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple

from ..profile_file import FuncKey, ProfileData

# An estimated tree stops growing at this many nodes (the widest branches are
# expanded first) and does not expand branches narrower than this fraction of
# the total time, so a dense caller graph cannot blow up exponentially.
MAX_ESTIMATED_NODES = 20000
MIN_ESTIMATED_FRACTION = 1e-4
MAX_ESTIMATED_DEPTH = 128


class CallTree:
    """A forest of call-path nodes, parents before children.

    Per node: ``parent`` (index or -1), ``func`` (index into ``functions``),
    ``calls``, ``self_time`` (seconds spent in the function itself along this
    path) and ``cum_time`` (as recorded; for drawing use :meth:`total`, which
    is self time plus the children's totals, so children always fit).
    """

    def __init__(self, functions: Sequence[FuncKey], exact: bool):
        self.functions: List[FuncKey] = list(functions)
        self.exact = exact
        self.parent: List[int] = []
        self.func: List[int] = []
        self.calls: List[float] = []
        self.self_time: List[float] = []
        self.cum_time: List[float] = []
        self.children: List[List[int]] = []
        self.roots: List[int] = []
        self._total: Optional[List[float]] = None

    def add(self, parent: int, func: int, calls: float, self_time: float, cum_time: float) -> int:
        idx = len(self.parent)
        self.parent.append(parent)
        self.func.append(func)
        self.calls.append(calls)
        self.self_time.append(max(0.0, float(self_time)))
        self.cum_time.append(max(0.0, float(cum_time)))
        self.children.append([])
        if parent < 0:
            self.roots.append(idx)
        else:
            self.children[parent].append(idx)
        self._total = None
        return idx

    def __len__(self) -> int:
        return len(self.parent)

    def totals(self) -> List[float]:
        """Per node: self time plus the totals of its children (seconds)."""
        if self._total is None:
            total = list(self.self_time)
            for i in range(len(total) - 1, -1, -1):  # children after parents
                p = self.parent[i]
                if p >= 0:
                    total[p] += total[i]
            self._total = total
        return self._total

    def total_time(self) -> float:
        totals = self.totals()
        return sum(totals[r] for r in self.roots)

    def path(self, node: int) -> List[int]:
        """Function indices from the root down to *node*."""
        out = []
        while node >= 0:
            out.append(self.func[node])
            node = self.parent[node]
        out.reverse()
        return out


def build_tree(data: ProfileData) -> CallTree:
    """The exact tree if *data* has call paths, else one estimated from the callers."""
    if data.callpaths is not None and data.callpaths.nodes:
        return tree_from_callpaths(data)
    return tree_from_callers(data.stats)


def tree_from_callpaths(data: ProfileData) -> CallTree:
    cp = data.callpaths
    tree = CallTree(cp.functions, exact=True)
    nodes = cp.nodes
    # column by column: 10x faster than add() per node on big trees
    tree.parent = [n[0] for n in nodes]
    tree.func = [n[1] for n in nodes]
    tree.calls = [n[2] for n in nodes]
    tree.self_time = [max(0.0, float(n[3])) for n in nodes]
    tree.cum_time = [max(0.0, float(n[4])) for n in nodes]
    tree.children = [[] for _ in nodes]
    children, roots = tree.children, tree.roots
    for i, p in enumerate(tree.parent):
        if p >= 0:
            children[p].append(i)
        else:
            roots.append(i)
    return tree


def tree_from_callers(stats: Dict[FuncKey, tuple],
                      max_nodes: int = MAX_ESTIMATED_NODES,
                      min_fraction: float = MIN_ESTIMATED_FRACTION) -> CallTree:
    """Estimate a calling-context tree from a pstats caller graph."""
    keys = sorted(stats, key=_sort_key)
    index = {k: i for i, k in enumerate(keys)}
    tree = CallTree(keys, exact=False)
    # callees[f] = [(g, edge_nc, edge_tt, edge_ct)] for every caller->callee edge f->g
    callees: List[List[Tuple[int, float, float, float]]] = [[] for _ in keys]
    has_caller = [False] * len(keys)
    for key, (_cc, _nc, _tt, _ct, callers) in stats.items():
        g = index[key]
        for ckey, edge in callers.items():
            f = index.get(ckey)
            if f is None or f == g:
                continue
            has_caller[g] = True
            callees[f].append((g, edge[0], edge[2], edge[3]))
    total_tt = sum(v[2] for v in stats.values())
    roots = [i for i in range(len(keys)) if not has_caller[i]]
    if not roots and keys:  # everything sits in a cycle: start at the widest
        roots = [max(range(len(keys)), key=lambda i: stats[keys[i]][3])]
    threshold = total_tt * min_fraction

    # Expand widest-first: heap of
    # (-cum, seq, parent node, func, scale, calls along this path, ancestors);
    # scale is the share of the function's time that belongs to this path.
    heap: list = []
    seq = 0
    for r in roots:
        heapq.heappush(heap, (-stats[keys[r]][3], seq, -1, r, 1.0, stats[keys[r]][1], frozenset()))
        seq += 1
    while heap and len(tree) < max_nodes:
        neg_cum, _s, parent, f, scale, calls, ancestors = heapq.heappop(heap)
        tt = stats[keys[f]][2]
        depth = len(ancestors)
        node = tree.add(parent, f, calls, tt * scale, -neg_cum)
        if depth >= MAX_ESTIMATED_DEPTH:
            continue
        on_path = ancestors | {f}
        for g, e_nc, e_tt, e_ct in callees[f]:
            if g in on_path:
                continue  # a cycle: its time is already inside the ancestor
            g_ct = stats[keys[g]][3]
            g_tt = stats[keys[g]][2]
            g_nc = stats[keys[g]][1]
            if g_ct > 0:
                frac = e_ct / g_ct
            elif g_tt > 0:
                frac = e_tt / g_tt
            elif g_nc > 0:
                frac = e_nc / g_nc
            else:
                frac = 0.0
            # this path holds *scale* of f's calls, so that share of f's calls to g
            child_scale = scale * min(frac, 1.0)
            child_cum = g_ct * child_scale
            if child_cum < threshold or child_scale <= 0:
                continue
            heapq.heappush(heap, (-child_cum, seq, node, g, child_scale, e_nc * scale, on_path))
            seq += 1
    return _reorder(tree)


def _reorder(tree: CallTree) -> CallTree:
    """Renumber nodes depth-first (parents before children, siblings by name).

    Widest-first expansion leaves nodes in heap order; exporters want a
    stable, readable order.
    """
    out = CallTree(tree.functions, tree.exact)

    def visit_order(nodes):
        return sorted(nodes, key=lambda n: _sort_key(tree.functions[tree.func[n]]))

    stack = [(r, -1) for r in reversed(visit_order(tree.roots))]
    while stack:
        n, new_parent = stack.pop()
        new = out.add(new_parent, tree.func[n], tree.calls[n], tree.self_time[n], tree.cum_time[n])
        for c in reversed(visit_order(tree.children[n])):
            stack.append((c, new))
    return out


def _sort_key(key: FuncKey):
    return (str(key[0]), int(key[1]) if isinstance(key[1], int) else 0, str(key[2]))


# ---------------------------------------------------------------- naming

def is_builtin(key: FuncKey) -> bool:
    return key[0] == "~" and key[1] == 0


_PREFIXES: Dict[tuple, List[str]] = {}


def _path_prefixes() -> List[str]:
    key = tuple(sys.path)
    cached = _PREFIXES.get(key)
    if cached is None:
        prefixes = set()
        for p in key:
            if p and os.path.isabs(p) and os.path.isdir(p):
                prefixes.add(os.path.join(os.path.normpath(p), ""))
        # longest first, so site-packages wins over the lib directory holding it
        cached = _PREFIXES[key] = sorted(prefixes, key=len, reverse=True)
    return cached


def short_path(filename: str) -> str:
    """*filename* relative to the sys.path entry holding it, if any."""
    if not filename or filename.startswith("<") or filename == "~":
        return filename
    for prefix in _path_prefixes():
        if filename.startswith(prefix) and len(filename) > len(prefix):
            return filename[len(prefix):]
    return filename


def func_label(key: FuncKey, short: bool = True) -> str:
    """``name (file:line)`` for Python functions, the cProfile name for C ones."""
    filename, line, name = key
    if is_builtin(key):
        return name
    path = short_path(filename) if short else filename
    return "%s (%s:%s)" % (name, path, line)


def stdname(key: FuncKey) -> str:
    """``file:line(name)`` as pstats prints it (``{name}`` for C functions)."""
    filename, line, name = key
    if is_builtin(key):
        if name.startswith("<"):
            return "{%s}" % name[1:-1]
        return name
    return "%s:%s(%s)" % (filename, line, name)
