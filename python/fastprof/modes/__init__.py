"""The run modes: the ways of profiling beside ``Profile`` and the two
command lines, each in its own module.

- ``attach``: ``fastprof attach PID`` (3.14+); ``attach_agent``: what runs
  inside the attached process; ``process_alive``: whether a process exists;
  ``interrupts``: Ctrl-C noted, not raised, while a mode holds a profile
- ``top``: ``fastprof top PID`` (3.14+), a live view; ``top_agent``: what
  it runs inside the process (attach_agent's session plus snapshots)
- ``signal_toggle``: the dormant profiler a signal toggles (``--signal``)
- ``subprocesses``: ``--subprocesses``, a profiler in each Python child
- ``pytest_plugin``: ``pytest --fastprof`` (entry point ``pytest11``)
- ``ipython_magic``: ``%fastprof`` / ``%%fastprof``

- ``run_command``: ``python -m fastprof`` (cProfile's command line);
  ``run_options``: the run options every command line and mode declares
  the same way, the ``Profile`` they make, output formats and paths
- ``middleware``: per-request profiles of web services (public as
  ``fastprof.middleware``); ``count_gate`` and ``per_test``: the pytest
  plugin's ``--fastprof-counts`` and ``--fastprof-per-test``

May import: the standard library (heavy or optional modules where first
needed), ``fastprof.recording`` (``Profile``'s public interface only),
``fastprof.exports``, ``fastprof.tools``, ``fastprof.data``, and modes on
the floors below its own (pyproject.toml); never a sibling mode's private
names (scripts/check_house.py). Only the command lines (``cli``,
``commands``) import them.
"""

import os


def package_parent():
    """The directory holding this fastprof package: what another process's
    sys.path needs to import it (an attached process, a child)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
