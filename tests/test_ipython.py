"""The IPython / Jupyter magics (issue 14, item 5): ``%load_ext fastprof``,
``%fastprof [options] statement`` and ``%%fastprof [options]``.

Each test drives a real ``InteractiveShell.instance()`` (IPython from
requirements-test.txt) in a child interpreter: a Jupyter kernel's shell is
that class with a front end that shows HTML, a terminal IPython one whose
display formatter keeps only text/plain. cProfile, run here on the same
function, gives the expected call counts.
"""
import cProfile
import pstats
import re
import sys
import textwrap

import pytest

from helpers import (
    TESTS_DIR,
    USING_CPROFILE,
    check_fast_like_cprofile,
    check_scoped_like_cprofile,
    line_hits,
    run_python,
    settrace_hits,
    subprocess_env,
    tool_missing,
)

ANSI = re.compile(r"\x1b\[[0-9;]*m")

# The shell, fastprof loaded, fib defined in the user's namespace; cells()
# runs each cell and prints ==> its result's repr <== after it.
PRELUDE = textwrap.dedent("""\
    import json, sys
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.displaypub import CapturingDisplayPublisher
    shell = InteractiveShell.instance()
    shell.display_pub = CapturingDisplayPublisher()
    shell.run_cell("%load_ext fastprof")
    shell.run_cell("def fib(n):\\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\\n")

    def cell(text):
        r = shell.run_cell(text)
        sys.stdout.flush()
        print("==> result=%r error=%r" % (r.result, r.error_in_exec))
        return r

    def displayed():
        out = [sorted(o["data"]) for o in shell.display_pub.outputs]
        shell.display_pub.clear_output()
        return out
""")


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def cprofile_fib_calls(n):
    """fib's 'ncalls' column as cProfile prints it for fib(n): '1973/1'."""
    prof = cProfile.Profile()
    prof.runcall(fib, n)
    (cc, nc, _tt, _ct, _c), = [v for k, v in pstats.Stats(prof).stats.items() if k[2] == "fib"]
    return "%d/%d" % (nc, cc) if nc != cc else str(nc)


@pytest.fixture(scope="module", autouse=True)
def ipython():
    try:
        import IPython  # noqa: F401
    except ImportError:
        tool_missing("IPython is not installed (requirements-test.txt)")


def run_shell(tmp_path, body):
    script = tmp_path / "drive.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    r = run_python([str(script)], cwd=str(tmp_path), env=subprocess_env(PYTHONSTARTUP=""),
                   timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return ANSI.sub("", r.stdout), r.stderr


def fib_row_calls(text):
    """The ncalls column of the fib row of the pstats table(s) in *text*."""
    return [line.split()[0] for line in text.splitlines() if line.rstrip().endswith(":1(fib)")]


def test_line_magic_prints_the_table_with_cprofile_counts(tmp_path):
    out, _err = run_shell(tmp_path, """\
        cell("%fastprof -s ncalls x = fib(15)")
        cell("print('x is', x)")     # the statement ran in the user's namespace
    """)
    assert fib_row_calls(out) == [cprofile_fib_calls(15)], out
    assert "Ordered by: call count" in out
    assert "==> result=None error=None" in out
    assert "x is 610" in out


def test_cell_magic_profiles_the_whole_cell(tmp_path):
    out, _err = run_shell(tmp_path, """\
        cell("%%fastprof --no-threads\\nfor i in range(3):\\n    fib(10)\\ny = {'a': 1}\\n")
        cell("print('y is', y)")
    """)
    nc, cc = cprofile_fib_calls(10).split("/")
    assert fib_row_calls(out) == ["%d/%d" % (3 * int(nc), 3 * int(cc))], out
    assert "y is {'a': 1}" in out                # braces kept: no $/{} expansion


def test_output_file(tmp_path):
    out, _err = run_shell(tmp_path, """\
        cell("%%fastprof -o cell.prof\\nfib(12)\\n")
        print("displays:", json.dumps(displayed()))
        cell("%fastprof -o line.html fib(8)")
    """)
    path = tmp_path / "cell.prof"
    assert "%%fastprof: profile written to %s\n" % path in out
    stats = pstats.Stats(str(path)).stats
    (cc, nc, _tt, _ct, _c), = [v for k, v in stats.items() if k[2] == "fib"]
    assert ("%d/%d" % (nc, cc)) == cprofile_fib_calls(12)
    assert fib_row_calls(out) == []              # -o: the file, not the table
    assert "displays: []" in out                 # nor the inline report
    assert "<html" in (tmp_path / "line.html").read_text().lower()


def test_memory_after_the_table_and_in_the_file(tmp_path):
    out, _err = run_shell(tmp_path, """\
        shell.run_cell("def grow(n):\\n    return [bytearray(1000) for _ in range(n)]\\n")
        cell("%fastprof --memory kept = grow(500)")
        cell("%fastprof --memory -o mem.prof kept = grow(200)")
    """)
    lines = out.splitlines()
    (totals,) = [line for line in lines if line.startswith("memory: ")]
    header = lines.index(next(line for line in lines if line.split()[:2] == ["allocated", "incl"]))
    assert lines.index(totals) > next(i for i, line in enumerate(lines) if line.rstrip().endswith(":1(grow)"))
    # grow's 500 blocks of 1000 bytes (before 3.12 its list comprehension's), with callees
    (row,) = [line.split() for line in lines[header + 1:] if "grow" in line and line.split()[-1] != "<listcomp>"]
    assert row[3] == "KiB" and 500 * 1000 <= float(row[2]) * 1024 < 500 * 1200, row
    from fastprof.profile_file import load_profile
    data = load_profile(str(tmp_path / "mem.prof"))
    (grow,) = [r for k, r in data.memory.items() if k[2] == "grow"]
    assert 200 * 1000 <= grow.allocated_incl < 200 * 1200, grow


def test_exception_shows_traceback_and_profile(tmp_path):
    out, _err = run_shell(tmp_path, """\
        cell("%%fastprof\\nfib(9)\\n1/0\\n")
        cell("print('next cell runs')")
    """)
    assert "ZeroDivisionError" in out and "division by zero" in out
    assert "----> 2 1/0" in out                  # the user's line, in the traceback
    assert "ipython_magic.py" not in out         # not fastprof's frames
    assert fib_row_calls(out) == [cprofile_fib_calls(9)]
    assert out.index("division by zero") < out.index(":1(fib)")   # traceback, then profile
    assert "==> result=None error=None" in out   # the magic returned nothing
    assert "next cell runs" in out


def test_html_report_inline_where_the_front_end_shows_html(tmp_path):
    out, _err = run_shell(tmp_path, """\
        cell("%fastprof fib(10)")
        shown = shell.display_pub.outputs
        html = [o["data"]["text/html"] for o in shown if "text/html" in o["data"]]
        print("html outputs:", len(html))
        print("iframe:", html[0].startswith("<iframe srcdoc="), "fib" in html[0])
        shell.display_pub.clear_output()
        # a terminal IPython keeps text/plain only: the table alone
        shell.display_formatter.active_types = ["text/plain"]
        cell("%fastprof fib(10)")
        print("terminal displays:", json.dumps(displayed()))
    """)
    assert "html outputs: 1" in out, out
    assert "iframe: True True" in out
    assert "terminal displays: []" in out
    assert fib_row_calls(out) == [cprofile_fib_calls(10)] * 2


def test_usage_errors_are_one_line(tmp_path):
    out, err = run_shell(tmp_path, """\
        cell("%fastprof --bogus fib(3)")
        cell("%fastprof -s nope fib(3)")
        cell("%fastprof")
        cell("%fastprof --help")
    """)
    text = out + err
    assert "UsageError: %fastprof: no such option: --bogus" in text
    assert "UsageError: %fastprof: option -s: invalid choice: 'nope'" in text
    assert "UsageError: %fastprof: no statement to profile" in text
    assert "Traceback" not in text
    assert "usage: %fastprof [options] statement" in out
    assert "--no-threads" in out and "-m" not in re.findall(r"^\s+(-m)\b", out, re.M)


def test_import_fastprof_does_not_import_ipython():
    r = run_python(["-c", "import fastprof, sys; print('IPython' in sys.modules)"])
    assert r.stdout.strip() == "False", r.stdout + r.stderr


# -- --lines, --only, --fast ------------------------------------------------------

fastprof_only = pytest.mark.skipif(USING_CPROFILE, reason="fastprof-only options")
# tests/ importable in the shell: lines_corpus, only_app, only_lib
CORPUS = 'sys.path.insert(0, %r)\nshell.run_cell("import lines_corpus, only_app")\n' % TESTS_DIR


@fastprof_only
def test_lines_in_the_file_and_after_the_table(tmp_path):
    import lines_corpus

    from fastprof.data.profile_file import load_profile
    out, err = run_shell(tmp_path, CORPUS + textwrap.dedent("""\
        cell("%fastprof -o lines.prof --lines lines_corpus --lines nope lines_corpus.run_all()")
        cell("%%fastprof --lines __main__:fib\\nfib(6)\\n")
    """))
    expected = settrace_hits(lines_corpus.run_all, "lines_corpus")
    assert len(expected) >= 10
    assert line_hits(load_profile(str(tmp_path / "lines.prof")).lines) == expected
    assert "%fastprof: --lines nope: no function that ran matches it" in err
    # printed after the table: fib's one line, hit once per call
    listing = out[out.index("Line by line"):]
    calls = int(cprofile_fib_calls(6).split("/")[0])
    assert re.search(r"^\s*2\s+%d\s" % calls, listing, re.M), listing
    assert "%fastprof: --lines __main__:fib" not in err


@fastprof_only
def test_lines_from_an_earlier_profile(tmp_path):
    import lines_corpus

    from fastprof.data.profile_file import load_profile
    from fastprof.recording.line_profiling import top_functions
    # two functions ran before: which has more own time is the clock's (a
    # preemption decides it on a loaded machine), so the check holds for either
    statement = "lines_corpus.loop_branches(3000); lines_corpus.caught(100)"
    run_shell(tmp_path, CORPUS + textwrap.dedent("""\
        cell("%%fastprof -o old.prof %s")
        cell("%%fastprof -o new.prof --lines-from old.prof:1 %s")
    """ % (statement, statement)))
    wanted = top_functions(str(tmp_path / "old.prof"), 1)
    assert [k[2] for k in wanted] in (["loop_branches"], ["caught"]), wanted
    got = line_hits(load_profile(str(tmp_path / "new.prof")).lines)
    # that one function's lines, with sys.settrace's hits
    assert list(got) == wanted
    everything = settrace_hits(lambda: (lines_corpus.loop_branches(3000), lines_corpus.caught(100)),
                               "lines_corpus")
    assert got == {wanted[0]: everything[wanted[0]]}


@fastprof_only
def test_only_keeps_the_app_with_cprofiles_counts(tmp_path):
    import only_app
    run_shell(tmp_path, CORPUS + textwrap.dedent("""\
        cell("%fastprof -o only.prof --only only_app only_app.main()")
    """))
    full = cProfile.Profile()
    full.runcall(only_app.main)
    check_scoped_like_cprofile(pstats.Stats(full).stats,
                               pstats.Stats(str(tmp_path / "only.prof")).stats,
                               lambda key: key[0].endswith("only_app.py"))


@fastprof_only
@pytest.mark.skipif(sys.version_info[:2] == (3, 13), reason="fast mode is refused on 3.13")
def test_fast_has_no_c_functions_and_cprofiles_counts(tmp_path):
    import lines_corpus
    run_shell(tmp_path, CORPUS + textwrap.dedent("""\
        cell("%fastprof -o fast.prof --fast lines_corpus.loop_branches(30); fib(9)")
    """))
    oracle = cProfile.Profile(builtins=False)
    oracle.runcall(lambda: (lines_corpus.loop_branches(30), fib(9)))
    expected = {k: v for k, v in pstats.Stats(oracle).stats.items()
                if k[0].endswith("lines_corpus.py")}
    stats = pstats.Stats(str(tmp_path / "fast.prof")).stats
    check_fast_like_cprofile(expected, stats)
    (fib_row,) = [v for k, v in stats.items() if k[2] == "fib"]
    assert "%d/%d" % (fib_row[1], fib_row[0]) == cprofile_fib_calls(9)


@fastprof_only
def test_scope_option_errors_are_one_line(tmp_path):
    out, err = run_shell(tmp_path, """\
        cell("%fastprof --fast --lines x fib(3)")
        cell("%fastprof --only bad: fib(3)")
    """)
    text = out + err
    assert ("UsageError: %fastprof: --fast cannot be combined with --lines (not supported yet)"
            in text)
    assert "UsageError: %fastprof: --only: bad function pattern" in text
    assert "Traceback" not in text


@fastprof_only
@pytest.mark.skipif(sys.version_info[:2] != (3, 13), reason="fast mode is refused on 3.13 only")
def test_fast_on_3_13_is_a_usage_error(tmp_path):
    out, err = run_shell(tmp_path, """\
        cell("%fastprof --fast fib(3)")
    """)
    lines = [line for line in (out + err).splitlines() if line.startswith("UsageError")]
    assert len(lines) == 1 and lines[0].startswith("UsageError: %fastprof: "), out + err
    assert "not available on Python 3.13" in lines[0]
    assert "Traceback" not in out + err
