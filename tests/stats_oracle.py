"""The Python loop ``profiler.entries_to_stats`` was before its C
replacement (csrc/fpy_stats_dict.c): the oracle of test_stats_c and of the
per-test files' test in test_pytest_plugin (imported by its child
conftest). Plain Python, no fastprof import."""


def py_label(code):
    if isinstance(code, str):
        return ("~", 0, code)
    return (code.co_filename, code.co_firstlineno, code.co_name)


def py_entries_to_stats(entries):
    """pstats rows of a profiler's entries, as the Python loop made them."""
    stats, labels = {}, {}
    for code, nc, rc, ct, tt, _calls in entries:
        func = labels[id(code)] = py_label(code)
        cc = nc - rc
        prev = stats.get(func)
        if prev is None:
            stats[func] = cc, nc, tt, ct, {}
        else:
            stats[func] = cc + prev[0], nc + prev[1], tt + prev[2], ct + prev[3], prev[4]
    for code, _nc, _rc, _ct, _tt, calls in entries:
        if calls:
            func = labels[id(code)]
            for code, nc, rc, ct, tt in calls:
                callee = labels.get(id(code))
                callee = stats.get(callee if callee is not None else py_label(code))
                if callee is None:
                    continue
                callers = callee[4]
                cc = nc - rc
                if func in callers:
                    prev = callers[func]
                    nc += prev[0]
                    cc += prev[1]
                    tt += prev[2]
                    ct += prev[3]
                callers[func] = nc, cc, tt, ct
    return stats
