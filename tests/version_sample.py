"""Which test files ``make test`` runs on which Python versions.

Every test file whose subject is fastprof's C code (events, threads,
generators, gc, lines, clocks, signals, shutdown, memory, attach, routing,
the stub) runs on every version, plain and under ASan+UBSan: the C differs
per version (profile hook or sys.monitoring, each version's frame layout).

The files in PYTHON_LEVEL_FILES test Python-level code (command lines, file
formats, exports, views, the run modes' logic, the count gate, the house
rules, docs); the C they reach is the plain enable/run/disable/getstats path
that the C files take on every version. ``make test`` runs them on a sample
of versions that has each side of every version switch the Python code makes:

- plain: PLAIN_SAMPLE, the oldest (3.9: the profile hook, the oldest
  standard library) and the newest;
- under the sanitizers: ASAN_SAMPLE, 3.14 (sys.monitoring, attach and
  ``top`` through ``sys.remote_exec``), whose plain run leaves them to it.

A test that checks one version's own behaviour in a Python-level file (3.13
refusing ``--fast``) is named in EVERY_VERSION_TESTS: it runs wherever its
file is left out (and skips itself elsewhere).

The files in NOT_SANITIZED_FILES never run under the sanitizers: they have
no C path of their own (docs, the house rules, the benchmarks' scripts,
packaging, the build without the extension, the count gate's pytest inside
pytest, the command line's Ctrl-C and child-process timings over the signal
toggle and fork paths the C files test) or their C is tested under ASan and
valgrind by the C tests (test_scale.py: the core's tables driven to 200,000
functions).

The files in SANITIZED_ON_SAMPLE_FILES run plain on every version but under
the sanitizers only on ASAN_SAMPLE: they repeat, thousands of times, paths
that the other files run sanitized on every version, to measure growth
(test_request_soak.py: memory and CPU per request over 8,000 requests).

The sample applies under ``make test`` (scripts/run-tests.sh sets
FASTPROF_VERSION_SAMPLE=1) and in every sanitized run; ``make test-py`` and
a plain ``pytest`` run every file.
FASTPROF_VERSION_SAMPLE=all runs every file everywhere. A new test file runs
everywhere until it is added to the list.
"""
import os
import sys

PLAIN_SAMPLE = ("3.9", "3.15")
ASAN_SAMPLE = ("3.14",)

PYTHON_LEVEL_FILES = frozenset("""
    test_atomic_write.py test_benchmarks_smoke.py test_binding_doc.py test_check.py
    test_cli.py test_cli_formats.py test_cli_imports.py test_cli_main.py test_commands.py
    test_compat_rules.py test_count_gate.py test_count_gate_real.py test_ctrl_c.py
    test_diff.py test_doc_links.py test_exports.py test_file_sources.py test_format_table.py
    test_house_rules.py test_html.py test_installs.py test_ipython.py test_middleware.py
    test_mode_notes.py test_packaging.py test_patterns.py test_portable_names.py
    test_pprof_gecko.py test_profile_file.py test_pytest_plugin.py test_readers.py
    test_sampled_files.py test_scale.py test_small_frictions.py test_subprocesses.py
    test_tools.py test_top.py test_without_extension.py
""".split())

EVERY_VERSION_TESTS = frozenset("""
    test_fast_on_3_13_is_a_usage_error
""".split())

NOT_SANITIZED_FILES = frozenset("""
    test_benchmarks_smoke.py test_binding_doc.py test_compat_rules.py test_count_gate.py
    test_count_gate_real.py test_ctrl_c.py test_doc_links.py test_house_rules.py
    test_packaging.py test_scale.py test_subprocesses.py test_without_extension.py
""".split())

SANITIZED_ON_SAMPLE_FILES = frozenset("""
    test_request_soak.py
""".split())


def _version():
    return "%d.%d" % sys.version_info[:2]


def sample():
    """The versions this run leaves the Python-level files to, or None
    when it runs them."""
    wanted = os.environ.get("FASTPROF_VERSION_SAMPLE")
    if wanted == "all":
        return None
    if _sanitized():
        versions = ASAN_SAMPLE
    elif wanted == "1":
        versions = PLAIN_SAMPLE
    else:
        return None
    return None if _version() in versions else versions


def _sanitized():
    return os.environ.get("FASTPROF_SANITIZED") == "1"


def left_out(item):
    """True for a test this run leaves to other versions or builds: under
    the sanitizers, of a file they never run (or run on ASAN_SAMPLE only,
    elsewhere); outside the sample, of a Python-level file, unless it
    checks one version's own behaviour."""
    name = os.path.basename(str(item.fspath))
    if _sanitized() and os.environ.get("FASTPROF_VERSION_SAMPLE") != "all":
        if name in NOT_SANITIZED_FILES:
            return True
        if name in SANITIZED_ON_SAMPLE_FILES and _version() not in ASAN_SAMPLE:
            return True
    return (name in PYTHON_LEVEL_FILES and sample() is not None
            and getattr(item, "originalname", item.name) not in EVERY_VERSION_TESTS)
