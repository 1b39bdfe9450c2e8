"""Profile size and export cost on a real program: black formatting a big file.

Not a test: it measures.  For each way of running the program (no profiler,
cProfile, fastprof, fastprof --callpaths) it times the run (median of
--repeat runs, each a fresh process) and the size of the .prof file; then,
for each profile, the size and write time of the HTML report, speedscope
and collapsed exports, with the default --min-percent and with 0 (every
path).  Results go to stdout as Markdown tables (docs/performance.md).

    python -m venv /tmp/black-venv && /tmp/black-venv/bin/pip install --no-binary black black
    PYTHONPATH=build/py3.12/lib /tmp/black-venv/bin/python benchmarks/questions/export_sizes.py \\
        --input "$(/tmp/black-venv/bin/python -c 'import typing; print(typing.__file__)')"

``--no-binary black`` gets black's pure-Python build (the wheels are
compiled with mypyc, whose functions a profiler mostly does not see).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

FORMATS = (("html", ".html"), ("speedscope", ".speedscope.json"), ("collapsed", ".collapsed"))


def run_once(cmd, stdin_path):
    with open(stdin_path, "rb") as fin:
        t0 = time.perf_counter()
        r = subprocess.run(cmd, stdin=fin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        elapsed = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit("%s failed: %s" % (" ".join(cmd), r.stderr.decode()[-2000:]))
    return elapsed


def human(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return "%.0f %s" % (n, unit) if unit == "B" else "%.1f %s" % (n, unit)
        n /= 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", required=True, help="the Python file black formats (read from stdin)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per mode (default 3)")
    ap.add_argument("--workdir", default=None, help="where the files go (default: a temp dir)")
    args = ap.parse_args()
    py = sys.executable
    work = args.workdir or tempfile.mkdtemp(prefix="fastprof-export-sizes-")
    black = ["-m", "black", "-q", "-"]
    modes = [
        ("no profiler", None, [py] + black),
        ("cProfile", "cprofile.prof", [py, "-m", "cProfile", "-o", os.path.join(work, "cprofile.prof")] + black),
        ("fastprof", "fastprof.prof", [py, "-m", "fastprof", "-o", os.path.join(work, "fastprof.prof")] + black),
        ("fastprof --callpaths", "callpaths.prof",
         [py, "-m", "fastprof", "--callpaths", "-o", os.path.join(work, "callpaths.prof")] + black),
    ]
    times = {name: [] for name, _f, _c in modes}
    for _ in range(args.repeat):  # interleaved, so drifts of the machine hit every mode alike
        for name, _f, cmd in modes:
            times[name].append(run_once(cmd, args.input))
    base = statistics.median(times["no profiler"])
    print("| run | median time | added | .prof size |")
    print("|---|---:|---:|---:|")
    for name, prof, _c in modes:
        t = statistics.median(times[name])
        size = human(os.path.getsize(os.path.join(work, prof))) if prof else ""
        print("| %s | %.2f s | %s | %s |" % (name, t, "" if prof is None else "+%.2f s" % (t - base), size))
    print()

    from fastprof.exports import DEFAULT_MIN_PERCENT, export
    from fastprof.profile_file import load_profile
    print("| profile | format | --min-percent | write time | size |")
    print("|---|---|---:|---:|---:|")
    for name, prof, _c in modes[1:]:
        data = load_profile(os.path.join(work, prof))
        for fmt, ext in FORMATS:
            for mp in (DEFAULT_MIN_PERCENT, 0):
                out = os.path.join(work, "out" + ext)
                t0 = time.perf_counter()
                export(data, out, fmt, min_percent=mp)
                elapsed = time.perf_counter() - t0
                print("| %s | %s | %g | %.2f s | %s |" % (name, fmt, mp, elapsed, human(os.path.getsize(out))))
                os.unlink(out)
    if args.workdir is None:
        import shutil
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
