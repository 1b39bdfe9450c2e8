"""The data model: what a profile *is*, usable without the C extension.

The pstats dict and its arithmetic (``model``), names of functions for
people and across installs (``names``, ``portable_names``), the file format
and its trailer (``profile_file``, ``cost_note``, ``line_sources``), the
calling-context tree (``calltree``), thread groups (``thread_groups``), the
table of output formats (``formats``), the checks of arguments shared by the
API and the command lines (``arguments``) and atomic file writes
(``atomic_file``).

May import: the standard library and other modules of this wing; the C
extension only as an optional accelerator with a pure-Python fallback.
Nothing else of fastprof: every other wing stands on this one.
"""
