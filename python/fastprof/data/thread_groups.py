"""Groups of alike-named threads for the views (their names: thread_names.py).

Programs start hundreds of threads that differ only in a number
(``Thread-12 (process_request_thread)``): ``thread_pattern`` names the
group (``Thread-N (process_request_thread)``), and the views and
``--per-thread`` show one line or table per group.
"""

import re

from .model import merge_stats


def thread_pattern(name):
    """The name with every number replaced by ``N``: ``Thread-12
    (process_request_thread)`` -> ``Thread-N (process_request_thread)``,
    ``ThreadPoolExecutor-0_3`` -> ``ThreadPoolExecutor-N_N``."""
    return re.sub(r"\d+", "N", name)


def _tottime(thread):
    return sum(v[2] for v in thread.get("stats", {}).values())


def group_threads(threads):
    """``(pattern, threads)`` per name pattern, busiest group first (summed
    tottime, then size); threads keep their order inside a group."""
    groups = {}
    for t in threads:
        groups.setdefault(thread_pattern(str(t.get("name"))), []).append(t)
    busy = {p: sum(_tottime(t) for t in ts) for p, ts in groups.items()}
    return sorted(groups.items(), key=lambda kv: (-busy[kv[0]], -len(kv[1]), kv[0]))


def merged_thread_stats(threads):
    """The pstats dict of several threads together (summed as merge does)."""
    return merge_stats([t["stats"] for t in threads])


def per_thread_tables(thread_stats):
    """``(title, id, stats)`` per table ``--per-thread`` prints, from
    ``Profile.thread_stats()``: one per thread, except that threads whose
    names differ only in numbers share one (``id`` None, stats summed), in
    the order their first thread appears."""
    groups = {}
    for tid, ident, name, stats in thread_stats:
        groups.setdefault(thread_pattern(str(name)), []).append((tid, ident, name, stats))
    out = []
    for pattern, members in groups.items():
        if len(members) == 1:
            tid, ident, name, stats = members[0]
            out.append(("thread %s (id %d, ident %d)" % (name, tid, ident), tid, stats))
            continue
        ids = [m[0] for m in members]
        out.append(("%d threads %s (ids %s), stats summed" % (
            len(members), pattern, _id_ranges(ids)), None, merge_stats([m[3] for m in members])))
    return out


def _id_ranges(ids):
    """``1-3, 7`` for [1, 2, 3, 7]."""
    ids = sorted(ids)
    parts = []
    start = prev = ids[0]
    for i in ids[1:] + [None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else "%d-%d" % (start, prev))
        if i is not None:
            start = prev = i
    return ", ".join(parts)
