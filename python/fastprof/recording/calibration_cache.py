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
``$XDG_CACHE_HOME/fastprof/calibration.tsv`` (``~/.cache/...``); the
variable set to ``off`` (or empty) turns the cache off. Created private
(0600), written whole (atomic_file) without importing io. One line per cost: build, kind of
profiler, kind of event, pre and whole seconds, tab-separated (plain
text, so that no module is imported before a profiled program's first
line that cProfile does not import; any Python reads it). Anything wrong
with it (unreadable, a bad line, not writable) is ignored: the costs
measured now are used.
"""
import os
import sys

from ..data.atomic_file import write_bytes_atomically

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
    return os.path.join(base, "fastprof", "calibration.tsv")


def _cpu():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return os.uname().machine if hasattr(os, "uname") else sys.platform


def build_key(extension_file):
    """What the costs belong to: the method, this interpreter build, the C
    extension's build (its file's size and time) and the CPU."""
    try:
        st = os.stat(extension_file)
        ext = "%s:%d:%d" % (extension_file, st.st_size, st.st_mtime_ns)
    except OSError:
        ext = extension_file
    key = "%d|%s|%s|%s|%s" % (METHOD, sys.executable, sys.version, ext, _cpu())
    return " ".join(key.split())  # one field of a line: no tab, no newline


def _load(path):
    """{build: {kind_key: {kind: [pre, whole]}}} of the file; bad lines skipped."""
    data = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                if len(fields) != 5:
                    continue
                try:
                    cost = [float(fields[3]), float(fields[4])]
                except ValueError:
                    continue
                data.setdefault(fields[0], {}).setdefault(fields[1], {})[fields[2]] = cost
    except (OSError, UnicodeDecodeError):
        return {}
    return data


def _text(data):
    return "".join("%s\t%s\t%s\t%r\t%r\n" % (build, kind_key, kind, cost[0], cost[1])
                   for build, entry in data.items() for kind_key, costs in entry.items()
                   for kind, cost in costs.items())


def _valid(cost):
    return (isinstance(cost, list) and len(cost) == 2
            and all(v >= 0 for v in cost) and cost[0] <= cost[1])


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
            write_bytes_atomically(path, _text(data).encode("utf-8"))
        finally:
            os.umask(old)
    except OSError:
        pass
