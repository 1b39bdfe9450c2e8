"""What the two workers (timing_worker.py, accuracy_worker.py) share: their
command line and result line, the workloads, and the pstats-style keys of a
profiler's entries with the profiler's own entries left out.

A worker is one measurement in a fresh process.  Its result is the last
line of stdout, prefixed with ``RESULT_TAG``, as JSON (common.run_worker
reads it).  fastprof is imported from wherever the environment
(PYTHONPATH) points: the harness never adds a path of its own, so a test
can aim it at one build.  Must run on every CPython the project supports
(3.9+), with nothing installed.
"""

import json
import os
import re
import sys

RESULT_TAG = "@@FASTPROF-BENCH-RESULT@@ "
REGION = "_accuracy_region"   # the accuracy worker's frame a sampler's stacks are cut at

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if BENCH not in sys.path:   # workloads/ and programs/ are packages of benchmarks/
    sys.path.insert(0, BENCH)

# Entries a profiler records about itself (its own disable() call and the
# shim's Python frames around it).  They are not part of the workload and
# differ between profilers by construction, so they are left out of event
# counts, of the cProfile/fastprof call-count comparison and of the shares.
_SELF_C_SUFFIXES = ("Profiler' objects>", "'fastprof.Profile' objects>")


def serve(argv, probe, measure, doc):
    """A worker's main: ``--probe`` or one JSON spec -> one result line."""
    if len(argv) == 2 and argv[1] == "--probe":
        out = probe()
    elif len(argv) == 2:
        out = measure(json.loads(argv[1]))
    else:
        sys.stderr.write(doc)
        return 2
    sys.stdout.write("\n" + RESULT_TAG + json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0


def load_workload(name):
    """The module ``name``: a workload of workloads/ or a real program of programs/."""
    import programs
    import workloads
    if name in programs.NAMES:
        return programs.load(name)
    return workloads.load(name)


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def key_str(key):
    """pstats-style text of a key; object addresses in C names (``<function
    socket.close at 0x7f..>``) differ between processes, so they are masked."""
    filename, line, name = key
    return "%s:%d(%s)" % (filename, line, _ADDRESS.sub(" at 0x?", name))


def label(code):
    """pstats key of a getstats() entry: a code object, or a str for C functions."""
    if isinstance(code, str):
        return ("~", 0, code)
    return (code.co_filename, code.co_firstlineno, code.co_name)


def profiler_self_keys(entries, own_files):
    """Keys of entries that belong to the profiler, not to the workload.

    Seeds: C methods of a ``...Profiler`` type (``disable``) and Python
    functions defined in the profiler's own files; then everything whose
    every caller is such an entry (what the shim's ``disable()`` calls).
    """
    callers = {}
    keys = set()
    for e in entries:
        key = label(e.code)
        keys.add(key)
        for sub in e.calls or ():
            callers.setdefault(label(sub.code), set()).add(key)
    own = set()
    for key in keys:
        filename, _, name = key
        if filename == "~" and name.endswith(_SELF_C_SUFFIXES):
            own.add(key)
        elif filename != "~" and os.path.abspath(filename) in own_files:
            own.add(key)
    changed = True
    while changed:
        changed = False
        for key in keys - own:
            cs = callers.get(key)
            if cs and cs <= own:
                own.add(key)
                changed = True
    return own


def package_files(module):
    """Absolute paths of the .py files of ``module``'s package (or the module)."""
    path = os.path.abspath(getattr(module, "__file__", "") or "")
    if not path:
        return set()
    if os.path.basename(path).startswith("__init__."):
        root = os.path.dirname(path)
        files = set()
        for dirpath, _, names in os.walk(root):
            for n in names:
                if n.endswith(".py"):
                    files.add(os.path.join(dirpath, n))
        return files
    return {path[:-1] if path.endswith(".pyc") else path}
