"""The timing mode's reports: a table per interpreter on stdout, the overall
summary, and markdown tables (what docs/performance.md shows), all made from
the summaries (timing_summary.py), so a stored results file prints the same."""

import sys

import workloads

from harness.common import md_row
from harness.timing_modes import (
    ALL_MODES,
    CPU_MODE,
    CPU_MODE_WORKLOADS,
    FAST_MODE,
    LINE_PROFILER,
    LINES_MODE,
    MODE_LABELS,
    ONLY_GOAL,
    ONLY_MODE,
)


def _fmt_n(x):
    if x is None:
        return "-"
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= div:
            return "%.1f%s" % (x / div, unit)
    return "%d" % x


def summary_of(record, metric):
    """A run's summary by ``metric`` (wall or cpu)."""
    return record.get("summary" if metric == "wall" else "summary_cpu")


def print_table(record, metric="wall", out=sys.stdout):
    s = summary_of(record, metric)
    py = record.get("python", record["executable"])
    if not s:
        print("\nPython %s: no results" % py, file=out)
        return
    shown = [m for m in ALL_MODES if m in record["modes"] and m not in ("none", CPU_MODE)]
    nrep = max([m["n"] for w in s["workloads"].values() for m in w["modes"].values()] or [0])
    fp_label = "fastprof" + (" [STAND-IN: cProfile]" if record.get("standin") else "")
    print("\nPython %s: median of %d run(s) per cell; s = %s seconds, x = slowdown, "
          "ns/ev = added ns per event" % (py, nrep, "wall" if metric == "wall" else "CPU"),
          file=out)
    print("fraction = fastprof added time / cProfile added time "
          "(lower is better; [min-max] over paired repeats)", file=out)
    head1 = "%-14s %7s %7s" % ("", "", "none")
    head2 = "%-14s %7s %7s" % ("workload", "events", "s")
    for m in shown:
        label = fp_label if m == "fastprof" else MODE_LABELS[m]
        head1 += " | %-22s" % label[:22]
        head2 += " | %7s %5s %7s" % ("s", "x", "ns/ev")
    with_floor = any("floor_fraction" in w for w in s["workloads"].values())
    head1 += " | fastprof / cProfile" + (" | floor / cProfile" if with_floor else "")
    head2 += " | fraction          " + (" | fraction" if with_floor else "")
    print(head1, file=out)
    print(head2, file=out)
    print("-" * len(head2) + "-" * 12, file=out)
    for name in record["workloads"]:
        w = s["workloads"].get(name)
        if not w:
            continue
        none = w["modes"].get("none", {})
        line = "%-14s %7s %7s" % (name, _fmt_n(w.get("events")),
                                   "%.3f" % none["median"] if none else "-")
        for m in shown:
            c = w["modes"].get(m)
            if not c:
                line += " | %7s %5s %7s" % ("-", "-", "-")
                continue
            line += " | %7.3f %4.1fx %7s" % (c["median"], c.get("slowdown", float("nan")),
                                            "%.0f" % c["ns_per_event"] if "ns_per_event" in c else "-")
        if "fraction" in w:
            cell = "%5.0f%%" % (100 * w["fraction"])
            per = w.get("fraction_per_repeat")
            if per and len(per) > 1:
                cell += " [%.0f-%.0f%%]" % (100 * min(per), 100 * max(per))
            line += " | %-18s" % cell
        if "floor_fraction" in w:
            line += " | %5.0f%%" % (100 * w["floor_fraction"])
        print(line.rstrip(), file=out)
    if "median_fraction" in s:
        print("fastprof added time / cProfile added time: median over workloads %.0f%%, "
              "worst %.0f%% (%s); ranked worst first: %s"
              % (100 * s["median_fraction"], 100 * s["worst_fraction"], s["worst_workload"],
                 ", ".join("%s %.0f%%" % (n, 100 * s["workloads"][n]["fraction"])
                           for n in s["ranked"])), file=out)
    if "fast_median_slowdown" in s:
        print("fastprof --fast slowdown over the unprofiled run: median %.2fx, worst %.2fx "
              "(goal: <= 1.15x median, <= 2x worst)"
              % (s["fast_median_slowdown"], s["fast_worst_slowdown"]), file=out)
    if "lines_median_slowdown" in s:
        print("--lines on each workload's HOT function, slowdown over the unprofiled run: "
              "fastprof median %.2fx, worst %.2fx%s"
              % (s["lines_median_slowdown"], s["lines_worst_slowdown"],
                 "; line_profiler median %.2fx, worst %.2fx; fastprof below line_profiler "
                 "on %d of %d workloads (goal: all)"
                 % ((s["line_profiler_median_slowdown"], s["line_profiler_worst_slowdown"])
                    + tuple(s["lines_below_line_profiler"]))
                 if "lines_below_line_profiler" in s else ""), file=out)
    if "scope" in s:
        print("--only benchmark (%s, hot loop in an out-of-scope library): %s"
              % (s["scope"]["workload"], scope_text(s["scope"])), file=out)
    if "median_floor_fraction" in s:
        print("floor (a hook that only reads the clock) / cProfile added time: median %.0f%%, "
              "highest %.0f%%: no profiler fed by the same hooks costs less"
              % (100 * s["median_floor_fraction"], 100 * s["worst_floor_fraction"]), file=out)
    for name in CPU_MODE_WORKLOADS:
        w = s["workloads"].get(name, {})
        cpu, wall = w.get("modes", {}).get(CPU_MODE), w.get("modes", {}).get("fastprof")
        if cpu and wall and "ns_per_event" in cpu and "ns_per_event" in wall:
            print('clock="cpu" on %s: %.3f s, %.0f ns/event added (clock="wall": %.0f ns/event; '
                  "%.0f%% of cProfile's added time)"
                  % (name, cpu["median"], cpu["ns_per_event"], wall["ns_per_event"],
                     100 * w.get("fraction_cpu_clock", float("nan"))), file=out)
    for p in record.get("problems", []):
        print("PROBLEM: " + p, file=out)


def scope_text(scope):
    """One line: the --only benchmark's slowdowns."""
    parts = ["unprofiled %.3f s" % scope["none_seconds"]]
    for mode in ("cprofile", "fastprof", FAST_MODE, ONLY_MODE):
        if mode in scope:
            parts.append("%s %.2fx" % (MODE_LABELS[mode], scope[mode]))
    return ", ".join(parts) + " (goal for --only on 3.12+: <= %.2fx)" % ONLY_GOAL


def print_overall(results, metric, out=sys.stdout):
    if len(results["runs"]) < 2:
        return
    print("\nSummary (%s time): fastprof added time as a fraction of cProfile's" % metric, file=out)
    for r in results["runs"]:
        s = summary_of(r, metric) or {}
        if "median_fraction" in s:
            floor = ("   (floor: median %3.0f%%, highest %3.0f%%)"
                     % (100 * s["median_floor_fraction"], 100 * s["worst_floor_fraction"])
                     if "median_floor_fraction" in s else "")
            print("  Python %-8s median %4.0f%%   worst %4.0f%% (%s)%s"
                  % (r["python"], 100 * s["median_fraction"], 100 * s["worst_fraction"],
                     s["worst_workload"], floor), file=out)
        else:
            print("  Python %-8s no fraction (fastprof or cProfile missing)"
                  % r.get("python", r["executable"]), file=out)


def markdown(results, metric="wall"):
    """Markdown tables of the results (what docs/performance.md shows)."""
    runs = [r for r in results["runs"] if summary_of(r, metric)]
    lines = []
    if not runs:
        return ""
    names = [n for n in runs[0]["workloads"] if n in workloads.NAMES]
    lines.append("fastprof's added time as a %% of cProfile's (%s time, median of %s runs):"
                 % (metric, results["config"].get("repeats")))
    lines.append("")
    lines.append(md_row(["workload"] + [r["python"] for r in runs]))
    lines.append("|---|" + "---:|" * len(runs))
    for n in names:
        cells = []
        for r in runs:
            f = summary_of(r, metric)["workloads"].get(n, {}).get("fraction")
            cells.append("-" if f is None else "%.0f%%" % (100 * f))
        lines.append(md_row([n] + cells))
    cells = []
    for r in runs:
        s = summary_of(r, metric)
        cells.append("**%.0f%%**" % (100 * s["median_fraction"]) if "median_fraction" in s else "-")
    lines.append(md_row(["**median**"] + cells))
    cells = []
    for r in runs:
        s = summary_of(r, metric)
        cells.append("%.0f%% (%s)" % (100 * s["worst_fraction"], s["worst_workload"])
                     if "worst_fraction" in s else "-")
    lines.append(md_row(["worst"] + cells))
    if any("median_floor_fraction" in summary_of(r, metric) for r in runs):
        cells = []
        for r in runs:
            s = summary_of(r, metric)
            cells.append("%.0f%%" % (100 * s["median_floor_fraction"])
                         if "median_floor_fraction" in s else "-")
        lines.append(md_row(["*floor* (a hook that only reads the clock), median"] + cells))
    lines.extend(markdown_slowdowns(runs, metric))
    for r in runs:
        s = summary_of(r, metric)
        shown = [m for m in ALL_MODES if m in r["modes"] and m not in ("none", CPU_MODE)]
        lines.append("")
        lines.append("Python %s: %s seconds (median), slowdown, added ns per event%s"
                     % (r["python"], metric, " [fastprof = STAND-IN]" if r.get("standin") else ""))
        lines.append("")
        lines.append("| workload | events | none s | " + " | ".join(MODE_LABELS[m] for m in shown)
                     + " | fastprof / cProfile |")
        lines.append("|---|---:|---:|" + "---:|" * len(shown) + "---:|")
        for n in r["workloads"]:  # `scoped` too
            w = s["workloads"].get(n)
            if not w:
                continue
            none = w["modes"].get("none")
            cells = [n, _fmt_n(w.get("events")), "%.3f" % none["median"] if none else "-"]
            for m in shown:
                c = w["modes"].get(m)
                if c and "ns_per_event" in c:
                    cells.append("%.3f s, %.1fx, %.0f ns" % (c["median"], c["slowdown"],
                                                             c["ns_per_event"]))
                elif c:
                    cells.append("%.3f s" % c["median"])
                else:
                    cells.append("-")
            f = w.get("fraction")
            per = w.get("fraction_per_repeat") or []
            cells.append("-" if f is None else "%.0f%%" % (100 * f) + (
                " (%.0f-%.0f%%)" % (100 * min(per), 100 * max(per)) if len(per) > 1 else ""))
            lines.append(md_row(cells))
        w = s["workloads"].get("fib", {})
        cpu, wall = w.get("modes", {}).get(CPU_MODE), w.get("modes", {}).get("fastprof")
        if cpu and wall and "ns_per_event" in cpu and "ns_per_event" in wall:
            lines.append("")
            lines.append('`clock="cpu"` on fib: %.0f ns/event added vs %.0f ns/event with '
                         '`clock="wall"`.' % (cpu["ns_per_event"], wall["ns_per_event"]))
    return "\n".join(lines) + "\n"


def _row(label, runs, metric, fmt, missing=lambda r: "-"):
    """A markdown row: ``fmt(summary)`` per run, ``missing(run)`` where it has no value."""
    cells = []
    for r in runs:
        try:
            cells.append(fmt(summary_of(r, metric)))
        except (KeyError, TypeError):
            cells.append(missing(r))
    return md_row([label] + cells)


def markdown_slowdowns(runs, metric):
    """Slowdown tables: the modes side by side, --lines vs line_profiler, --only."""
    head = ["", "| | " + " | ".join(r["python"] for r in runs) + " |",
            "|---|" + "---:|" * len(runs)]
    out = ["", "Slowdown over the unprofiled run (%s time), median over the 8 workloads "
           "(worst in brackets):" % metric] + head
    for key, label in (("floor", "floor (a hook that only reads the clock)"),
                       ("cprofile", "cProfile"), ("fastprof", "fastprof"),
                       ("fast", "fastprof `--fast` (goal: median <= 1.15x, worst <= 2x)")):
        out.append(_row(label, runs, metric, lambda s, k=key: "%.2fx (%.2fx)" % (
            s[k + "_median_slowdown"], s[k + "_worst_slowdown"]),
            lambda r, k=key: "refused" if k == "fast" and "fast_error" in r.get("probe", {}) else "-"))
    names = [n for n in runs[0]["workloads"] if n in workloads.NAMES]
    out += ["", "`--lines` on each workload's hot function vs line_profiler on the same "
            "function: slowdown over the unprofiled run, fastprof / line_profiler "
            "(goal: fastprof's below):"] + head
    for n in names:
        hot = getattr(workloads.load(n), "HOT", "?")
        out.append(_row("%s (`%s`)" % (n, hot), runs, metric, lambda s, n=n: "%.2fx / %.2fx" % (
            s["workloads"][n]["modes"][LINES_MODE]["slowdown"],
            s["workloads"][n]["modes"][LINE_PROFILER]["slowdown"])))
    out.append(_row("**median**", runs, metric, lambda s: "**%.2fx / %.2fx**" % (
        s["lines_median_slowdown"], s["line_profiler_median_slowdown"])))
    out.append(_row("fastprof below line_profiler", runs, metric,
                    lambda s: "%d of %d" % tuple(s["lines_below_line_profiler"])))
    out += ["", "`--only` benchmark (`scoped`: the hot loop is in a call-dense pure-Python "
            "library out of scope): slowdown over the unprofiled run "
            "(goal for `--only` on 3.12+: <= %.2fx):" % ONLY_GOAL] + head
    out.append(_row("unprofiled", runs, metric, lambda s: "%.3f s" % s["scope"]["none_seconds"]))
    for mode in ("cprofile", "fastprof", FAST_MODE, ONLY_MODE):
        out.append(_row(MODE_LABELS[mode], runs, metric,
                        lambda s, m=mode: "%.2fx" % s["scope"][m],
                        lambda r, m=mode: "refused" if m == FAST_MODE
                        and "fast_error" in r.get("probe", {}) else "-"))
    return out
