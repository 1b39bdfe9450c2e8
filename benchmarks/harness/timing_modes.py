"""The timing mode's modes: their names, labels, and which workloads each applies to."""

import workloads

OPTIONAL_MODES = ["floor", "yappi", "pyinstrument", "line_profiler"]   # run where importable
CPU_MODE = "fastprof-cpu"
CPU_MODE_WORKLOADS = ["fib"]
FAST_MODE = "fastprof-fast"  # Profile(fast=True): Python functions only
LINES_MODE = "fastprof-lines"  # Profile(lines=[the workload's HOT function])
LINE_PROFILER = "line_profiler"
ONLY_MODE = "fastprof-only"  # Profile(only=[the workload's ONLY]): `scoped` only
ALL_MODES = ["none", "floor", "cprofile", "fastprof", FAST_MODE, CPU_MODE, LINES_MODE,
             LINE_PROFILER, ONLY_MODE, "yappi", "pyinstrument"]
MODE_LABELS = {
    "none": "none",
    "floor": "floor (hook only)",
    "cprofile": "cProfile",
    "fastprof": "fastprof",
    "fastprof-fast": "fastprof --fast",
    "fastprof-cpu": "fastprof clock=cpu",
    "fastprof-lines": "fastprof --lines HOT",
    "line_profiler": "line_profiler HOT",
    "fastprof-only": "fastprof --only app",
    "yappi": "yappi (deterministic, wall)",
    "pyinstrument": "pyinstrument (sampling)",
}
TARGET_FRACTION = 0.5
ONLY_GOAL = 1.10   # --only on 3.12+: slowdown over the unprofiled run
METRICS = {"wall": "seconds", "cpu": "cpu_seconds"}   # --metric -> the result's field


def workload_modes(workload, modes):
    """The modes that apply to ``workload``: the CPU clock on fib, the line
    modes where it names a HOT function, --only where it names its scope."""
    wl = workloads.load(workload)
    out = []
    for m in modes:
        if m == CPU_MODE and workload not in CPU_MODE_WORKLOADS:
            continue
        if m in (LINES_MODE, LINE_PROFILER) and not hasattr(wl, "HOT"):
            continue
        if m == ONLY_MODE and not hasattr(wl, "ONLY"):
            continue
        out.append(m)
    return out
