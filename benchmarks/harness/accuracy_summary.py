"""The accuracy mode's summaries: per workload, each profile's distance
from each reference (TVD), the reference's noise, the profile's total over
the unprofiled run; per interpreter, medians and worst over the workloads.
They are what the tables print and what a stored results file keeps."""

import statistics

from harness.distance import attribute_c_time, coarse, compare, match_sampler_keys, shares, top_shares, tvd


def summarize_workload(entry, kinds, modes):
    """TVDs, noise floors and total/wall ratios of one workload's runs."""
    runs = entry["runs"]
    s = {}
    walls = [r["seconds"] for r in runs.get("none", [])]
    cpus = [r["cpu_seconds"] for r in runs.get("none", [])]
    if walls:
        s["none_seconds"] = statistics.median(walls)
        s["none_cpu_seconds"] = statistics.median(cpus)
    sums = {r["checksum"] for mode, rs in runs.items() if mode != "calibrate" for r in rs}
    s["checksums_agree"] = len(sums) <= 1
    for kind in kinds:
        rs = runs.get(kind, [])
        if not rs:
            continue
        coarse_names = kind == "stdlib"
        ref = rs[0]["counts"]
        k = {"samples": rs[0]["samples"], "rate_achieved": round(rs[0]["rate_achieved"], 1),
             "top": top_shares(coarse(ref) if coarse_names else ref), "tvd": {}}
        if len(rs) > 1:
            a, b = (coarse(r["counts"]) if coarse_names else r["counts"] for r in rs[:2])
            k["noise"] = tvd(shares(a), shares(b))
            k["sampled_over_none"] = rs[0]["seconds"] / s["none_seconds"] if walls else None
        pooled = {}
        for r in rs[:2]:
            for key, n in r["counts"].items():
                pooled[key] = pooled.get(key, 0) + n
        k["tvd_pooled"] = {}
        for mode in modes:
            prs = runs.get(mode, [])
            if prs:
                k["tvd"][mode] = compare(prs[0]["self"], prs[0]["c_edges"], ref, coarse_names)
                k["tvd_pooled"][mode] = compare(prs[0]["self"], prs[0]["c_edges"], pooled, coarse_names)
        s[kind] = k
    if "timed" in s:   # how far each sampler is from the exact reference
        exact = shares(runs["timed"][0]["counts"])
        s["timed"]["samplers"] = {
            kind: tvd(shares(coarse(exact)), shares(coarse(runs[kind][0]["counts"]))) if kind == "stdlib"
            else tvd(exact, shares(match_sampler_keys(runs[kind][0]["counts"], set(exact))))
            for kind in kinds if kind != "timed" and runs.get(kind)}
    for mode in modes:
        prs = runs.get(mode, [])
        if prs and walls:
            p = prs[0]
            s.setdefault("profiles", {})[mode] = {
                "total_over_wall": p["total"] / s["none_seconds"],
                "region_over_wall": p["seconds"] / s["none_seconds"],
                "top": top_shares(attribute_c_time(p["self"], p["c_edges"])),
            }
    return s


def references(record):
    """What the profiles were held to: the samplers, then ``timed`` where a
    workload timed its own phases (``timed_run``)."""
    timed = any("timed" in w.get("summary", {}) for w in record.get("workloads", {}).values())
    return record.get("samplers", []) + (["timed"] if timed else [])


def summarize_record(record):
    """Median and worst over the workloads, per sampler and mode."""
    out = {}
    for kind in references(record):
        rows = [w["summary"][kind] for w in record["workloads"].values()
                if kind in w.get("summary", {})]
        k = {}
        noise = [r["noise"] for r in rows if "noise" in r]
        if noise:
            k["noise_median"], k["noise_worst"] = statistics.median(noise), max(noise)
        for mode in record.get("modes", []):
            d = [r["tvd"][mode] for r in rows if mode in r["tvd"]]
            ex = [r["tvd"][mode] - r["noise"] for r in rows if mode in r["tvd"] and "noise" in r]
            if d:
                k[mode] = {"median": statistics.median(d), "worst": max(d)}
            if ex:
                k[mode]["excess_median"] = statistics.median(ex)
                k[mode]["excess_worst"] = max(ex)
        out[kind] = k
    for mode in record.get("modes", []):
        ratios = [w["summary"]["profiles"][mode]["total_over_wall"] for w in record["workloads"].values()
                  if mode in w.get("summary", {}).get("profiles", {})]
        if ratios:
            out.setdefault("total_over_wall", {})[mode] = {"median": statistics.median(ratios),
                                                           "min": min(ratios), "max": max(ratios)}
    return out


def summary_only(results):
    """``results`` without the raw runs (every sample count, every profile's
    own times): what a stored results file keeps.  Rerunning makes them
    again.  The numbers keep every digit, so the tables print the same from
    it as from the run."""
    runs = []
    for record in results["runs"]:
        workloads = {name: {k: v for k, v in entry.items() if k != "runs"}
                     for name, entry in record.get("workloads", {}).items()}
        runs.append(dict(record, workloads=workloads))
    return dict(results, runs=runs)


def has_raw_runs(results):
    """Whether ``results`` holds the raw runs (a --raw file), not only summaries."""
    return any("runs" in entry for record in results["runs"] for entry in record.get("workloads", {}).values())
