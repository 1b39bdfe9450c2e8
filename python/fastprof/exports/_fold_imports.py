"""The import system's frames folded, for the HTML flame graph.

Each nested import adds the import system's chain between a module and the
next (``_find_and_load``, ``_find_and_load_unlocked``, ``_load_unlocked``,
``exec_module``, ``_call_with_frames_removed``, ``exec``...): a program
whose imports nest twenty deep gets a flame graph a hundred and fifty rows
tall, the program's own frames squeezed at the bottom.  Here each chain of
consecutive import-system frames is one node, the first one's (the
``_find_and_load`` an ``import`` statement calls), holding the whole
chain's own time; what the chain called hangs below it, calls of the same
function from the chain merged.  Every function's own time stays in the
tree, and totals are unchanged.
"""

from typing import Dict, List, Tuple

from ..data.calltree import CallTree
from ..data.model import FuncKey

IMPORT_FILES = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")
EXEC = ("~", 0, "<built-in method builtins.exec>")


def is_import_frame(key: FuncKey) -> bool:
    return str(key[0]) in IMPORT_FILES


def fold_import_frames(tree: CallTree) -> CallTree:
    """A copy of *tree* with each run of import-system frames (and the
    ``exec`` they call modules with) folded into its first frame; *tree*
    itself if it has none."""
    imp: List[bool] = [is_import_frame(k) for k in tree.functions]
    if not any(imp[f] for f in tree.func):
        return tree
    execs = [tuple(k) == EXEC for k in tree.functions]
    out = CallTree(tree.functions, tree.exact)
    out.min_fraction = tree.min_fraction
    n = len(tree)
    new = [-1] * n        # node -> its node in out
    in_run = [False] * n  # node is an import frame (or such an exec) of a folded run
    below: Dict[Tuple[int, int], int] = {}  # (out parent, function) -> out node
    for i in range(n):
        p, f = tree.parent[i], tree.func[i]
        if p >= 0 and in_run[p] and (imp[f] or execs[f]):
            head = new[p]
            new[i], in_run[i] = head, True
            out.self_time[head] += tree.self_time[i]
            out.folded[head] += tree.folded[i]
            out.folded_count[head] += tree.folded_count[i]
            continue
        parent = new[p] if p >= 0 else -1
        k = below.get((parent, f)) if parent >= 0 else None
        if k is None:  # (siblings meet only below a folded run)
            k = out.add(parent, f, tree.calls[i], tree.self_time[i], tree.cum_time[i])
            out.folded[k] = tree.folded[i]
            out.folded_count[k] = tree.folded_count[i]
            if parent >= 0:
                below[(parent, f)] = k
        else:
            out.calls[k] += tree.calls[i]
            out.self_time[k] += tree.self_time[i]
            out.cum_time[k] += tree.cum_time[i]
            out.folded[k] += tree.folded[i]
            out.folded_count[k] += tree.folded_count[i]
        new[i], in_run[i] = k, imp[f]
    out._total = None
    return out
