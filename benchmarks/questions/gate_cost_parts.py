"""Where does the count gate's own CPU time go, per phase?

    python benchmarks/questions/gate_cost_parts.py PROJECT [--tests tests]
           [--deselect NODEID ...]

gate_cost.py says how much the gate costs; this says where. In PROJECT (an
unpacked sdist or NAME==VERSION, as gate_cost.py takes it) a baseline is
recorded (one run), then the suite runs twice more: plain pytest, and under
the gate comparing with that baseline, with the gate's phases timed in the
CPU time of the process (this script loads itself as a pytest plugin that
wraps them): what it makes the same before each test (caches cleared,
state warmed, generators seeded), the count table of each test (the stats,
the call paths read from C and turned into the file's form, the table
itself), the end. What is left over is the recording (the C hook on every
call, the profiler's enable and disable) and what the tests do again with
their caches cleared. PYTHONHASHSEED=0 for both.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gate_cost import cpu_of, fetch, plugin_args  # noqa: E402  (a sibling script)

PHASES_ENV = "GATE_COST_PARTS_OUT"
# (module, object, attribute, the phase's name)
PHASES = (
    ("fastprof.modes.count_steady", "CacheReset", "__call__", "caches cleared"),
    ("fastprof.modes.count_steady", "Warmers", "__call__", "state warmed"),
    ("fastprof.modes.count_steady", None, "seed_generators", "generators seeded"),
    ("fastprof.recording.profiler", "Profile", "create_stats", "table: stats"),
    ("fastprof.recording.profiler", "Profile", "callpaths", "table: call paths from C"),
    ("fastprof.modes.count_gate", None, "callpaths_to_file", "table: call paths' file form"),
    ("fastprof.tools.counts", None, "counts_of_test", "table: counts_of_test"),
    ("fastprof.modes.count_gate", "CountGate", "_table", "table (all)"),
    ("fastprof.modes.count_gate", "CountGate", "finish", "the end (compare, report)"),
)


def pytest_configure(config):
    """(As a plugin, in the gated run) wrap each phase with a CPU timer."""
    import atexit
    import importlib
    spent = {}

    def timed(func, name):
        def wrapper(*args, **kwargs):
            t0 = time.process_time()
            try:
                return func(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - t0
        return wrapper

    for module, owner, attr, name in PHASES:
        where = importlib.import_module(module)
        if owner is not None:
            where = getattr(where, owner)
        setattr(where, attr, timed(getattr(where, attr), name))

    def write():
        with open(os.environ[PHASES_ENV], "w") as f:
            json.dump(spent, f)
    atexit.register(write)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("project", metavar="PROJECT")
    ap.add_argument("--tests", default="tests", help="the test path inside the project (default: tests)")
    ap.add_argument("--deselect", action="append", default=[], metavar="NODEID")
    args = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="gate-parts-")
    try:
        root = fetch(args.project, work)
        here = os.path.dirname(os.path.abspath(__file__))
        phases_file = os.path.join(work, "phases")
        env = dict(os.environ, PYTEST_ADDOPTS="", PYTHONHASHSEED="0", **{PHASES_ENV: phases_file})
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
        pytest = ([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
                  + ["--deselect=%s" % d for d in args.deselect] + [args.tests])
        gate = plugin_args() + ["--fastprof-counts=%s" % os.path.join(work, "counts")]
        _, status, out = cpu_of(pytest + gate + ["--fastprof-counts-runs", "1"], root, env)
        if status != 0:
            raise SystemExit("gate_cost_parts: recording failed:\n%s" % out[-3000:])
        plain, _, _ = cpu_of(pytest, root, env)
        gated, status, out = cpu_of(pytest + ["-p", "gate_cost_parts"] + gate, root, env)
        if status != 0:
            raise SystemExit("gate_cost_parts: the gated run failed:\n%s" % out[-3000:])
        with open(phases_file) as f:
            spent = json.load(f)
        print("%s: plain pytest %.2f s CPU, under the gate %.2f s (%.2fx)"
              % (os.path.basename(root), plain, gated, gated / plain))
        named = sum(v for k, v in spent.items() if k in ("caches cleared", "state warmed", "generators seeded",
                                                            "table (all)", "the end (compare, report)"))
        for _m, _o, _a, name in PHASES:
            if name in spent:
                print("  %-32s %6.2f s  %5.1f%% of plain" % (name, spent[name], 100 * spent[name] / plain))
        print("  %-32s %6.2f s  %5.1f%% of plain" % ("recording and the rest", gated - plain - named,
                                                     100 * (gated - plain - named) / plain))

    finally:
        shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    sys.exit(main())
