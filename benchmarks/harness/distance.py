"""The accuracy mode's arithmetic: how far a profile's self-time shares are
from a reference's (a sampler's own samples, or a workload's own phase
timings), as a total-variation distance in points.  Pure functions of
pstats-style key texts (``file:line(name)``); nothing runs here.
"""

import os
import re


def key_text(filename, line, name):
    """A function's key as the workers write pstats keys: ``file:line(name)``."""
    return "%s:%d(%s)" % (filename, line, name)


_KEY = re.compile(r"^(.*):(\d+)\((.*)\)$")


def split_key(key):
    """(filename, line, name) of a key text."""
    m = _KEY.match(key)
    if not m:
        raise ValueError("not a key: %r" % (key,))
    return m.group(1), int(m.group(2)), m.group(3)


def is_c_key(key):
    """A C function (pstats file ``~``), which no sampler sees."""
    return key.startswith("~:")


def attribute_c_time(self_times, c_edges, max_passes=64):
    """Charge every C function's own time to its Python callers.

    ``self_times``: {key: own seconds}; ``c_edges``: [(caller, C callee,
    the callee's own seconds under that caller)].  A C function's own time
    is split among its callers in proportion to those edge times; a share
    landing on a C caller is passed on the same way (up to ``max_passes``
    hops: a cycle of C functions keeps what is left).  A C function with no
    recorded caller (or only zero-time edges) keeps its time under its own
    key.  Returns a new {key: seconds}; the total is unchanged.
    """
    into = {}
    for caller, callee, t in c_edges:
        into.setdefault(callee, []).append((caller, t))
    out = {k: t for k, t in self_times.items() if not is_c_key(k)}
    pending = {k: t for k, t in self_times.items() if is_c_key(k)}
    for _ in range(max_passes):
        moved = False
        nxt = {}
        for key, t in pending.items():
            edges = into.get(key, ())
            total = sum(et for _, et in edges if et > 0)
            if t == 0:
                continue
            if total <= 0:
                out[key] = out.get(key, 0.0) + t
                continue
            moved = True
            for caller, et in edges:
                if et <= 0:
                    continue
                share = t * et / total
                if is_c_key(caller):
                    nxt[caller] = nxt.get(caller, 0.0) + share
                else:
                    out[caller] = out.get(caller, 0.0) + share
        pending = nxt
        if not moved or not pending:
            break
    for key, t in pending.items():   # a C cycle: what is left stays where it is
        out[key] = out.get(key, 0.0) + t
    return out


def shares(times):
    """{key: fraction of the total}; negative times count as 0."""
    total = sum(max(t, 0.0) for t in times.values())
    if total <= 0:
        return {}
    return {k: max(t, 0.0) / total for k, t in times.items() if t > 0}


def tvd(a, b):
    """Total-variation distance between two share dicts, in points (0-100)."""
    return 50.0 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


def match_sampler_keys(sampler, profile_keys):
    """Rename a sampler's keys to the profile's where they differ only by line.

    A key whose (file, name) names exactly one of ``profile_keys`` with
    another first line (a decorated function, a build that numbers differently),
    among those no sampler key names exactly, takes that key; any other stays
    as it is (and counts as a difference).
    """
    by_name = {}
    for k in profile_keys:
        if is_c_key(k) or k in sampler:
            continue
        f, _, n = split_key(k)
        by_name.setdefault((f, n), []).append(k)
    out = {}
    for k, v in sampler.items():
        if k not in profile_keys:
            f, _, n = split_key(k)
            cands = by_name.get((f, n), [])
            if len(cands) == 1:
                k = cands[0]
        out[k] = out.get(k, 0) + v
    return out


def coarse(times):
    """Merge keys to (file base name, function name): how the stdlib sampler names frames."""
    out = {}
    for k, v in times.items():
        f, _, n = split_key(k)
        ck = "%s(%s)" % (os.path.basename(f), n)
        out[ck] = out.get(ck, 0) + v
    return out


def compare(profile_self, c_edges, sampler_counts, coarse_names=False):
    """TVD (points) between a profile's own times and a sampler's own counts.

    The profile's C time goes to its Python callers first (attribute_c_time);
    the sampler's keys are matched to the profile's (match_sampler_keys) or,
    with ``coarse_names``, both sides are merged by (base name, function name).
    """
    prof = attribute_c_time(profile_self, c_edges)
    if coarse_names:
        return tvd(shares(coarse(prof)), shares(coarse(sampler_counts)))
    samp = match_sampler_keys(sampler_counts, set(prof))
    return tvd(shares(prof), shares(samp))


def top_shares(times, n=8):
    """The ``n`` biggest shares, in percent, biggest first: [[key, percent]]."""
    s = shares(times)
    return [[k, round(100 * v, 2)] for k, v in sorted(s.items(), key=lambda kv: -kv[1])[:n]]
