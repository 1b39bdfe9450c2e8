"""Groups of alike-named threads for the views (their names: thread_names.py).

Programs start hundreds of threads that differ only in a number
(``Thread-12 (process_request_thread)``): ``thread_pattern`` names the
group (``Thread-N (process_request_thread)``), and the views and
``--per-thread`` show one line or table per group.

A profiler folds the records of ended threads beyond the newest few into
one record per group (docs/threads-coroutines.md): in a file, such a
record has ``"group"`` (its pattern) and ``"threads"`` (how many threads
it sums) besides its name (``folded_name``); the views count it as that
many threads of its group.
"""

# The recording side imports this module while the program runs (a new
# thread's name is grouped as it starts): nothing here imports what the
# program may not have (re, typing); merge_stats is imported where used.


def thread_pattern(name):
    """The name with every number replaced by ``N``: ``Thread-12
    (process_request_thread)`` -> ``Thread-N (process_request_thread)``,
    ``ThreadPoolExecutor-0_3`` -> ``ThreadPoolExecutor-N_N``.  (A number:
    a run of decimal digits, what the regular expression ``\\d+`` takes.)"""
    out = []
    in_number = False
    for ch in name:
        if ch.isdecimal():
            if not in_number:
                out.append("N")
            in_number = True
        else:
            out.append(ch)
            in_number = False
    return "".join(out)


def folded_name(pattern, threads):
    """The name of the record that *threads* ended threads of group
    *pattern* were folded into: ``Thread-N (worker) x7994 ended``."""
    return "%s x%d ended" % (pattern, threads)


def thread_group(thread):
    """The group of a file's thread record: its ``group`` if it is a
    folded one, else its name's pattern."""
    return thread.get("group") or thread_pattern(str(thread.get("name")))


def thread_count(thread):
    """How many threads a file's thread record sums (a folded one: many)."""
    return int(thread.get("threads", 1))


def _tottime(thread):
    return sum(v[2] for v in thread.get("stats", {}).values())


def group_threads(threads):
    """``(pattern, threads)`` per name pattern, busiest group first (summed
    tottime, then how many threads); records keep their order inside a
    group (a folded record counts as its ``thread_count``)."""
    groups = {}
    for t in threads:
        groups.setdefault(thread_group(t), []).append(t)
    busy = {p: sum(_tottime(t) for t in ts) for p, ts in groups.items()}
    size = {p: sum(thread_count(t) for t in ts) for p, ts in groups.items()}
    return sorted(groups.items(), key=lambda kv: (-busy[kv[0]], -size[kv[0]], kv[0]))


def merged_thread_stats(threads):
    """The pstats dict of several threads together (summed as merge does)."""
    from .model import merge_stats  # (deferred: see the note at the top)
    return merge_stats([t["stats"] for t in threads])


def per_thread_tables(records):
    """``(title, id, stats)`` per table ``--per-thread`` prints, from
    ``Profile.thread_records()``: one per thread, except that threads whose
    names differ only in numbers share one (``id`` None, stats summed),
    the record their ended threads were folded into included, in the order
    their first thread appears."""
    groups = {}
    for t in records:
        groups.setdefault(thread_group(t), []).append(t)
    out = []
    for pattern, members in groups.items():
        if len(members) == 1 and "group" not in members[0]:
            t = members[0]
            out.append(("thread %s (id %d, ident %d)" % (t["name"], t["id"], t["ident"]), t["id"], t["stats"]))
            continue
        from .model import merge_stats  # (deferred: see the note at the top)
        ids = [t["id"] for t in members if "group" not in t]
        ended = sum(thread_count(t) for t in members if "group" in t)
        if len(ids) + ended == 1:  # one thread, ended before the newest 64
            out.append(("thread %s (ended earlier, folded)" % pattern, None, members[0]["stats"]))
            continue
        which = ["ids %s" % _id_ranges(ids)] if ids else []
        if ended:
            which.append("%d ended earlier, folded" % ended)
        out.append(("%d threads %s (%s), stats summed" % (
            len(ids) + ended, pattern, ", ".join(which)), None, merge_stats([t["stats"] for t in members])))
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
