"""The fastest delivery costs measured so far on this machine, per build.

A calibration (calibration.py) takes a few milliseconds of loops, so it
measures the machine as it is in those milliseconds. On a shared or
virtual machine that can be half its speed (another job on the same
physical core), and the costs then come out up to twice what an event
costs once the program runs at full speed: the profile would remove more
than the profiler took, and fast functions would show less time than
they run (a generator pipeline at 0.35x of its unprofiled time on 3.13).
Noise only ever slows a loop down, so the fastest measurement of a
build is the nearest to its real cost: each process still measures, and
this file keeps, per kind of event, the smallest cost any process of the
same build measured (an interpreter, this extension and the CPU; the key
changes with any of them). A run on a busy machine then removes a little
less than the profiler took, never more.

The file: ``$FASTPROF_CALIBRATION_CACHE``, else
``$XDG_CACHE_HOME/fastprof/calibration.json`` (``~/.cache/...``); the
variable set to ``off`` (or empty) turns the cache off. Created private
(0600), written whole (atomic_file). Anything wrong with it (unreadable,
not JSON, not writable) is ignored: the costs measured now are used.
"""
import json
import os
import sys

from .atomic_file import write_atomically

# bump when the measurement changes meaning: older entries are not mixed in
METHOD = 1
# builds kept (interpreters, rebuilt extensions): the least recently improved go
MAX_BUILDS = 32


def cache_path():
    """The cache file's path, or None when the cache is off."""
    path = os.environ.get("FASTPROF_CALIBRATION_CACHE")
    if path is not None:
        return None if path.strip() in ("", "off") else path
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fastprof", "calibration.json")


def _cpu():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()


def build_key(extension_file):
    """What the costs belong to: the method, this interpreter build, the C
    extension's build (its file's size and time) and the CPU."""
    try:
        st = os.stat(extension_file)
        ext = "%s:%d:%d" % (extension_file, st.st_size, st.st_mtime_ns)
    except OSError:
        ext = extension_file
    return "%d|%s|%s|%s|%s" % (METHOD, sys.executable, sys.version, ext, _cpu())


def _load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _valid(cost):
    return (isinstance(cost, list) and len(cost) == 2
            and all(isinstance(v, (int, float)) and v >= 0 for v in cost) and cost[0] <= cost[1])


def fastest(build, kind_key, measured):
    """{kind: (pre, whole)}: for each kind, the cost of the smaller whole of
    *measured* (seconds, just measured) and the cached one of *build* and
    *kind_key* (a profiler kind: source, clock, builtins...); the cache is
    updated with the result. Kinds whose measurement is 0 (not measured:
    no lines, no builtins) stay 0."""
    path = cache_path()
    if path is None:
        return measured
    data = _load(path)
    entry = data.get(build)
    if not isinstance(entry, dict):
        entry = {}
    cached = entry.get(kind_key)
    if not isinstance(cached, dict):
        cached = {}
    out, changed = {}, False
    for kind, cost in measured.items():
        old = cached.get(kind)
        if cost[1] <= 0:
            out[kind] = cost  # not measured for this profiler
        elif _valid(old) and old[1] <= cost[1]:
            out[kind] = (float(old[0]), float(old[1]))
        else:
            out[kind] = cost
            cached[kind] = list(cost)
            changed = True
    if changed:
        entry[kind_key] = cached
        data.pop(build, None)
        data[build] = entry  # the latest build last; the oldest dropped past MAX_BUILDS
        for stale in list(data)[:-MAX_BUILDS]:
            del data[stale]
        _store(path, data)
    return out


def _store(path, data):
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        old = os.umask(0o077)  # private: created 0600
        try:
            write_atomically(path, lambda f: f.write(json.dumps(data, indent=1).encode()))
        finally:
            os.umask(old)
    except OSError:
        pass
