#!/usr/bin/env python3
"""How much of the asyncio_tasks workload is the event loop's select(),
unprofiled: the check behind that workload's distance from the samplers.

The workload never waits (``sleep(0)``, no I/O), so each select() polls
with a zero timeout and finds nothing. Replacing the selector's select()
with one that returns no events at once leaves the program doing the same
work; the run time it saves is what select() costs in the real program.
Printed: that share, against what a profile of the same run gives
``selectors.py(select)`` (its own time and the C calls under it), and the
samplers' share in docs/performance.md (21-25% on 3.15).

    PYTHONPATH=build/py3.15/lib python3 benchmarks/questions/asyncio_select_share.py [SIZE]
"""
import os
import selectors
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # benchmarks/

from harness.common import arg_parser  # noqa: E402
from workloads import load  # noqa: E402

import fastprof  # noqa: E402

SELECTOR = type(selectors.DefaultSelector())


def no_events(self, timeout=None):
    return []


def fastest(run, size, select, k=5):
    SELECTOR.select = select
    times = []
    for _ in range(k):
        t0 = time.perf_counter()
        run(size)
        times.append(time.perf_counter() - t0)
    return min(times)


def profiled_share(run, size):
    """select()'s share of the profile's total, its C calls charged to it."""
    prof = fastprof.Profile()
    prof.enable()
    run(size)
    prof.disable()
    stats = prof.getstats()
    total = sum(e.inlinetime for e in stats)
    mine = [e for e in stats if not isinstance(e.code, str) and e.code is SELECTOR.select.__code__]
    own = sum(e.inlinetime for e in mine)
    under = sum(sub.inlinetime for e in mine for sub in e.calls or () if isinstance(sub.code, str))
    return (own + under) / total


def main(argv):
    p = arg_parser(__doc__)
    p.add_argument("size", nargs="?", type=int, default=20000, metavar="SIZE",
                   help="the workload's size (items through its queues); default 20000")
    size = p.parse_args(argv[1:]).size
    if size < 1:
        p.error("SIZE must be at least 1")
    wl = load("asyncio_tasks")
    real = SELECTOR.select
    wl.run(wl.SIZES["smoke"])
    with_select = min(fastest(wl.run, size, real), fastest(wl.run, size, real))
    without = min(fastest(wl.run, size, no_events), fastest(wl.run, size, no_events))
    SELECTOR.select = real
    share = profiled_share(wl.run, size)
    print("Python %s: select() takes %.1f%% of the unprofiled run (%.3f s with it, %.3f s without); "
          "fastprof gives it %.1f%%" % (sys.version.split()[0], 100 * (with_select - without) / with_select,
                                        with_select, without, 100 * share))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
