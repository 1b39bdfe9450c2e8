"""``fastprof merge``: add profiles together.

- pstats table: per function, calls, primitive calls, tottime and cumtime
  are summed; so is each caller edge (as ``pstats.Stats.add`` does).
- call paths: kept only when *every* input has them; the trees are merged
  path by path (a node of one tree and a node of another with the same
  chain of functions from the root become one node, their calls and times
  summed).  If some input lacks call paths the result has none (a partial
  tree would contradict the table).
- per-thread stats: every input's threads are kept side by side (they are
  different threads of different runs), renumbered so ids stay unique;
  with several inputs each name gets `` [input N]``.
- clock: kept when all inputs agree, else dropped (with a warning from the
  command line: adding wall time to CPU time makes little sense).
- C functions whose name carries an address (``<built-in method __new__ of
  type object at 0x7f...>``: a new address every run) are one function:
  rows that differ only in the address are summed, under the key (address
  included) of the *first* input that has one, in table, callers and call
  paths alike.  Every other key is kept as is.
- qualified names (``qualnames``): the union; differing names of one key are
  listed together.
"""

from typing import Dict, List, Optional, Sequence, Tuple

from .names import match_key, merge_qualnames
from .profile_file import CallPaths, FuncKey, ProfileData


class _KeyChooser:
    """The key written for each function: the first one seen of its match_key."""

    def __init__(self):
        self.first: Dict[FuncKey, FuncKey] = {}

    def __call__(self, key: FuncKey) -> FuncKey:
        key = tuple(key)
        return self.first.setdefault(match_key(key), key)


def merge_stats(tables: Sequence[Dict[FuncKey, tuple]],
                keys: Optional[_KeyChooser] = None) -> Dict[FuncKey, tuple]:
    out: Dict[FuncKey, list] = {}
    keys = keys if keys is not None else _KeyChooser()
    for table in tables:
        for key, (cc, nc, tt, ct, callers) in table.items():
            key = keys(key)
            cur = out.get(key)
            if cur is None:
                cur = out[key] = [0, 0, 0.0, 0.0, {}]
            cur[0] += cc
            cur[1] += nc
            cur[2] += tt
            cur[3] += ct
            edges = cur[4]
            for caller, edge in callers.items():
                caller = keys(caller)
                prev = edges.get(caller)
                edges[caller] = tuple(edge) if prev is None else tuple(a + b for a, b in zip(prev, edge))
    return {k: (v[0], v[1], v[2], v[3], v[4]) for k, v in out.items()}


def merge_callpaths(trees: Sequence[CallPaths], keys: Optional[_KeyChooser] = None) -> CallPaths:
    keys = keys if keys is not None else _KeyChooser()
    functions: List[FuncKey] = []
    func_index: Dict[FuncKey, int] = {}
    nodes: List[list] = []
    node_index: Dict[Tuple[int, int], int] = {}  # (merged parent, merged function) -> merged node
    for cp in trees:
        local = []  # this tree's node index -> merged node index
        for parent, func, calls, tottime, cumtime in cp.nodes:
            key = keys(cp.functions[func])
            f = func_index.get(key)
            if f is None:
                f = func_index[key] = len(functions)
                functions.append(key)
            mp = local[parent] if parent >= 0 else -1
            n = node_index.get((mp, f))
            if n is None:
                n = node_index[(mp, f)] = len(nodes)
                nodes.append([mp, f, 0, 0.0, 0.0])
            node = nodes[n]
            node[2] += calls
            node[3] += tottime
            node[4] += cumtime
            local.append(n)
    return CallPaths(functions, [tuple(n) for n in nodes])


def merge_profiles(profiles: Sequence[ProfileData]) -> ProfileData:
    """The sum of *profiles* (at least one)."""
    if not profiles:
        raise ValueError("nothing to merge")
    keys = _KeyChooser()
    data = ProfileData(merge_stats([p.stats for p in profiles], keys))
    if all(p.callpaths is not None for p in profiles):
        data.callpaths = merge_callpaths([p.callpaths for p in profiles], keys)
    data.qualnames = merge_qualnames([p.qualnames for p in profiles])
    clocks = {p.clock for p in profiles}
    if len(clocks) == 1:
        data.clock = clocks.pop()
    next_id = 0
    for i, p in enumerate(profiles, 1):
        for t in p.threads:
            t = dict(t)
            t["id"] = next_id
            next_id += 1
            if len(profiles) > 1:
                t["name"] = "%s [input %d]" % (t.get("name", "thread"), i)
            data.threads.append(t)
    return data


def clocks_differ(profiles: Sequence[ProfileData]) -> bool:
    """True if the inputs name two different clocks (cProfile files name none)."""
    return len({p.clock for p in profiles if p.clock is not None}) > 1
