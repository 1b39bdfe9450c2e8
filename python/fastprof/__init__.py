"""fastprof: a fast deterministic profiler for CPython, a drop-in cProfile.

    import fastprof
    fastprof.run("main()")                       # as cProfile.run
    with fastprof.Profile() as pr:               # as cProfile.Profile
        main()
    pr.print_stats("cumulative")
    pr.dump_stats("out.prof")                    # pstats, snakeviz... read it

    python -m fastprof [-o out.prof] [-s cumtime] script.py [args...]
"""

from .profiler import Profile, label, profile, run, runctx
from .signal_toggle import install_signal_toggle, uninstall_signal_toggle

__all__ = ["Profile", "run", "runctx", "profile", "label", "install_signal_toggle",
           "uninstall_signal_toggle"]
__version__ = "0.1.0"
