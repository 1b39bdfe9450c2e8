"""The Firefox Profiler's format (https://profiler.firefox.com: load the file).

Python 3.15's sampler (``python -m profiling.sampling --gecko``) calls it the
"gecko" format; what it and fastprof write is the profiler's *processed*
format (``meta.preprocessedProfileVersion``), which the profiler upgrades
from any older version on load.  fastprof writes this structure::

    {"meta": {"version": 32, "preprocessedProfileVersion": 57,
              "interval": 1.0, "startTime": 0, "product": "fastprof",
              "categories": [Other, Python, Native], "symbolicated": true, ...},
     "libs": [], "pages": [],
     "shared": {"stringArray": [str, ...],          # every name, once
                "sources": {"length": 0, ...}},
     "threads": [{                                  # one per profiled thread
        "name", "tid", "pid", "isMainThread", "processName", ...,
        "samples":   {"stack": [], "time": [], "weight": [],
                      "weightType": "tracing-ms", "length": n},
        "stackTable":  {"frame": [], "prefix": [], "category": [], "subcategory": [], "length"},
        "frameTable":  {"func": [], "line": [], "category": [], "address": [], ...},
        "funcTable":   {"name": [], "fileName": [], "lineNumber": [], "isJS": [],
                        "resource": [], ...},
        "resourceTable": {...},                     # one per source file
        "nativeSymbols": {... "length": 0},
        "markers": {... "length": 0}}]}

Every table is columnar: one list per column, all ``length`` long; names
and file names are indices into ``shared.stringArray``; ``stack`` and
``prefix`` index ``stackTable`` (``prefix`` null at a root), ``frame``
indexes ``frameTable``, ``func`` indexes ``funcTable``.

Samples: one per call path (``_stacks``), its weight the path's own time in
milliseconds (``weightType: "tracing-ms"``), so the call tree and flame graph
show time, not sample counts, and the weights add up to the profile's total
time.  The ``time`` column lays the paths end to end (a deterministic
profile keeps totals, not a timeline: read the call tree and flame graph,
not the time order).  Call counts have no place in the format.

Threads: one per thread the profile recorded separately (``--threads``,
``python -m fastprof``'s default), else one.  The call paths a file records
are those of all threads together, so with several threads each thread's
stacks are estimated from its own caller graph, as they are for a profile
without call paths, and such a thread's name ends in ``(estimated call
stacks)``; the recorded paths then come first, as a thread (track) named
``all threads`` of their own.  Each track's weights add up to its own total.

A profile weighed by bytes (``fastprof convert --weight allocated|held|net``,
memory.weighed_by_bytes) has one track, the recorded call paths', whose
samples weigh bytes (``weightType: "bytes"``).
"""

import json
import os
import platform
from typing import Dict, List, Optional, TextIO

from ..data.memory import WEIGHT_TEXT
from ..data.model import is_builtin
from ..data.names import readable_name
from ..data.profile_file import ProfileData
from ._stacks import Stacks, profile_stacks, thread_stacks

FORMAT_VERSION = 32
PROCESSED_VERSION = 57
ESTIMATED_SUFFIX = " (estimated call stacks)"
ALL_THREADS = "all threads"

CATEGORIES = [
    {"name": "Other", "color": "grey", "subcategories": ["Other"]},
    {"name": "Python", "color": "yellow", "subcategories": ["Other"]},
    {"name": "Native", "color": "blue", "subcategories": ["Other"]},
]
CATEGORY_PYTHON = 1
CATEGORY_NATIVE = 2
RESOURCE_TYPE_LIBRARY = 1


class _Strings:
    def __init__(self):
        self.array: List[str] = []
        self.index: Dict[str, int] = {}

    def __call__(self, s: str) -> int:
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.array)
            self.array.append(s)
        return i


def gecko_document(data: ProfileData, title: str = "") -> dict:
    strings = _Strings()
    if data.weight:  # weighed by bytes (memory.weighed_by_bytes): the call paths' track only
        threads = [_thread(data, profile_stacks(data), strings,
                           "%s (%s)" % (ALL_THREADS, WEIGHT_TEXT[data.weight]), 0, True)]
        return _document(data, threads, strings, title)
    threads = []
    per_thread = thread_stacks(data)
    if not per_thread or (data.callpaths is not None and data.callpaths.nodes and len(per_thread) > 1):
        # the recorded paths are of all threads together: a track of their own
        threads.append(_thread(data, profile_stacks(data), strings, ALL_THREADS, 0, True))
    for record, stacks in per_thread:
        name = str(record.get("name") or "thread %s" % record.get("id", len(threads)))
        tid = record.get("ident", record.get("id", len(threads)))
        threads.append(_thread(data, stacks, strings, name, tid, not threads and name == "MainThread"))
    return _document(data, threads, strings, title)


def _document(data: ProfileData, threads: List[dict], strings: "_Strings", title: str) -> dict:
    end = max((t["processShutdownTime"] for t in threads), default=0.0)
    cpus = os.cpu_count() or 0
    return {
        "meta": {
            "interval": 1.0,
            "startTime": 0,
            "profilingStartTime": 0,
            "profilingEndTime": end,
            "abi": platform.machine(),
            "misc": "fastprof deterministic profile",
            "oscpu": platform.machine(),
            "platform": platform.system(),
            "processType": 0,
            "categories": CATEGORIES,
            "stackwalk": 0,
            "toolkit": "",
            "version": FORMAT_VERSION,
            "preprocessedProfileVersion": PROCESSED_VERSION,
            "appBuildID": "",
            "physicalCPUs": cpus,
            "logicalCPUs": cpus,
            "CPUName": "",
            "product": title or "fastprof",
            "symbolicated": True,
            "markerSchema": [],
            "importedFrom": "fastprof",
            "extensions": {"id": [], "name": [], "baseURL": [], "length": 0},
        },
        "libs": [],
        "threads": threads,
        "pages": [],
        "shared": {
            "stringArray": strings.array,
            "sources": {"length": 0, "uuid": [], "filename": []},
        },
    }


def _thread(data: ProfileData, stacks: Stacks, strings: _Strings, name: str, tid,
            main: bool) -> dict:
    funcs = {"name": [], "isJS": [], "relevantForJS": [], "resource": [], "fileName": [],
             "lineNumber": [], "columnNumber": []}
    frames = {"address": [], "category": [], "subcategory": [], "func": [], "innerWindowID": [],
              "implementation": [], "optimizations": [], "line": [], "column": [],
              "inlineDepth": [], "nativeSymbol": []}
    resources = {"lib": [], "name": [], "host": [], "type": []}
    resource_of: Dict[str, int] = {}
    # one func and one frame per function, at the same index
    for key in stacks.functions:
        python = not is_builtin(key)
        line: Optional[int] = key[1] if python and isinstance(key[1], int) and key[1] > 0 else None
        resource = -1
        if python:
            filename = str(key[0])
            resource = resource_of.get(filename, -1)
            if resource < 0:
                resource = resource_of[filename] = len(resources["name"])
                resources["lib"].append(None)
                resources["name"].append(strings(os.path.basename(filename) or filename))
                resources["host"].append(None)
                resources["type"].append(RESOURCE_TYPE_LIBRARY)
        funcs["name"].append(strings(readable_name(key, data.qualnames)))
        funcs["isJS"].append(python)
        funcs["relevantForJS"].append(False)
        funcs["resource"].append(resource)
        funcs["fileName"].append(strings(str(key[0])) if python else None)
        funcs["lineNumber"].append(line)
        funcs["columnNumber"].append(None)
        frames["address"].append(-1)
        frames["category"].append(CATEGORY_PYTHON if python else CATEGORY_NATIVE)
        frames["subcategory"].append(0)
        frames["func"].append(len(frames["func"]))
        for col in ("innerWindowID", "implementation", "optimizations", "column", "nativeSymbol"):
            frames[col].append(None)
        frames["line"].append(line)
        frames["inlineDepth"].append(0)

    stack_table = {"frame": [], "category": [], "subcategory": [], "prefix": []}
    stack_of: Dict[tuple, int] = {}
    samples = {"stack": [], "time": [], "weight": []}
    t = 0.0
    # a profile weighed by bytes: the samples' "seconds" are bytes, weighed as such
    scale, weight_type = (1.0, "bytes") if data.weight else (1e3, "tracing-ms")
    for sample in stacks.samples:
        ms = sample.seconds * scale
        if ms <= 0.0:
            continue  # a sample weighs its time (or bytes): nothing to show
        prefix = None
        for f in sample.stack:
            k = (prefix, f)
            idx = stack_of.get(k)
            if idx is None:
                idx = stack_of[k] = len(stack_table["frame"])
                stack_table["frame"].append(f)
                stack_table["category"].append(frames["category"][f])
                stack_table["subcategory"].append(0)
                stack_table["prefix"].append(prefix)
            prefix = idx
        samples["stack"].append(prefix)
        samples["time"].append(t)
        samples["weight"].append(ms)
        t += ms
    for table in (funcs, frames, resources, stack_table, samples):
        table["length"] = len(next(iter(table.values())))
    samples["weightType"] = weight_type
    return {
        "name": name + ("" if stacks.exact else ESTIMATED_SUFFIX),
        "isMainThread": main,
        "processStartupTime": 0,
        "processShutdownTime": t,
        "registerTime": 0,
        "unregisterTime": None,
        "pausedRanges": [],
        "pid": "0",  # the file does not say which process
        "tid": tid,
        "processType": "default",
        "processName": "fastprof profile",
        "samples": samples,
        "stackTable": stack_table,
        "frameTable": frames,
        "funcTable": funcs,
        "resourceTable": resources,
        "nativeSymbols": {"libIndex": [], "address": [], "name": [], "functionSize": [], "length": 0},
        "markers": {"data": [], "name": [], "startTime": [], "endTime": [], "phase": [],
                    "category": [], "length": 0},
    }


def write_gecko(data: ProfileData, out: TextIO, title: Optional[str] = None) -> None:
    json.dump(gecko_document(data, title or ""), out, separators=(",", ":"), allow_nan=False)
    out.write("\n")
