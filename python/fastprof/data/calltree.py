"""The calling-context tree: what ``fastprof view --tree`` prints and every
flame-graph-like export draws.

With a fastprof file that recorded call paths (``callpaths=True``) the tree
is exact: it is the trailer's node list.  A plain cProfile file only has the
caller graph (who called whom, with the cumulative time of each
caller->callee edge), so the tree is *estimated*:

- functions that call each other in a cycle (recursion through ``exec`` and
  the import system, mutual recursion, visitors) form one strongly
  connected component; a component is laid out once per call into it, each
  member once (a spanning tree of its internal calls, heaviest first), so
  time inside a cycle is never counted twice nor lost;
- a component's time goes to its outside callers in proportion to the
  cumulative time of their edges into it; what those edges do not explain
  (``exec`` at the top of the program has callers as soon as a module is
  imported at run time, but most of its time is the top-level run) starts a
  root of its own;
- so every function's own time is in the tree exactly once, and the roots
  add up to the profile's total time.

Such a tree can show paths that never happened (it assumes a callee behaves
the same whoever calls it); ``CallTree.exact`` says which kind a tree is,
and every exporter says so in its output.

Either tree can be cut at a fraction of the total (:func:`prune`): a path
below it is dropped and its time added to its parent's ``folded`` time, so
parents keep their width and the total stays whole.
"""

import heapq
from typing import Dict, List, Optional, Sequence, Tuple

from .model import FuncKey
from .profile_file import ProfileData

# An estimated tree stops growing at this many nodes (the widest branches are
# expanded first) and does not expand branches narrower than this fraction of
# the total time, so a dense caller graph cannot blow up exponentially; what
# is not expanded is folded into its parent.
MAX_ESTIMATED_NODES = 20000
MIN_ESTIMATED_FRACTION = 1e-4
MAX_ESTIMATED_DEPTH = 128

# Relative slack before a function's cumtime counts as "not explained by its
# callers" (sums of float edge times differ from the total in the last bits).
_ROOT_SLACK = 1e-7


class CallTree:
    """A forest of call-path nodes, parents before children.

    Per node: ``parent`` (index or -1), ``func`` (index into ``functions``),
    ``calls``, ``self_time`` (seconds spent in the function itself along this
    path), ``folded`` (seconds of the paths below it that were cut, see
    :func:`prune`; ``folded_count`` of them) and ``cum_time`` (as recorded;
    for drawing use :meth:`totals`, which is self time plus folded time plus
    the children's totals, so children always fit).
    """

    def __init__(self, functions: Sequence[FuncKey], exact: bool):
        self.functions: List[FuncKey] = list(functions)
        self.exact = exact
        self.parent: List[int] = []
        self.func: List[int] = []
        self.calls: List[float] = []
        self.self_time: List[float] = []
        self.cum_time: List[float] = []
        self.folded: List[float] = []
        self.folded_count: List[int] = []
        self.children: List[List[int]] = []
        self.roots: List[int] = []
        # fraction of the total below which paths were folded (0: none)
        self.min_fraction = 0.0
        self._total: Optional[List[float]] = None

    def add(self, parent: int, func: int, calls: float, self_time: float, cum_time: float) -> int:
        idx = len(self.parent)
        self.parent.append(parent)
        self.func.append(func)
        self.calls.append(calls)
        self.self_time.append(max(0.0, float(self_time)))
        self.cum_time.append(max(0.0, float(cum_time)))
        self.folded.append(0.0)
        self.folded_count.append(0)
        self.children.append([])
        if parent < 0:
            self.roots.append(idx)
        else:
            self.children[parent].append(idx)
        self._total = None
        return idx

    def fold(self, node: int, seconds: float, count: int = 1) -> None:
        """Add the time of *count* cut paths below *node* to it."""
        self.folded[node] += seconds
        self.folded_count[node] += count
        self._total = None

    def __len__(self) -> int:
        return len(self.parent)

    def totals(self) -> List[float]:
        """Per node: self time plus folded time plus the totals of its children (seconds)."""
        if self._total is None:
            total = [s + f for s, f in zip(self.self_time, self.folded)]
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


def build_tree(data: ProfileData, min_fraction: float = 0.0) -> CallTree:
    """The exact tree if *data* has call paths, else one estimated from the callers.

    With *min_fraction* > 0, paths below that fraction of the total are
    folded into their parents (see :func:`prune`).
    """
    if data.callpaths is not None and data.callpaths.nodes:
        tree = tree_from_callpaths(data)
    else:
        tree = tree_from_callers(data.stats,
                                 min_fraction=max(min_fraction, MIN_ESTIMATED_FRACTION))
    if min_fraction > 0:
        tree = prune(tree, min_fraction)
    return tree


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
    tree.folded = [0.0] * len(nodes)
    tree.folded_count = [0] * len(nodes)
    tree.children = [[] for _ in nodes]
    children, roots = tree.children, tree.roots
    for i, p in enumerate(tree.parent):
        if p >= 0:
            children[p].append(i)
        else:
            roots.append(i)
    return tree


def prune(tree: CallTree, min_fraction: float) -> CallTree:
    """A copy of *tree* without the paths below *min_fraction* of its total.

    A dropped node's total (with everything below it) is added to its
    parent's ``folded`` time, so every kept node keeps its total and the
    roots still add up to the whole.  Roots are always kept.
    """
    totals = tree.totals()
    threshold = tree.total_time() * min_fraction
    if min_fraction <= 0 or not len(tree):
        return tree
    out = CallTree(tree.functions, tree.exact)
    out.min_fraction = max(tree.min_fraction, min_fraction)
    new = [-1] * len(tree)
    parent, func, calls = tree.parent, tree.func, tree.calls
    o_parent, o_func, o_calls, o_self, o_cum = out.parent, out.func, out.calls, out.self_time, out.cum_time
    o_folded, o_count, o_children, o_roots = out.folded, out.folded_count, out.children, out.roots
    for i in range(len(tree)):
        p = parent[i]
        if p >= 0:
            np_ = new[p]
            if np_ < 0:
                continue  # an ancestor was dropped: its total holds this one
            if totals[i] < threshold:
                o_folded[np_] += totals[i]
                o_count[np_] += 1
                continue
        else:
            np_ = -1
        k = new[i] = len(o_parent)
        o_parent.append(np_)
        o_func.append(func[i])
        o_calls.append(calls[i])
        o_self.append(tree.self_time[i])
        o_cum.append(tree.cum_time[i])
        o_folded.append(tree.folded[i])
        o_count.append(tree.folded_count[i])
        o_children.append([])
        if np_ < 0:
            o_roots.append(k)
        else:
            o_children[np_].append(k)
    return out


# ---------------------------------------------------------------- estimation

def _components(n: int, succ: List[List[int]]) -> List[int]:
    """Strongly connected components (Tarjan, iterative): component id per
    vertex, numbered so that a component's id is smaller than the id of any
    component that reaches it (callees first)."""
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    comp = [-1] * n
    stack: List[int] = []
    counter = 0
    ncomp = 0
    for start in range(n):
        if index[start] >= 0:
            continue
        work = [(start, 0)]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack[start] = True
        while work:
            v, i = work[-1]
            edges = succ[v]
            if i < len(edges):
                work[-1] = (v, i + 1)
                w = edges[i]
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, 0))
                elif on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
                continue
            work.pop()
            if work:
                u = work[-1][0]
                if low[v] < low[u]:
                    low[u] = low[v]
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp[w] = ncomp
                    if w == v:
                        break
                ncomp += 1
    return comp


def tree_from_callers(stats: Dict[FuncKey, tuple],
                      max_nodes: int = MAX_ESTIMATED_NODES,
                      min_fraction: float = MIN_ESTIMATED_FRACTION) -> CallTree:
    """Estimate a calling-context tree from a pstats caller graph (see the module doc).

    Branches below *min_fraction* of the total, past *max_nodes* nodes or
    past ``MAX_ESTIMATED_DEPTH`` are folded into their parents.
    """
    keys = sorted(stats, key=_sort_key)
    index = {k: i for i, k in enumerate(keys)}
    n = len(keys)
    tree = CallTree(keys, exact=False)
    tree.min_fraction = min_fraction
    tt = [max(0.0, float(stats[k][2])) for k in keys]
    ct = [max(0.0, float(stats[k][3])) for k in keys]
    nc = [float(stats[k][1]) for k in keys]
    # out_edges[f] = [(g, nc, ct)] for every caller->callee edge f->g, f != g
    out_edges: List[List[Tuple[int, float, float]]] = [[] for _ in keys]
    in_nc = [0.0] * n
    for key, (_cc, _nc, _tt, _ct, callers) in stats.items():
        g = index[key]
        for ckey, edge in callers.items():
            f = index.get(ckey)
            if f is None or f == g:
                continue
            out_edges[f].append((g, float(edge[0]), max(0.0, float(edge[3]))))
            in_nc[g] += float(edge[0])
    comp = _components(n, [[g for g, _c, _t in es] for es in out_edges])
    ncomp = (max(comp) + 1) if n else 0
    members: List[List[int]] = [[] for _ in range(ncomp)]
    for f in range(n):
        members[comp[f]].append(f)

    # Per component: the weight of each edge into it from outside, and of
    # its root part; Z is their sum, so the shares of a component add to 1.
    ext_in = [0.0] * n        # per function: edge cumtime from outside its component
    ext_nc = [0.0] * ncomp
    for f in range(n):
        for g, e_nc, e_ct in out_edges[f]:
            if comp[g] != comp[f]:
                ext_in[g] += e_ct
                ext_nc[comp[g]] += e_nc
    by_count = [False] * ncomp  # no time at all: shares by call counts instead
    root_w = [0.0] * ncomp
    z = [0.0] * ncomp
    root_entry = [0] * ncomp
    for c, ms in enumerate(members):
        ext_total = sum(ext_in[m] for m in ms)
        top = max(ct[m] for m in ms)
        root = top - ext_total
        if root <= _ROOT_SLACK * top:
            root = 0.0
        if ext_total + root <= 0.0:
            by_count[c] = True
            ext_total = ext_nc[c]
            root = 0.0 if ext_total > 0 else 1.0
        root_w[c] = root
        z[c] = ext_total + root
        # the outermost calls start at the member least explained by its callers
        root_entry[c] = max(ms, key=lambda m: (ct[m] - ext_in[m], ct[m], -m))

    def share(f: int, g: int, e_nc: float, e_ct: float) -> float:
        c = comp[g]
        return (e_nc if by_count[c] else e_ct) / z[c]

    # T[c]: total time of one whole call into component c (scale 1); callees first
    T = [0.0] * ncomp
    ext_children: List[float] = [0.0] * n  # per function: its outside callees' time, scale 1
    for c in range(ncomp):
        t = 0.0
        for m in members[c]:
            x = 0.0
            for g, e_nc, e_ct in out_edges[m]:
                if comp[g] != c:
                    x += share(m, g, e_nc, e_ct) * T[comp[g]]
            ext_children[m] = x
            t += tt[m] + x
        T[c] = t

    layouts: Dict[int, tuple] = {}

    def layout(c: int, entry: int):
        """The members of component c as a spanning tree from *entry*:
        (order, parent member, edge calls, subtree time at scale 1), parents first."""
        got = layouts.get(entry)
        if got is not None:
            return got
        ms = members[c]
        if len(ms) == 1:
            got = ([entry], {entry: -1}, {entry: 0.0}, {entry: T[c]})
            layouts[entry] = got
            return got
        inside = set(ms)
        order = [entry]
        par = {entry: -1}
        ecalls = {entry: 0.0}
        heap = [(-e_ct, -e_nc, g, entry) for g, e_nc, e_ct in out_edges[entry] if g in inside]
        heapq.heapify(heap)
        while heap:
            neg_ct, neg_nc, g, f = heapq.heappop(heap)
            if g in par:
                continue
            par[g] = f
            ecalls[g] = -neg_nc
            order.append(g)
            for h, e_nc, e_ct in out_edges[g]:
                if h in inside and h not in par:
                    heapq.heappush(heap, (-e_ct, -e_nc, h, g))
        sub = {m: tt[m] + ext_children[m] for m in order}
        for m in reversed(order):
            p = par[m]
            if p >= 0:
                sub[p] += sub[m]
        got = (order, par, ecalls, sub)
        layouts[entry] = got
        return got

    total = sum(T[c] * root_w[c] / z[c] for c in range(ncomp) if not by_count[c])
    threshold = total * min_fraction
    # heap of calls into a component still to lay out:
    # (-time, seq, parent node, component, entry member, scale, calls, depth)
    heap: list = []
    seq = 0
    for c in range(ncomp):
        if root_w[c] > 0 and not by_count[c]:
            scale = root_w[c] / z[c]
            e = root_entry[c]
            calls = max(nc[e] - in_nc[e], 1.0)
            heapq.heappush(heap, (-T[c] * scale, seq, -1, c, e, scale, calls, 0))
            seq += 1
    depths: List[int] = []  # per node
    while heap:
        neg_t, _s, parent, c, entry, scale, calls, depth = heapq.heappop(heap)
        if parent >= 0 and (len(tree) >= max_nodes or depth >= MAX_ESTIMATED_DEPTH):
            tree.fold(parent, -neg_t)
            continue
        order, par, ecalls, sub = layout(c, entry)
        placed = {}
        for m in order:
            p = par[m]
            if p >= 0:
                pnode = placed.get(p)
                if pnode is None:
                    continue  # its parent member was folded with it
                if (sub[m] * scale < threshold or len(tree) >= max_nodes
                        or depths[pnode] + 1 >= MAX_ESTIMATED_DEPTH):
                    tree.fold(pnode, sub[m] * scale)
                    continue
                node = tree.add(pnode, m, ecalls[m] * scale, tt[m] * scale, sub[m] * scale)
                depths.append(depths[pnode] + 1)
            else:
                node = tree.add(parent, m, calls, tt[m] * scale, sub[m] * scale)
                depths.append(depth)
            placed[m] = node
            # calls out of the component
            for g, e_nc, e_ct in out_edges[m]:
                cg = comp[g]
                if cg == c:
                    continue
                child_scale = scale * share(m, g, e_nc, e_ct)
                child_t = T[cg] * child_scale
                if child_t <= 0.0:
                    continue
                if child_t < threshold:
                    tree.fold(node, child_t)
                    continue
                heapq.heappush(heap, (-child_t, seq, node, cg, g, child_scale, e_nc * scale,
                                      depths[node] + 1))
                seq += 1
    tree = _reorder(tree)
    tree.min_fraction = min_fraction
    totals = tree.totals()
    tree.cum_time = list(totals)
    return tree


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
        if tree.folded[n]:
            out.fold(new, tree.folded[n], tree.folded_count[n])
        for c in reversed(visit_order(tree.children[n])):
            stack.append((c, new))
    return out


def _sort_key(key: FuncKey):
    return (str(key[0]), int(key[1]) if isinstance(key[1], int) else 0, str(key[2]))

