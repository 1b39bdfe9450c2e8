"""What runs inside the profiled process while it is profiled.

``profiler`` (``fastprof.Profile`` on the C extension), ``line_profiling``
(``--lines``), ``func_patterns`` (which code objects a pattern names),
``calibration`` and ``calibration_cache`` (the profiler's own cost per
event), ``thread_names`` (names of threads as they start) and ``exit_hook``
(``os._exit`` while recording).

These modules are imported into the program being profiled: they import
nothing at module level that cProfile would not (heavy or optional modules
are imported where first needed, and say why), and allocate nothing on the
hot path (that is the C extension's).

May import: the standard library, the C extension, ``fastprof.data`` and
``fastprof.tools`` (printing a table from ``Profile.print_stats``).
Never the run modes, the exports or the command lines.
"""
