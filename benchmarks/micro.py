#!/usr/bin/env python3
"""Per-event-kind cost of fastprof vs cProfile: a diagnostic, not the headline benchmark.

Each case makes about N events of one kind (Python call, builtin call, C method
call, C calling back into Python, generator resume, regex iterator, raise),
so when a workload of run.py is slow this tells which kind of event to look at.
All in one process, min of --repeats runs, CPU time (process_time): quick to
run while tuning; run.py remains the measurement of record.

    PYTHONPATH=python python3 benchmarks/micro.py [--n 200000] [--repeats 5]
"""

import argparse
import cProfile
import re
import sys
import time

N = 200000


def f():
    pass


def py_calls():
    for _ in range(N):
        f()


def builtin_calls():
    lst = []
    for _ in range(N):
        len(lst)


def c_methods():
    lst = []
    for _ in range(N):
        lst.append(1)


PAT = re.compile(r"(a)")


def _cb(m):
    return "b"


def c_calls_python():
    s = "a"
    for _ in range(N // 2):
        PAT.sub(_cb, s)


def generator_resumes():
    def g():
        for i in range(N):
            yield i
    for _ in g():
        pass


def regex_iter():
    s = "a" * 10
    for _ in range(N // 10):
        for m in PAT.finditer(s):
            m.group()


def _raise():
    raise ValueError


def exceptions():
    for _ in range(N // 4):
        try:
            _raise()
        except ValueError:
            pass


CASES = [py_calls, builtin_calls, c_methods, c_calls_python, generator_resumes, regex_iter,
         exceptions]


def best_time(fn, make, repeats):
    best = float("inf")
    for _ in range(repeats):
        prof = make() if make else None
        c0 = time.process_time()
        if prof:
            prof.enable()
        fn()
        if prof:
            prof.disable()
        best = min(best, time.process_time() - c0)
    return best


def main():
    global N
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=N)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    N = args.n
    import fastprof
    print("Python %s, fastprof from %s" % (sys.version.split()[0], fastprof.__file__))
    print("added CPU ns per call (min of %d runs)" % args.repeats)
    print("%-18s %8s %10s %10s %8s" % ("case", "calls", "cProfile", "fastprof", "fp/cP"))
    for fn in CASES:
        p = cProfile.Profile()
        p.enable()
        fn()
        p.disable()
        calls = sum(e.callcount for e in p.getstats())
        base = best_time(fn, None, args.repeats)
        cp = best_time(fn, cProfile.Profile, args.repeats) - base
        fp = best_time(fn, fastprof.Profile, args.repeats) - base
        print("%-18s %8d %10.0f %10.0f %7.0f%%" % (fn.__name__, calls, cp / calls * 1e9,
                                                  fp / calls * 1e9, 100 * fp / cp if cp > 0 else 0))


if __name__ == "__main__":
    main()
