"""The timing mode's plot (docs/benchmark.png), from the summaries (a stored
results file plots the same); needs matplotlib (requirements-plot.txt)."""

import workloads

from harness.timing_modes import TARGET_FRACTION
from harness.timing_report import summary_of


def plot(results, path, metric="wall"):
    """Top: grouped bars of fastprof's fraction of cProfile's added time, per
    workload, one bar per version.  Bottom: median slowdown over the
    unprofiled run per version, floor / cProfile / fastprof / --fast side by side."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [r for r in results["runs"] if "median_fraction" in (summary_of(r, metric) or {})]
    if not runs:
        raise SystemExit("--plot: no fastprof/cProfile fractions in the results")
    names = [n for n in runs[0]["workloads"] if n in workloads.NAMES]
    labels = names + ["median"]
    width = 0.8 / len(runs)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(max(8, 1.1 * len(labels) + 2), 9.6),
                                  gridspec_kw={"height_ratios": [1.15, 1]})
    ymax, ymin = 0.0, 0.0
    for i, r in enumerate(runs):
        s = summary_of(r, metric)
        vals = [100 * s["workloads"].get(n, {}).get("fraction", float("nan")) for n in names]
        vals.append(100 * s["median_fraction"])
        xs = [j + (i - (len(runs) - 1) / 2) * width for j in range(len(labels))]
        ax.bar(xs, vals, width * 0.95, label="Python " + r["python"])
        for x, v in zip(xs, vals):
            if v != v:  # no fraction: cProfile added nothing measurable
                ax.text(x, 1, "n/a", rotation=90, ha="center", va="bottom", fontsize=7)
        ymax = max([ymax] + [v for v in vals if v == v])
        ymin = min([ymin] + [v for v in vals if v == v])
        if "median_floor_fraction" in s:
            # the floor of each bar: what the interpreter's hooks alone cost
            fvals = [100 * s["workloads"].get(n, {}).get("floor_fraction", float("nan"))
                     for n in names] + [100 * s["median_floor_fraction"]]
            ax.plot(xs, fvals, linestyle="none", marker="_", markersize=60 * width,
                    markeredgewidth=2, color="black",
                    label="floor: a hook that only reads the clock" if i == 0 else None)
    ax.axhline(100, color="dimgray", linestyle=":", linewidth=1.0, label="= cProfile")
    ax.axhline(100 * TARGET_FRACTION, color="crimson", linestyle="--", linewidth=1.2,
               label="target: 50% of cProfile")
    ax.axvline(len(names) - 0.5, color="lightgray", linewidth=1.0)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=20, ha="right")
    ax.set_ylabel("fastprof overhead, % of cProfile's")
    ax.set_ylim(min(0, ymin * 1.1), max(110, ymax) * 1.12)
    host = results.get("host", {})
    aa = " [A/A CHECK: cProfile stands in for fastprof]" if results["config"].get("standin") else ""
    ax.set_title("fastprof added time / cProfile added time (lower is better)" + aa + "\n"
                 "%s time, median of %s runs per cell, %s, %s CPUs"
                 % (metric, results["config"].get("repeats"), host.get("machine", "?"),
                    host.get("cpus", "?")), fontsize=10)
    ax.legend(fontsize=8, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.2),
              frameon=False)
    ax.grid(axis="y", alpha=0.3)
    plot_slowdowns(ax2, runs, metric)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print("plot written to %s" % path)


def plot_slowdowns(ax, runs, metric):
    """Median slowdown over the 8 workloads per version and mode; a tick marks the worst."""
    modes = [("floor", "floor (hook only)", "lightgray"), ("cprofile", "cProfile", "tab:red"),
             ("fastprof", "fastprof", "tab:blue"), ("fast", "fastprof --fast", "tab:green")]
    width = 0.8 / len(modes)
    for i, (key, label, color) in enumerate(modes):
        xs, med, worst = [], [], []
        for j, r in enumerate(runs):
            s = summary_of(r, metric)
            x = j + (i - (len(modes) - 1) / 2) * width
            if key + "_median_slowdown" in s:
                xs.append(x)
                med.append(s[key + "_median_slowdown"])
                worst.append(s[key + "_worst_slowdown"])
            elif key == "fast":  # fast mode refused on this version (3.13)
                ax.text(x, 1.02, "refused", rotation=90, ha="center", va="bottom", fontsize=7)
        ax.bar(xs, med, width * 0.95, label=label + " (median)", color=color)
        ax.plot(xs, worst, linestyle="none", marker="_", markersize=40 * width,
                markeredgewidth=2, color=color, label="ticks: worst workload" if i == 0 else None)
    ax.axhline(1.15, color="darkgreen", linestyle="--", linewidth=1.2,
               label="--fast goal: median <= 1.15x")
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels([r["python"] for r in runs])
    ax.set_xlabel("Python")
    ax.set_ylabel("slowdown over the unprofiled run (x)")
    ax.set_ylim(0.9, None)
    ax.set_title("slowdown, median over the workloads (bars) and worst workload (ticks); "
                 "lower is better", fontsize=10)
    ax.legend(fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    ax.grid(axis="y", alpha=0.3)
