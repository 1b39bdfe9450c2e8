"""The timing mode's summaries: medians, slowdowns, ns/event and fractions
from a run's raw rows (what the tables, the plot and a stored results file
are made of), and a results file without its raw rows."""

import statistics

import workloads

from harness.timing_modes import CPU_MODE, FAST_MODE, LINE_PROFILER, LINES_MODE, METRICS, ONLY_MODE, workload_modes


def _median(xs):
    return statistics.median(xs) if xs else None


def summarize(record, metric="wall"):
    """Medians, slowdowns, ns/event and fractions from the raw rows, by ``metric``."""
    field = METRICS[metric]
    out = {"metric": metric, "workloads": {}}
    raw = [dict(r, seconds=r[field]) for r in record["raw"] if field in r]
    fractions, floor_fractions = {}, {}
    for name in record["workloads"]:
        rows = [r for r in raw if r["workload"] == name]
        events = _median([2 * r["calls"] for r in rows if r["mode"] == "cprofile" and "calls" in r])
        w = {"events": events, "modes": {}}
        by_mode = {}
        for r in rows:
            by_mode.setdefault(r["mode"], []).append(r)
        t_none = _median([r["seconds"] for r in by_mode.get("none", [])])
        for mode in workload_modes(name, record["modes"]):
            ts = [r["seconds"] for r in by_mode.get(mode, [])]
            if not ts:
                continue
            m = {"median": _median(ts), "min": min(ts), "max": max(ts), "n": len(ts)}
            if t_none and mode != "none":
                m["slowdown"] = m["median"] / t_none
                m["added"] = m["median"] - t_none
                if events:
                    m["ns_per_event"] = m["added"] / events * 1e9
            w["modes"][mode] = m
        out["workloads"][name] = w
        cp, fp = w["modes"].get("cprofile"), w["modes"].get("fastprof")
        if name not in workloads.NAMES:
            continue  # `scoped`: reported apart (summarize_scope), not in the medians
        if cp and fp and t_none and cp["added"] > 0:
            w["fraction"] = fp["added"] / cp["added"]
            fractions[name] = w["fraction"]
            # paired per repeat (the runs of one repeat are close in time): spread
            per = []
            for rep in sorted({r["repeat"] for r in rows}):
                t = {r["mode"]: r["seconds"] for r in rows if r["repeat"] == rep}
                if {"none", "cprofile", "fastprof"} <= set(t) and t["cprofile"] > t["none"]:
                    per.append((t["fastprof"] - t["none"]) / (t["cprofile"] - t["none"]))
            if per:
                w["fraction_per_repeat"] = per
        cpu = w["modes"].get(CPU_MODE)
        if cpu and cp and t_none and cp["added"] > 0:
            w["fraction_cpu_clock"] = cpu["added"] / cp["added"]
        floor = w["modes"].get("floor")
        if floor and cp and t_none and cp["added"] > 0:
            w["floor_fraction"] = floor["added"] / cp["added"]
            floor_fractions[name] = w["floor_fraction"]
    if fractions:
        worst = max(fractions, key=fractions.get)
        out["median_fraction"] = statistics.median(fractions.values())
        out["worst_fraction"] = fractions[worst]
        out["worst_workload"] = worst
        out["ranked"] = sorted(fractions, key=fractions.get, reverse=True)
    core = [w for n, w in out["workloads"].items() if n in workloads.NAMES]
    for mode, key in ((FAST_MODE, "fast"), ("cprofile", "cprofile"), ("fastprof", "fastprof"),
                      ("floor", "floor"), (LINES_MODE, "lines"), (LINE_PROFILER, "line_profiler")):
        xs = [w["modes"][mode]["slowdown"] for w in core if "slowdown" in w["modes"].get(mode, {})]
        if xs:  # slowdown over the unprofiled run (the goal of --fast is stated so)
            out[key + "_median_slowdown"] = statistics.median(xs)
            out[key + "_worst_slowdown"] = max(xs)
    wins = [w["modes"][LINES_MODE]["slowdown"] < w["modes"][LINE_PROFILER]["slowdown"]
            for w in core if "slowdown" in w["modes"].get(LINES_MODE, {})
            and "slowdown" in w["modes"].get(LINE_PROFILER, {})]
    if wins:
        out["lines_below_line_profiler"] = [sum(wins), len(wins)]
    scope = summarize_scope(out["workloads"])
    if scope:
        out["scope"] = scope
    if floor_fractions:
        out["median_floor_fraction"] = statistics.median(floor_fractions.values())
        out["worst_floor_fraction"] = max(floor_fractions.values())
    return out


def summarize_scope(by_workload):
    """Slowdowns of the --only benchmark (the first SCOPE_NAMES workload that ran)."""
    for name in workloads.SCOPE_NAMES:
        w = by_workload.get(name)
        if not w or "none" not in w["modes"]:
            continue
        out = {"workload": name, "none_seconds": w["modes"]["none"]["median"]}
        for mode in ("cprofile", "fastprof", FAST_MODE, ONLY_MODE):
            if "slowdown" in w["modes"].get(mode, {}):
                out[mode] = w["modes"][mode]["slowdown"]
        return out
    return None


def summary_only(results):
    """``results`` without the raw rows (one per measurement): what a stored
    results file keeps.  Rerunning makes the rows again.  The numbers keep
    every digit, so the tables print the same from it as from the run."""
    return dict(results, runs=[{k: v for k, v in r.items() if k != "raw"} for r in results["runs"]])
