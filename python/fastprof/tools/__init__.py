"""The offline views and tools: what reads profiles after the run, in any
process, with or without the C extension.

``view`` (the table, callers and callees, the tree), ``line_view`` (line
listings), ``diff``, ``merge`` (sums of profiles), ``counts`` (exact count
tables, the gate's baselines), ``count_causes`` (why a test's counts varied)
and ``check`` (``fastprof check``).

May import: the standard library, ``fastprof.data``, and modules of this
wing below their own floor (pyproject.toml). Never the recording wing, the
run modes, the exports or the command lines.
"""
