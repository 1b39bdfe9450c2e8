"""Does the count gate cry wolf on real test suites, out of the box?

    python benchmarks/questions/gate_false_alarms.py PROJECT [PROJECT...]
           [--serial 10] [--xdist 5] [--subset 3] [--tests tests] [--deselect NODEID]

The protocol of issue 32: per PROJECT (an unpacked sdist, or NAME==VERSION,
fetched as gate_cost.py fetches it), a baseline is recorded with the gate's
defaults (learned over three runs), then the suite is run again unchanged
--serial times; a second baseline is recorded under ``pytest -n 2`` and
rerun --xdist times so; the serial baseline is compared --subset times with
a ``-k`` subset (the tests of the middle test file). No marker is added to
the project. Every rerun must pass: an alarm on unchanged code is a false
alarm, printed with the gate's report. The interpreter running this script
runs the suites (pytest, pytest-xdist, the project's test dependencies
installed in it, fastprof importable). PYTHONHASHSEED is left as given (the
gate re-executes pytest with 0). Prints one row per project and mode; exits
1 if any rerun alarmed.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gate_cost import fetch, plugin_args  # noqa: E402  (a sibling script)


def run(args, cwd, env):
    r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def middle_test_file(root, tests):
    """The stem of the middle test file (sorted): the ``-k`` subset."""
    files = sorted(glob.glob(os.path.join(root, tests, "**", "test_*.py"), recursive=True))
    if not files:
        raise SystemExit("gate_false_alarms: no test_*.py under %s" % os.path.join(root, tests))
    return os.path.splitext(os.path.basename(files[len(files) // 2]))[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("projects", nargs="+", metavar="PROJECT")
    ap.add_argument("--serial", type=int, default=10, help="unchanged serial reruns (default 10)")
    ap.add_argument("--xdist", type=int, default=5, help="unchanged reruns under -n 2 (default 5; 0: none)")
    ap.add_argument("--subset", type=int, default=3, help="reruns of a -k subset (default 3)")
    ap.add_argument("--tests", default="tests", help="the test path inside a project (default: tests)")
    ap.add_argument("--deselect", action="append", default=[], metavar="NODEID",
                    help="a test to leave out: one that fails here with the gate off too (as root, say)")
    args = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="gate-alarms-")
    env = dict(os.environ, PYTEST_ADDOPTS="")
    rows, alarms = [], 0
    try:
        for spec in args.projects:
            root = fetch(spec, work)
            name = os.path.basename(root)
            pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"] + plugin_args() + [
                "--deselect=%s" % d for d in args.deselect] + [args.tests]
            subset = middle_test_file(root, args.tests)
            plans = [("serial", [], "serial", args.serial),
                     ("-n 2", ["-n", "2"], "xdist", args.xdist),
                     ("-k " + subset, ["-k", subset], "serial", args.subset)]
            recorded = set()
            for mode, extra, base_name, reruns in plans:
                if reruns <= 0:
                    continue
                gate = ["--fastprof-counts=%s" % os.path.join(work, "counts-%s-%s" % (name, base_name))]
                if base_name not in recorded:
                    status, out = run(pytest + extra + gate, root, env)
                    if status != 0:
                        raise SystemExit("gate_false_alarms: %s: recording (%s) failed:\n%s"
                                         % (spec, mode, out[-3000:]))
                    recorded.add(base_name)
                false = 0
                for _ in range(reruns):
                    status, out = run(pytest + extra + gate, root, env)
                    if status != 0:
                        false += 1
                        print("FALSE ALARM (or failure) on an unchanged rerun of %s (%s), exit %d:\n%s\n"
                              % (name, mode, status, out.split("fastprof call counts", 1)[-1][-4000:]))
                alarms += false
                rows.append((name, mode, reruns, false))
        print("%-28s %-26s %7s %13s" % ("project", "mode", "reruns", "false alarms"))
        for name, mode, reruns, false in rows:
            print("%-28s %-26s %7d %13d" % (name, mode, reruns, false))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if alarms else 0


if __name__ == "__main__":
    sys.exit(main())
