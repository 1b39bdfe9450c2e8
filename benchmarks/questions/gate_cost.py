"""What does the count gate cost: the CPU time of ``pytest --fastprof-counts``
against plain ``pytest`` on real test suites, serial and under
``pytest -n 2``?

    python benchmarks/questions/gate_cost.py PROJECT [PROJECT...] [--rounds 5]
           [--xdist] [--memory] [--tests tests] [--keep-hash-seed]

A PROJECT is an unpacked sdist (its tests inside, ``--tests`` relative to
it) or ``NAME==VERSION``, which ``pip download --no-binary :all:`` fetches
into a temporary directory and unpacks (boltons==26.2.0,
more-itertools==11.2.1). The interpreter running this script runs the suites:
pytest (and pytest-xdist for ``--xdist``) and the project's test
dependencies installed in it, fastprof importable (PYTHONPATH=python).

Per project: a baseline is recorded once (the default, learned over three
runs), then each round runs, interleaved, plain pytest and the gate
comparing with it, serial and (``--xdist``) with ``-n 2``; the CPU time of the
whole command (user + system of it and its children: xdist's workers) is
read from ``resource.getrusage(RUSAGE_CHILDREN)``. PYTHONHASHSEED=0 is set
for both, as the README's CI job sets it (``--keep-hash-seed``: the caller's
environment as it is; the gate then re-executes pytest with it). Prints the
median CPU times and the gate's ratio; exits 1 if a gate run alarmed (an
unchanged rerun must not).  ``--memory``: also the gate with
``--fastprof-memory`` (counts and bytes; its own baseline), in the same rounds.
"""

import argparse
import glob
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile


def fetch(spec, into):
    """The directory of *spec*: a path, or NAME==VERSION downloaded and unpacked."""
    if os.path.isdir(spec):
        return os.path.abspath(spec)
    if "==" not in spec:
        raise SystemExit("gate_cost: %r is neither a directory nor NAME==VERSION" % spec)
    r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "--no-binary", ":all:", "-d", into, spec],
                       capture_output=True, text=True)
    name = spec.split("==")[0].replace("-", "_")
    found = [f for f in glob.glob(os.path.join(into, "*.tar.gz"))
             if os.path.basename(f).replace("-", "_").lower().startswith(name.lower())]
    if not found:
        raise SystemExit("gate_cost: cannot download %s: %s" % (spec, r.stderr.strip()[-300:]))
    with tarfile.open(found[0]) as tar:
        top = tar.getnames()[0].split("/")[0]
        if hasattr(tarfile, "data_filter"):
            tar.extractall(into, filter="data")
        else:
            tar.extractall(into)
    return os.path.join(into, top)


def plugin_args():
    """``-p`` for fastprof's pytest plugin when no installed fastprof
    registers it (fastprof taken from PYTHONPATH, a build)."""
    from importlib.metadata import entry_points
    try:
        found = entry_points(group="pytest11")
    except TypeError:  # 3.9: a dict of groups
        found = entry_points().get("pytest11", [])
    return [] if any(e.value.startswith("fastprof") for e in found) else ["-p", "fastprof.modes.pytest_plugin"]


def cpu_of(args, cwd, env):
    """(CPU seconds of the command and its children, exit status, output)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, r.returncode, r.stdout + r.stderr


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("projects", nargs="+", metavar="PROJECT")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tests", default="tests", help="the test path inside a project (default: tests)")
    ap.add_argument("--xdist", action="store_true", help="also measure under pytest -n 2")
    ap.add_argument("--memory", action="store_true",
                    help="also measure the gate with --fastprof-memory (bytes too)")
    ap.add_argument("--keep-hash-seed", action="store_true",
                    help="leave PYTHONHASHSEED as it is (the gate re-executes pytest with 0)")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    work = tempfile.mkdtemp(prefix="gate-cost-")
    env = dict(os.environ, PYTEST_ADDOPTS="")
    if not args.keep_hash_seed:
        env["PYTHONHASHSEED"] = "0"
    alarms = 0
    try:
        rows = []
        for spec in args.projects:
            root = fetch(spec, work)
            base = os.path.join(work, "counts-" + os.path.basename(root))
            pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", args.tests]
            plugin = plugin_args()
            modes = [("serial", [])] + ([("-n 2", ["-n", "2"])] if args.xdist else [])
            for mode, extra in modes:
                tag = "%s-%s" % (base, mode.replace(" ", ""))
                gates = [("gate", pytest + extra + plugin + ["--fastprof-counts=" + tag])]
                if args.memory:
                    gates.append(("gate+memory", pytest + extra + plugin + [
                        "--fastprof-counts=%s-memory" % tag, "--fastprof-memory"]))
                for _name, gate in gates:
                    _cpu, status, out = cpu_of(gate, root, env)   # the baseline
                    if status not in (0, 1):
                        raise SystemExit("gate_cost: %s: recording failed:\n%s" % (spec, out[-2000:]))
                plain, gated = [], {name: [] for name, _g in gates}
                for _ in range(args.rounds):
                    cpu, _s, _o = cpu_of(pytest + extra, root, env)
                    plain.append(cpu)
                    for name, gate in gates:
                        cpu, _s, out = cpu_of(gate, root, env)
                        gated[name].append(cpu)
                        if "changed their call counts" in out:
                            alarms += 1
                            print("ALARM on an unchanged rerun of %s (%s, %s):\n%s"
                                  % (spec, mode, name, out.split("fastprof call counts", 1)[-1][:3000]))
                p = statistics.median(plain)
                for name, _g in gates:
                    g = statistics.median(gated[name])
                    rows.append((os.path.basename(root), mode, name, p, g, g / p))
        print("CPU time (user + system, the whole command), median of %d interleaved rounds; "
              "PYTHONHASHSEED %s" % (args.rounds, "as given" if args.keep_hash_seed else "=0"))
        print("%-28s %-7s %-12s %10s %10s %7s" % ("project", "mode", "gate", "pytest", "gated", "ratio"))
        for name, mode, gate, p, g, ratio in rows:
            print("%-28s %-7s %-12s %9.2fs %9.2fs %6.2fx" % (name, mode, gate, p, g, ratio))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if alarms else 0


if __name__ == "__main__":
    sys.exit(main())
