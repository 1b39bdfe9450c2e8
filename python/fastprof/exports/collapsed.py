"""Collapsed ("folded") stacks for flamegraph.pl, inferno and speedscope.

One line per call path: frames from the root down, joined by ``;``, a space,
then the *self* time of the last frame along that path in integer
microseconds.  Frames are ``name (file:line)`` for Python functions (file
relative to its sys.path entry when it sits under one) and the cProfile name
for C functions.

A profile weighed by bytes (``fastprof convert --weight allocated``) has
bytes as its weights.

Rounding is carried from line to line, so the weights add up to the total
profiled time even when most paths take less than a microsecond; paths whose
weight rounds to 0 are left out (flamegraph.pl would drop them anyway).

Paths below *min_fraction* of the total are left out and their time is
added to their caller's line (the format has no comments: the CLI says so
on stderr), so the weights still add up to the total.

A cProfile file without call paths gets the tree estimated from its callers
(see ``fastprof.data.calltree``); the CLI says so on stderr.
"""

from typing import Iterator, Optional, TextIO, Tuple

from ..data.calltree import build_tree
from ..data.names import func_label
from ..data.profile_file import ProfileData


def _frame(key, qualnames=None) -> str:
    # ';' separates frames and the last space separates the weight: keep
    # both out of the frame text (spaces inside are fine for the parsers,
    # which split at the *last* space).
    return func_label(key, qualnames=qualnames).replace(";", ",").replace("\n", " ")


def collapsed_lines(data: ProfileData, unit: float = 1e-6,
                    min_fraction: float = 0.0) -> Iterator[Tuple[str, int]]:
    """(stack, weight) pairs; weight is self time (plus the time of the paths
    folded into it) in multiples of *unit* seconds."""
    tree = build_tree(data, min_fraction)
    labels = [_frame(k, data.qualnames) for k in tree.functions]
    acc = 0.0
    emitted = 0
    path = []  # labels from the root to the current node
    stack = [(r, 0) for r in reversed(tree.roots)]  # (node, depth)
    while stack:
        n, depth = stack.pop()
        del path[depth:]
        path.append(labels[tree.func[n]])
        acc += (tree.self_time[n] + tree.folded[n]) / unit
        weight = int(round(acc)) - emitted
        if weight > 0:
            emitted += weight
            yield ";".join(path), weight
        for c in reversed(tree.children[n]):
            stack.append((c, depth + 1))


def write_collapsed(data: ProfileData, out: TextIO, title: Optional[str] = None,
                    min_fraction: float = 0.0) -> None:
    """Write *data* as folded stacks (which have no title)."""
    chunk = []
    # a profile weighed by bytes (memory.weighed_by_bytes) is written in bytes
    unit = 1.0 if data.weight else 1e-6
    for stack, weight in collapsed_lines(data, unit=unit, min_fraction=min_fraction):
        chunk.append("%s %d\n" % (stack, weight))
        if len(chunk) >= 4096:
            out.write("".join(chunk))
            chunk = []
    out.write("".join(chunk))
