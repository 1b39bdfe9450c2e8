"""Run one corpus program under cProfile and under the profiler under test,
in this one interpreter, and write what they saw with marshal: per mode and
run, the pstats dict (create_stats) and the raw getstats() entries.

    python _runner.py MODULE OUTFILE [MODE,MODE...]

Order: warm-up (main() twice, unprofiled: import-time work, re/functools
caches, lazy imports), then per mode cProfile, fastprof, cProfile again.
The two cProfile runs must agree, which shows the program itself is
deterministic; a difference between fastprof and the first cProfile run is
then fastprof's.  The cyclic GC is collected before and kept
off during each profiled call so that no finalizer runs at a different point
in one run than in another.
"""
import cProfile
import gc
import importlib
import marshal
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# mode: (kwargs for both profilers, extra kwargs for fastprof only).  The
# fastprof-only options must not change what is counted.
MODES = {
    "default": ({}, {}),
    "nobuiltins": ({"builtins": False}, {}),
    "nosubcalls": ({"subcalls": False}, {}),
    "callpaths": ({}, {"callpaths": True}),
    "threads": ({}, {"threads": True}),
    # fast=True (test_fast_mode.py): Python functions only, so the oracle
    # is cProfile with builtins=False; run only when asked for by name
    "fast": ({"builtins": False}, {"fast": True}),
    "fast_callpaths": ({"builtins": False}, {"fast": True, "callpaths": True}),
    "fast_threads": ({"builtins": False}, {"fast": True, "threads": True}),
}
FAST_MODES = [m for m in MODES if m.startswith("fast")]


def test_class():
    if os.environ.get("FASTPROF_TEST_IMPL", "fastprof").lower() == "cprofile":
        return cProfile.Profile, None
    import fastprof
    return fastprof.Profile, os.path.dirname(os.path.abspath(fastprof.__file__))


def profile_once(factory, kwargs, main):
    prof = factory(**kwargs)
    gc.collect()
    gc.disable()
    try:
        if factory is cProfile.Profile:
            # cProfile on 3.14+ deviates from its documentation: enable()
            # without arguments sets subcalls and builtins back to True, so
            # Profile(builtins=False) records builtins and edges anyway.
            # Passing the flags to enable() too gives the documented meaning,
            # which fastprof keeps (its own enable() is called plainly, so
            # the constructor's flags are what is tested there).
            prof.enable(**{k: v for k, v in kwargs.items() if k in ("subcalls", "builtins")})
        else:
            prof.enable()
        main()
        prof.disable()
    finally:
        gc.enable()
    raw = prof.getstats()
    result = {"entries": [entry_record(e) for e in raw]}
    if kwargs.get("callpaths"):
        result["flat_times"] = flat_times(raw)
        result["paths"] = [(parent, code_key(code), calls, inline, total)
                           for parent, code, calls, inline, total in prof.callpaths()]
    prof.create_stats()
    result["stats"] = dict(prof.stats)
    del prof, raw
    gc.collect()
    return result


def flat_times(entries):
    """{code key: [callcount, inlinetime, totaltime]} (C functions sharing a
    name summed), to check the call paths against."""
    out = {}
    for e in entries:
        row = out.setdefault(code_key(e.code), [0, 0.0, 0.0])
        row[0] += e.callcount
        row[1] += e.inlinetime
        row[2] += e.totaltime
    return out


def code_key(code):
    """A code object by label and identity (the same objects are seen by
    every run in this process); a C function by its name."""
    if isinstance(code, str):
        return ("~", 0, code, 0)
    return (code.co_filename, code.co_firstlineno, code.co_name, id(code))


def entry_record(entry):
    calls = [(code_key(s.code), s.callcount, s.reccallcount) for s in (entry.calls or ())]
    return (code_key(entry.code), entry.callcount, entry.reccallcount, calls)


def main():
    module_name, outfile = sys.argv[1], sys.argv[2]
    modes = sys.argv[3].split(",") if len(sys.argv) > 3 else [m for m in MODES if m not in FAST_MODES]
    factory, fastprof_dir = test_class()
    module = importlib.import_module(module_name)
    module.main()  # warm-up: import-time work, re/functools caches, lazy imports
    module.main()
    result = {"fastprof_dir": fastprof_dir or "", "version": list(sys.version_info[:3])}
    for mode in modes:
        kwargs, extra = MODES[mode]
        test_kwargs = dict(kwargs) if fastprof_dir is None else dict(kwargs, **extra)
        result[mode] = {
            "ref_a": profile_once(cProfile.Profile, kwargs, module.main),
            "test": profile_once(factory, test_kwargs, module.main),
            "ref_b": profile_once(cProfile.Profile, kwargs, module.main),
        }
    with open(outfile, "wb") as f:
        marshal.dump(result, f)


if __name__ == "__main__":
    main()
