"""The accuracy mode's tables: one markdown table per reference (each
sampler, and a workload's own phase timings) for one interpreter, made from
the summaries (accuracy_summary.py), so a stored results file prints the same."""

from harness.accuracy_summary import references
from harness.common import md_row

MODE_LABELS = {"cprofile": "cProfile", "fastprof": "fastprof",
               "fastprof-raw": "fastprof compensate=False"}


def markdown_record(record):
    """One markdown table per sampler for one interpreter."""
    lines = []
    modes = record.get("modes", [])
    for kind in references(record):
        if kind == "timed":
            lines.append("Python %s, the exact reference (the workload's phases timed unprofiled, "
                         "timed_run; noise = its own second run): TVD in points" % record["python"])
        else:
            lines.append("Python %s, sampler %s%s: TVD in points (noise = the sampler against its "
                         "own second run); total/wall = the profile's total over the unprofiled run"
                         % (record["python"], kind, " (" + record["py_spy_version"] + ")"
                            if kind == "py-spy" and record.get("py_spy_version") else ""))
        lines.append("")
        head = ["workload", "samples", "noise"] + ["TVD %s" % MODE_LABELS[m] for m in modes] \
            + ["total/wall %s" % MODE_LABELS[m] for m in modes]
        lines.append(md_row(head))
        lines.append("|" + "---|" * len(head))
        for name, w in record["workloads"].items():
            s = w.get("summary", {})
            k = s.get(kind)
            if not k and kind == "timed":   # (only the workloads that time their phases)
                continue
            if not k:
                lines.append("| %s | failed |%s" % (name, " |" * (len(head) - 2)))
                continue
            row = [name, "exact" if kind == "timed" else str(k["samples"]), _pts(k.get("noise"))]
            row += [_pts(k["tvd"].get(m)) for m in modes]
            row += ["%.2fx" % s["profiles"][m]["total_over_wall"] if m in s.get("profiles", {}) else "-"
                    for m in modes]
            lines.append(md_row(row))
        sm = record.get("summary", {}).get(kind, {})
        tw = record.get("summary", {}).get("total_over_wall", {})
        for label, key, twkey in (("**median**", "median", "median"), ("**worst**", "worst", "max")):
            row = [label, "", _pts(sm.get("noise_" + key))]
            row += [_pts(sm.get(m, {}).get(key)) for m in modes]
            row += ["%.2fx" % tw[m][twkey] if m in tw and kind != "timed" else "-" for m in modes]
            lines.append(md_row(row))
        row = ["**excess over noise** (median / worst)", "", ""]
        row += ["%s / %s" % (_pts(sm.get(m, {}).get("excess_median")), _pts(sm.get(m, {}).get("excess_worst")))
                for m in modes]
        row += [""] * len(modes)
        lines.append(md_row(row))
        if kind == "timed":
            for name, w in record["workloads"].items():
                far = w.get("summary", {}).get("timed", {}).get("samplers")
                if far:
                    lines.append("")
                    lines.append("%s: the samplers against the exact reference: %s" % (
                        name, ", ".join("%s %s" % (k, _pts(v)) for k, v in sorted(far.items()))))
        lines.append("")
    for p in record.get("problems", []):
        lines.append("PROBLEM: " + p)
    return "\n".join(lines)


def _pts(x):
    return "-" if x is None else "%.1f" % x
