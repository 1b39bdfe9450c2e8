"""Out-of-process samplers (py-spy; on 3.15+ the standard library's
``profiling.sampling``): finding them, running a program under one, and
reading its stacks into own samples per function.  Used by the accuracy
mode and questions/sampler_depth_bias.py.

Both samplers stop the program for each sample unless told otherwise
(py-spy's default, profiling.sampling's --blocking): slower, but no torn
reads.  py-spy runs with --function (a frame's line is the function's first
line, as in a pstats key) and --full-filenames, so a sample's frame matches
a pstats key (file, first line, name) exactly; the stdlib sampler gives
only a file's base name and the current line.
"""

import os
import re
import shutil
import sys
import tempfile

from harness.distance import key_text
from harness.worker_common import REGION

KINDS = ["py-spy", "stdlib"]


def find_py_spy(explicit, python):
    """py-spy: ``explicit``, else beside ``python`` (its venv), beside this interpreter, or on PATH."""
    if explicit:
        return explicit
    for d in (os.path.dirname(python), os.path.dirname(sys.executable)):
        cand = os.path.join(d, "py-spy")
        if os.path.exists(cand):
            return cand
    return shutil.which("py-spy")


def sampler_command(kind, python, out, rate, py_spy=None, nonblocking=False, stdlib_mode="wall"):
    """The command that runs a script of ``python`` under sampler ``kind``,
    writing its stacks to ``out``; the script and its arguments follow it."""
    if kind == "py-spy":
        cmd = [py_spy, "record", "--rate", str(rate), "--format", "raw", "--function",
               "--full-filenames", "-o", out]
        if nonblocking:
            cmd.append("--nonblocking")
        return cmd + ["--", python]
    cmd = [python, "-m", "profiling.sampling", "run", "-r", str(rate), "--no-gc", "--collapsed", "-o", out]
    if not nonblocking:
        cmd.append("--blocking")
    if stdlib_mode != "wall":
        cmd += ["--mode", stdlib_mode]
    return cmd


def sampled(kind, run):
    """``run(out)`` runs a program under sampler ``kind`` writing to the file
    ``out``; returns (what ``run`` returned, the stacks the sampler wrote)."""
    fd, out = tempfile.mkstemp(prefix="fastprof-sampler-", suffix=".txt")
    os.close(fd)
    try:
        result = run(out)
        with open(out, encoding="utf-8", errors="replace") as f:
            text = f.read()
    finally:
        os.unlink(out)
    return result, parse_stacks(kind, text)


def parse_stacks(kind, text):
    return parse_pyspy_raw(text) if kind == "py-spy" else parse_stdlib_collapsed(text)


_PYSPY_FRAME = re.compile(r"^(.*) \((.*):(\d+)\)$")


def _pyspy_frame(part):
    m = _PYSPY_FRAME.match(part)
    if m:
        return (m.group(1), m.group(2), int(m.group(3)))
    return (part, "", 0)   # a thread or process label (-t / -s): not a frame


def _stdlib_frame(part):
    if part.startswith("tid:"):
        return None
    bits = part.rsplit(":", 2)
    if len(bits) != 3 or not bits[2].isdigit():
        return (part, "", 0)   # not a frame
    filename, name, lineno = bits
    return (name, filename, int(lineno))


def _collapsed(text, frame):
    """Collapsed stacks (``a;b;c COUNT`` a line, root first): [(frames, count)];
    ``frame(text)`` -> (qualified name, file, line), or None to leave it out."""
    out = []
    for line in text.splitlines():
        line = line.rstrip()
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        frames = [f for f in map(frame, stack.split(";")) if f is not None]
        out.append((frames, int(count)))
    return out


def parse_pyspy_raw(text):
    """py-spy ``--format raw``: [(frames, count)], a frame being (qualified name, file, line)."""
    return _collapsed(text, _pyspy_frame)


def parse_stdlib_collapsed(text):
    """``python -m profiling.sampling run --collapsed`` (3.15+): lines
    ``tid:N;file:qualname:line;... count``; frames as in parse_pyspy_raw."""
    return _collapsed(text, _stdlib_frame)


def short_name(qualname):
    """The code object's name in a sampler's qualified name: ``A.<locals>.f`` -> ``f``."""
    return qualname.rsplit(".", 1)[-1]


def sampler_self_counts(stacks, region=REGION):
    """Own samples per function below the ``region`` frame: {key: count}.

    Only samples whose stack holds ``region`` count; the leaf (the last frame)
    gets the sample.  A sample whose leaf is ``region`` itself (the loop around
    the workload, the profiler's enable/disable) counts for no function.
    """
    counts = {}
    for frames, n in stacks:
        idx = None
        for i, (name, _, _) in enumerate(frames):
            if short_name(name) == region:
                idx = i
        if idx is None or idx == len(frames) - 1:
            continue
        name, filename, line = frames[-1]
        k = key_text(filename, line, short_name(name))
        counts[k] = counts.get(k, 0) + n
    return counts
