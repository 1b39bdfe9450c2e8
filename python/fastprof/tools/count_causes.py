"""Why a test's call counts varied with the code unchanged, and the one-line
fix: what ``pytest --fastprof-counts`` prints under such a test instead of
leaving its reader with a wall of changed edges (docs/gate.md).

The cause is read from the changed entries (``counts.scheduling_kind``:
waits, socket and pipe reads, locks; ``random``) and from what the gate saw
of the test (threads it left running); a test none of whose changes look like
that, and that never varied while its baseline was learned, gets no cause:
its change is taken for a real one.
"""

import math
from typing import List, Mapping, Optional, Tuple

from .counts import EDGE, THREADS, Change, Count, bounds, counts_only, is_bytes, is_meta, scheduling_kind

SKIP_MARK = "@pytest.mark.fastprof_counts_skip"
TOLERANCE_MARK = "@pytest.mark.fastprof_counts_tolerance(%d)"


def _shown(change: Change) -> str:
    callee = change.entry.rsplit(EDGE, 1)[-1]
    if change.learned is not None and change.new in change.learned:
        return "%s varied %d..%d" % ((callee,) + change.learned)   # a range, not a change
    return "%s %d -> %d" % (callee, change.old, change.new)


def tolerance_needed(changes: List[Change]) -> int:
    """The per-test tolerance (percent, rounded up to a multiple of 5) that
    would have accepted *changes*; 100 for an entry that appeared or went."""
    worst = 0.0
    for c in changes:
        if not c.old or not c.new:
            return 100
        worst = max(worst, abs(c.delta) * 100.0 / c.old)
    return max(5, int(math.ceil(worst / 5.0)) * 5)


def _varied(old: Mapping[str, Count]) -> bool:
    return any(not is_meta(e) and bounds(c)[0] != bounds(c)[1] for e, c in old.items())


def diagnose(changes: List[Change], old: Mapping[str, Count], new: Mapping[str, int],
             moved: bool = True) -> Optional[Tuple[str, str]]:
    """(likely cause, fix) of the *changes* of a test (its baseline *old*,
    this run's table *new*), or None when they look like a real change;
    *moved*: the changes are beyond what was learned (else: the ranges
    learned).  Bytes entries are no evidence either way (they vary by
    nature): left out."""
    changes = [c for c in changes if not is_bytes(c.entry)]
    if not changes:
        return None
    old, new = counts_only(old), counts_only(new)
    left = max(old.get(THREADS, 0), new.get(THREADS, 0))
    kinds = {}
    for c in changes:
        kind = scheduling_kind(c.entry)
        if kind is None and ("random.py:" in c.entry or "'_random.Random'" in c.entry):
            kind = "random"
        kinds.setdefault(kind, c)
    by_nature = None not in kinds
    if by_nature is False and len(kinds) == 1:
        # the work that follows a noisy count moved: the kind of the counts
        # learned as ranges says why
        for entry, count in sorted(old.items()):
            kind = None if is_meta(entry) or not isinstance(count, tuple) else scheduling_kind(entry)
            if kind is not None:
                kinds.setdefault(kind, Change(entry, count[0], count[1], count))
    # a change of counts that were exact while learned is taken for a real
    # one, even in a test some of whose other counts vary
    if not (left or by_nature or any(c.learned is not None for c in changes)
            or (not moved and _varied(old))):
        return None
    tolerance = TOLERANCE_MARK % tolerance_needed(changes)
    if left:
        return ("an unjoined thread: the test leaves %d thread%s running after its teardown"
                % (left, "" if left == 1 else "s"),
                "join the thread in the test or its fixture's teardown, or mark it %s" % SKIP_MARK)
    if "wait" in kinds:
        return ("polling: it waits with a timeout, a number of times that follows the machine's "
                "speed (%s)" % _shown(kinds["wait"]),
                "wait without a timeout (Queue.get(), Event.wait(), Thread.join()), or mark it %s"
                % tolerance)
    if "io" in kinds:
        return ("I/O chunking: a socket or pipe read returns what has arrived so far (%s)"
                % _shown(kinds["io"]),
                "mark it %s" % tolerance)
    if "lock" in kinds:
        return ("lock contention between threads (%s)" % _shown(kinds["lock"]),
                "mark it %s" % tolerance)
    if "random" in kinds:
        return ("random numbers from a generator the gate does not seed (%s): a random.Random() "
                "of the test's own, or --fastprof-counts-no-seed" % _shown(kinds["random"]),
                "seed that generator (random.Random(0)), or mark it %s" % tolerance)
    if not moved:
        return ("timing, or state that earlier tests leave", "mark it %s" % tolerance)
    return ("its counts varied while its baseline was learned and now moved beyond that range",
            "learn more runs (--fastprof-counts-update --fastprof-counts-runs 5), or mark it %s"
            % tolerance)
