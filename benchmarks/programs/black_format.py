"""black (pure-Python build) formatting a directory of source: the benchmark workloads."""

import glob
import os

import black

DESCRIPTION = "black formats benchmarks/workloads/*.py (safe mode: with the AST equivalence check)"
SIZES = {"full": 2, "smoke": 1}
REQUIRES = "black"

_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "workloads")


def _sources():
    out = []
    for path in sorted(glob.glob(os.path.join(_DIR, "*.py"))):
        with open(path, encoding="utf-8") as f:
            out.append(f.read())
    return out


_SOURCES = _sources()


def run(n):
    """Format every file ``n`` times with a narrower line length each time
    (so each pass changes the code); return the formatted sizes."""
    total = 0
    for i in range(n):
        mode = black.Mode(line_length=60 + 7 * (i % 5))
        for src in _SOURCES:
            try:
                out = black.format_file_contents(src, fast=False, mode=mode)
            except black.NothingChanged:
                out = src
            total += len(out)
    return total
