#!/usr/bin/env python3
"""The benchmark harness: one command, two modes (benchmarks/README.md).

  python benchmarks/run.py timing [options]    what fastprof costs beside cProfile, yappi,
                                               pyinstrument, line_profiler (harness/timing.py)
  python benchmarks/run.py accuracy [options]  how far each profile's times are from a
                                               sampler's (harness/accuracy.py)
  python benchmarks/run.py --smoke [options]   = timing --smoke (the CI check)

`run.py MODE --help` lists a mode's options.  The fastprof measured is the
one the workers import: PYTHONPATH (e.g. build/py3.11/lib), or --pythonpath.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # harness/, workloads/, programs/

MODES = ("timing", "accuracy")


def main(argv):
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if argv[:1] and argv[0] in MODES:
        mode, rest = argv[0], argv[1:]
    elif "--smoke" in argv:
        mode, rest = "timing", argv   # `run.py --smoke`: the CI check's spelling before the modes
    else:
        sys.stderr.write("usage: run.py {timing,accuracy} [options]\n"
                         "run.py: error: the first argument is a mode: timing or accuracy%s\n"
                         % (" (not %r)" % argv[0] if argv else ""))
        return 2
    if mode == "timing":
        from harness.timing import main as run
    else:
        from harness.accuracy import main as run
    return run(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
