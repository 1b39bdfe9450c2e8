"""fastprof: a fast deterministic profiler for CPython, a drop-in cProfile.

    import fastprof
    fastprof.run("main()")                       # as cProfile.run
    with fastprof.Profile() as pr:               # as cProfile.Profile
        main()
    pr.print_stats("cumulative")
    pr.dump_stats("out.prof")                    # pstats, snakeviz... read it

    python -m fastprof [-o out.prof] [-s cumtime] script.py [args...]
"""

__all__ = ["Profile", "run", "runctx", "profile", "label", "install_signal_toggle",
           "uninstall_signal_toggle"]
__version__ = "0.1.0"


# The package's face is lazy (PEP 562): each name is imported on first use,
# so that ``import fastprof`` imports nothing cProfile does not, and
# importing a submodule (the pytest plugin's run_options.RUN_OPTIONS) does not
# load the C extension. label lives in fastprof.data.names (with the other naming
# helpers, which import typing and re), the signal toggle in its run mode.
_LAZY = {"Profile": "recording.profiler", "profile": "recording.profiler", "run": "recording.profiler",
         "runctx": "recording.profiler", "label": "data.names", "install_signal_toggle": "modes.signal_toggle",
         "uninstall_signal_toggle": "modes.signal_toggle"}


def __getattr__(name):
    if name in _LAZY:
        import importlib  # the lazy face: imported on first use
        value = getattr(importlib.import_module("." + _LAZY[name], __name__), name)
        globals()[name] = value  # found here from now on
        return value
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def load_ipython_extension(ipython):
    """``%load_ext fastprof``: the %fastprof and %%fastprof magics (IPython is
    imported only now)."""
    from .modes.ipython_magic import load  # the lazy face: IPython only when loaded
    load(ipython)
