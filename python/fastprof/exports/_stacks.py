"""Weighted call stacks for the sample-based formats (pprof, gecko).

Those formats hold samples: a stack of functions, root to leaf, with values.
A deterministic profile becomes one sample per node of its calling-context
tree (``calltree``): the node's path is the stack, its self time (plus the time
of the paths folded into it) is the time, and its calls are the calls.

Calls are apportioned so that, summed per function over all samples, they
are exactly the profile's (cProfile's) call counts: each function's count is
spread over its nodes in proportion to the node's calls, in whole numbers
(largest remainder).  With recorded call paths that is the recorded counts
themselves; an estimated tree has fractional counts and leaves out thin
branches, so a function without a node of its own gets a sample of zero time
below its busiest caller (or alone, as a root).
"""

from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

# The one import of the call-tree module by the sample formats.
from ..data.calltree import CallTree, build_tree, tree_from_callers
from ..data.memory import FIELDS
from ..data.profile_file import FuncKey, ProfileData


class Sample(NamedTuple):
    stack: Tuple[int, ...]  # function indices, root first
    calls: int
    seconds: float


class Stacks(NamedTuple):
    functions: List[FuncKey]
    samples: List[Sample]
    exact: bool  # False: the stacks were estimated from the caller graph
    # memory profiling with call paths: per sample, its path's own counts
    # (memory.FIELDS' order; zeros for a sample of no node), else None
    memory: Optional[List[tuple]] = None


def profile_stacks(data: ProfileData) -> Stacks:
    """The stacks of the whole profile: the recorded call paths if any, else
    estimated; with the recorded paths' memory if they hold it (the exact
    tree's nodes are the call paths' nodes, in order, one sample each)."""
    stacks = tree_stacks(build_tree(data), data.stats)
    cp = data.callpaths
    if stacks.exact and cp is not None and cp.memory is not None:
        none = (0,) * len(FIELDS)
        memory = list(cp.memory) + [none] * (len(stacks.samples) - len(cp.memory))
        stacks = stacks._replace(memory=memory)
    return stacks


def thread_stacks(data: ProfileData) -> List[Tuple[dict, Stacks]]:
    """Per profiled thread (``data.threads``): its record and its stacks.

    The call paths a file records are those of all threads together, so a
    thread's stacks are estimated from its own caller graph, unless it is
    the only thread (then they are the recorded paths).  Empty when the
    profile has no per-thread data.
    """
    if len(data.threads) == 1:
        return [(data.threads[0], profile_stacks(data))]
    out = []
    for t in data.threads:
        stats = t.get("stats") or {}
        out.append((t, tree_stacks(tree_from_callers(stats), stats)))
    return out


def tree_stacks(tree: CallTree, stats: Dict[FuncKey, tuple]) -> Stacks:
    functions = list(tree.functions)
    index = {k: i for i, k in enumerate(functions)}
    nodes_of: Dict[int, List[int]] = {}
    for n, f in enumerate(tree.func):
        nodes_of.setdefault(f, []).append(n)
    calls = [0] * len(tree)
    for key, row in stats.items():
        nodes = nodes_of.get(index.get(key, -1), ())
        for n, c in zip(nodes, _apportion(int(row[1]), [tree.calls[n] for n in nodes])):
            calls[n] = c

    samples = [Sample(tuple(tree.path(n)), calls[n], tree.self_time[n] + tree.folded[n])
               for n in range(len(tree))]

    # functions the tree has no node for (an estimated tree's thin branches)
    for key in sorted(stats, key=_order):
        nc = int(stats[key][1])
        f = index.get(key)
        if (f is not None and f in nodes_of) or nc <= 0:
            continue
        if f is None:
            f = index[key] = len(functions)
            functions.append(key)
        samples.append(Sample(_below_caller(key, stats, index, nodes_of, tree, calls) + (f,), nc, 0.0))
    return Stacks(functions, samples, tree.exact)


def _apportion(total: int, weights: Sequence[float]) -> List[int]:
    """*total* split over *weights* in whole numbers (largest remainder)."""
    if not weights:
        return []
    w_sum = float(sum(max(0.0, w) for w in weights))
    if w_sum <= 0.0:
        return [total] + [0] * (len(weights) - 1)
    quotas = [total * max(0.0, w) / w_sum for w in weights]
    out = [int(q) for q in quotas]
    left = total - sum(out)
    by_remainder = sorted(range(len(weights)), key=lambda i: (out[i] - quotas[i], i))
    for i in by_remainder[:left]:
        out[i] += 1
    return out


def _below_caller(key: FuncKey, stats, index, nodes_of, tree: CallTree, calls: List[int]) -> Tuple[int, ...]:
    """The stack of the busiest node of *key*'s busiest caller that has one, or ()."""
    callers = stats[key][4]
    for caller in sorted(callers, key=lambda c: (-callers[c][0], _order(c))):
        nodes = nodes_of.get(index.get(caller, -1))
        if nodes and caller != key:
            best = max(nodes, key=lambda n: (calls[n], -n))
            return tuple(tree.path(best))
    return ()


def _order(key: FuncKey):
    return (str(key[0]), key[1] if isinstance(key[1], int) else 0, str(key[2]))
