#!/usr/bin/env python3
"""What a hook-fed profiler costs between its events: the program's own
bytecode, slower while events are on.

Loops of one C call (``len``) after 0, 1, 3 and 9 lines of plain
arithmetic and dict stores (no call, no event) run unprofiled, under the
floor (a hook that only reads the clock, benchmarks/harness/floor_hook.py) and under
fastprof with ``compensate=False``; printed: the time each adds per loop
round, in ns (best of 5, median over the rounds). A per-event cost is the
same whatever runs between the events; what grows with the lines between
them is the interpreter running the program's own code slower, which no
per-event constant can take out (docs/performance.md).

    PYTHONPATH=build/py3.13/lib python3 benchmarks/questions/between_events.py [ROUNDS]
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # benchmarks/

from harness.common import arg_parser  # noqa: E402
from harness.floor_hook import FloorHook, load  # noqa: E402

import fastprof  # noqa: E402

N = 20000


def work0(n, w="alpha"):
    for _ in range(n):
        len(w)


def work1(n, w="alpha"):
    d = {}
    for i in range(n):
        x = i % 7; y = x * 3 + 1; d[x] = y  # noqa: E702
        len(w)


def work3(n, w="alpha"):
    d = {}
    for i in range(n):
        x = i % 7; y = x * 3 + 1; d[x] = y  # noqa: E702
        x = i % 5; y = x * 3 + 1; d[x] = y  # noqa: E702
        x = i % 3; y = x * 3 + 1; d[x] = y  # noqa: E702
        len(w)


def work9(n, w="alpha"):
    d = {}
    for i in range(n):
        x = i % 7; y = x * 3 + 1; d[x] = y  # noqa: E702
        x = i % 5; y = x * 3 + 1; d[x] = y  # noqa: E702
        x = i % 3; y = x * 3 + 1; d[x] = y  # noqa: E702
        x = i % 7; y = x * 3 + 1; d[x] = y  # noqa: E702
        x = i % 5; y = x * 3 + 1; d[x] = y  # noqa: E702
        x = i % 3; y = x * 3 + 1; d[x] = y  # noqa: E702
        x = i % 7; y = x * 3 + 1; d[x] = y  # noqa: E702
        x = i % 5; y = x * 3 + 1; d[x] = y  # noqa: E702
        x = i % 3; y = x * 3 + 1; d[x] = y  # noqa: E702
        len(w)


LOOPS = (work0, work1, work3, work9)


def best(loop, hook=None, k=5):
    """The fastest of ``k`` runs of ``loop``, with ``hook`` enabled around each (s)."""
    times = []
    for _ in range(k):
        if hook is not None:
            hook.enable()
        t0 = time.perf_counter()
        loop(N)
        t = time.perf_counter() - t0
        if hook is not None:
            hook.disable()
        times.append(t)
    return min(times)


def main(argv):
    p = arg_parser(__doc__)
    p.add_argument("rounds", nargs="?", type=int, default=7, metavar="ROUNDS",
                   help="rounds of every loop (medians over them); default 7")
    rounds = p.parse_args(argv[1:]).rounds
    if rounds < 1:
        p.error("ROUNDS must be at least 1")
    floor = FloorHook(load())
    added = {loop: ([], []) for loop in LOOPS}
    for _ in range(rounds):
        for loop in LOOPS:
            plain = best(loop)
            added[loop][0].append((best(loop, floor) - plain) / N * 1e9)
            added[loop][1].append((best(loop, fastprof.Profile(compensate=False)) - plain) / N * 1e9)
    print("Python %s: ns added per loop round (one C call each), floor / fastprof raw"
          % sys.version.split()[0])
    for loop, (fl, fp) in added.items():
        print("  %s (%s lines between calls)  floor %+6.1f  fastprof %+6.1f"
              % (loop.__name__, loop.__name__[4:], statistics.median(fl), statistics.median(fp)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
