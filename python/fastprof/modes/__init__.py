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

They use ``Profile``'s public interface and the command lines' shared
declarations (cmdline); nothing below them (the model, views, exports)
imports them.
"""

import os


def package_parent():
    """The directory holding this fastprof package: what another process's
    sys.path needs to import it (an attached process, a child)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
