"""Instructions per Python call, counted by callgrind: where fast mode's
cost comes from (docs/performance.md, "Fast mode: where the cost comes
from").

    python benchmarks/questions/callgrind_per_call.py 3.10 3.12 3.14 3.15
    python benchmarks/questions/callgrind_per_call.py --modes fast,default 3.12

For each Python X.Y (.venv/pyX.Y and build/pyX.Y/lib of this tree) and each
mode, runs fib(N) under callgrind for two N and divides the difference in
instructions by the difference in Python calls, so start-up and enable()
cancel out:

  unprofiled    no profiler
  passthrough   a do-nothing PEP 523 evaluator (the test build's
                _test_set_dummy_evaluator): the interpreter's own cost of
                having any evaluator (on 3.11+ it stops inlining calls)
  fast          fastprof.Profile(fast=True)
  default       fastprof.Profile()
  default-nobuiltins  fastprof.Profile(builtins=False): the default mode's
                event path for the same calls fast mode sees (on 3.12+
                builtins=True also has every call instruction report)
  memory        fastprof.Profile(memory=True): the default mode with the
                allocator hooks (fib's results past 256 are new ints: about
                one allocation and one free per call)

"own" is the part spent in fastprof's C code (csrc/), from callgrind_annotate.
FASTPROF_LIB=DIR measures another build of fastprof (one version at a
time). Needs valgrind; a run takes a few seconds per mode and version.
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # benchmarks/

from harness.common import build_lib, dev_python  # noqa: E402

SIZES = (18, 21)
MODES = ("unprofiled", "passthrough", "fast", "default", "default-nobuiltins", "memory")

PROGRAM = r"""
import sys
from fastprof import Profile, _fastprof
def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)
mode, n = sys.argv[1], int(sys.argv[2])
fib(15)  # warm: every call site specialized before the measured part
if mode == "passthrough":
    _fastprof._test_set_dummy_evaluator(True)
    fib(n)
    _fastprof._test_set_dummy_evaluator(False)
elif mode == "unprofiled":
    fib(n)
else:
    # compensate=False: calibration loops for a time, so under callgrind it
    # adds a load-dependent count; the event path is the same either way
    pr = (Profile(fast=True, compensate=False) if mode == "fast"
          else Profile(memory=True, compensate=False) if mode == "memory"
          else Profile(builtins=mode == "default", compensate=False))
    pr.enable(); fib(n); pr.disable()
"""


def fib_calls(n):
    return 1 if n < 2 else 1 + fib_calls(n - 1) + fib_calls(n - 2)


def run(version, mode, n, workdir):
    out = os.path.join(workdir, "cg.%s.%s.%d" % (version, mode, n))
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=build_lib(version))
    python = dev_python(version)
    script = os.path.join(workdir, "prog.py")
    with open(script, "w") as f:
        f.write(PROGRAM)
    subprocess.run(["setarch", "-R", "valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                    python, script, mode, str(n)], env=env, check=True, capture_output=True)
    with open(out) as f:
        total = int(re.search(r"^summary: (\d+)", f.read(), re.M).group(1))
    annotate = subprocess.run(["callgrind_annotate", "--threshold=100", out], capture_output=True,
                              text=True, check=True).stdout
    own = sum(int(line.split()[0].replace(",", "")) for line in annotate.splitlines()
              if "csrc/" in line and re.match(r"\s*[\d,]+ ", line))
    return total, own


def main(versions, modes=MODES):
    calls = fib_calls(SIZES[1]) - fib_calls(SIZES[0])
    print("instructions per Python call (fib, %d calls measured)" % calls)
    print("%-6s %-12s %8s %8s" % ("python", "mode", "total", "own"))
    with tempfile.TemporaryDirectory() as workdir:
        for version in versions:
            for mode in modes:
                (t0, o0), (t1, o1) = (run(version, mode, n, workdir) for n in SIZES)
                print("%-6s %-12s %8.1f %8.1f" % (version, mode, (t1 - t0) / calls, (o1 - o0) / calls),
                      flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    modes = MODES
    if args[:1] == ["--modes"]:
        modes, args = args[1].split(","), args[2:]
        unknown = set(modes) - set(MODES)
        if unknown:
            sys.exit("callgrind_per_call: unknown mode(s) %s; modes: %s" % (", ".join(sorted(unknown)), ", ".join(MODES)))
    main(args or ["3.12"], modes)
