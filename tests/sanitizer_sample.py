"""Which test files the ASan+UBSan lanes run on every version, and which on two.

The sanitizers check fastprof's C code. A test file whose subject is that C
(events, threads, generators, gc, lines, clocks, signals, shutdown, memory,
attach, routing, the stub) runs under them on every version: the C differs per
version (profile hook or sys.monitoring, each version's frame layout). The
files below test Python-level code (command lines, file formats, exports,
views, the run modes' logic, docs); the C they reach is the plain
enable/run/disable/getstats path that the C files already take on every
version. Under the sanitizers they run on SAMPLE_VERSIONS only: one version
of the profile hook and one of sys.monitoring (3.14: also attach and `top`).
test_scale.py is there too: what it drives to 200,000 functions is the
core's tables (csrc/fp_*, the same C on every version, whose growth the C
tests also run under ASan and valgrind).
The plain lanes run every file on every version.

FASTPROF_SANITIZER_SAMPLE=all runs every file on every sanitized version.
"""
import os
import sys

SAMPLE_VERSIONS = ("3.9", "3.14")

PYTHON_LEVEL_FILES = frozenset("""
    test_atomic_write.py test_benchmarks_smoke.py test_binding_doc.py test_check.py
    test_cli.py test_cli_formats.py test_cli_imports.py test_cli_main.py
    test_compat_rules.py test_ctrl_c.py test_diff.py test_doc_links.py test_exports.py
    test_file_sources.py test_html.py test_installs.py test_ipython.py
    test_mode_notes.py test_packaging.py test_patterns.py test_portable_names.py
    test_pprof_gecko.py test_pytest_plugin.py test_readers.py test_sampled_files.py test_scale.py
    test_small_frictions.py test_subprocesses.py test_tools.py test_top.py
""".split())


def runs_everything():
    """True unless this is a sanitized run on a version outside the sample."""
    if os.environ.get("FASTPROF_SANITIZED") != "1":
        return True
    if os.environ.get("FASTPROF_SANITIZER_SAMPLE") == "all":
        return True
    return "%d.%d" % sys.version_info[:2] in SAMPLE_VERSIONS


def left_to_the_sample(item):
    """True for a test this sanitized run leaves to the sample versions."""
    return os.path.basename(str(item.fspath)) in PYTHON_LEVEL_FILES
