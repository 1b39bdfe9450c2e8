"""fastprof: a fast deterministic profiler for CPython, a drop-in cProfile.

    import fastprof
    fastprof.run("main()")                       # as cProfile.run
    with fastprof.Profile() as pr:               # as cProfile.Profile
        main()
    pr.print_stats("cumulative")
    pr.dump_stats("out.prof")                    # pstats, snakeviz... read it

    python -m fastprof [-o out.prof] [-s cumtime] script.py [args...]
"""

from .profiler import Profile, profile, run, runctx

__all__ = ["Profile", "run", "runctx", "profile", "label", "install_signal_toggle",
           "uninstall_signal_toggle"]
__version__ = "0.1.0"


# Loaded on first use, so that ``import fastprof`` imports nothing cProfile
# does not: label lives in fastprof.names (with the other naming helpers,
# which import typing and re), the signal toggle in fastprof.signal_toggle.
_LAZY = {"label": "names", "install_signal_toggle": "signal_toggle",
         "uninstall_signal_toggle": "signal_toggle"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module("." + _LAZY[name], __name__), name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def load_ipython_extension(ipython):
    """``%load_ext fastprof``: the %fastprof and %%fastprof magics (IPython is
    imported only now)."""
    from .ipython_magic import load
    load(ipython)
