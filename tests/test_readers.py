"""Files every cProfile tool reads.

A profile written by fastprof's dump_stats() -- with a fastprof trailer after
the pstats table (callpaths=True) -- is read by pstats.Stats, browsed with
`python -m pstats`, drawn by gprof2dot (checked with graphviz's dot), served
by snakeviz, drawn by flameprof, and read by tuna.  The readers run in
child processes without the sanitizer preload (conftest's native_env): they
never load fastprof.
"""
import io
import marshal
import os
import pstats
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helpers  # noqa: E402

sys.path.insert(0, helpers.CORPUS_DIR)
import closures_decorators  # noqa: E402
import recursion  # noqa: E402

# Functions of the profiled workload every reader must show.
NAMES = ("fib", "flatten", "workload")

# Reader packages that cannot be installed on some Python version:
# {(major, minor): {module names}}.  Anything else missing is a broken test
# environment (see requirements-test.txt), not a skip.
UNAVAILABLE = {}


def workload():
    recursion.main()
    closures_decorators.main()


def require(module):
    try:
        __import__(module)
    except ImportError:
        if module in UNAVAILABLE.get(sys.version_info[:2], ()):
            pytest.skip("%s cannot be installed on Python %d.%d" % ((module,) + sys.version_info[:2]))
        pytest.fail("%s is not installed: pip install -r requirements-test.txt" % module)


@pytest.fixture(scope="module")
def prof_file(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("readers") / "work.prof")
    cls = helpers.profiler_class()
    kwargs = {} if helpers.USING_CPROFILE else {"callpaths": True}
    prof = cls(**kwargs)
    prof.enable()
    workload()
    prof.disable()
    prof.dump_stats(path)
    return path


def test_file_layout(prof_file):
    """The pstats table first, then (fastprof) the trailer."""
    with open(prof_file, "rb") as f:
        stats = marshal.load(f)
        rest = f.read()
    assert isinstance(stats, dict) and stats
    names = {k[2] for k in stats}
    assert set(NAMES) <= names
    if not helpers.USING_CPROFILE:
        assert rest, "callpaths=True wrote no trailer"
        from fastprof.data.profile_file import load_profile
        data = load_profile(prof_file)
        assert data.callpaths is not None and data.callpaths.nodes
        assert data.stats == stats


def test_pstats_stats(prof_file):
    st = pstats.Stats(prof_file, stream=io.StringIO())
    assert set(NAMES) <= {k[2] for k in st.stats}
    assert st.total_calls > 100
    out = io.StringIO()
    st.stream = out
    st.strip_dirs().sort_stats("cumulative").print_stats(20)
    st.print_callers("fib")
    st.print_callees("workload")
    text = out.getvalue()
    assert "function calls" in text and "fib" in text and "workload" in text
    fib = [v for k, v in st.stats.items() if k[2] == "fib"][0]
    # doubling: Stats.add merges a second copy of the same file
    st2 = pstats.Stats(prof_file, stream=io.StringIO())
    st2.add(prof_file)
    fib2 = [v for k, v in st2.stats.items() if k[2] == "fib"][0]
    assert fib2[1] == 2 * fib[1]
    if hasattr(st, "get_stats_profile"):
        names = {fp.split(":")[-1] for fp in st2.get_stats_profile().func_profiles}
        assert "fib" in names


def test_pstats_from_profile_object():
    prof = helpers.profiler_class()()
    prof.enable()
    workload()
    prof.disable()
    st = pstats.Stats(prof, stream=io.StringIO())
    assert set(NAMES) <= {k[2] for k in st.stats}


def test_pstats_browser(prof_file, native_env):
    commands = "sort cumulative\nstats 5\ncallers fib\ncallees workload\ncallers\ncallees\nquit\n"
    proc = subprocess.run([sys.executable, "-m", "pstats", prof_file], input=commands,
                          capture_output=True, text=True, timeout=60, env=native_env)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Traceback" not in out + proc.stderr
    assert "*** " not in out, out  # pstats' browser reports its errors with ***
    assert "function calls" in out
    for name in NAMES:
        assert "(%s)" % name in out, name
    assert "was called by" in out and "called..." in out


def test_gprof2dot(prof_file, native_env):
    require("gprof2dot")
    proc = subprocess.run([sys.executable, "-m", "gprof2dot", "-f", "pstats", "-n", "0", "-e", "0",
                           prof_file], capture_output=True, text=True, timeout=120, env=native_env)
    assert proc.returncode == 0, proc.stderr
    dot_text = proc.stdout
    assert dot_text.lstrip().startswith("digraph")
    assert dot_text.count("{") == dot_text.count("}")
    for name in NAMES:
        assert name in dot_text, name
    if shutil.which("dot") is None:
        helpers.tool_missing("graphviz's dot is not installed (scripts/apt-packages.txt lists "
                             "graphviz); the dot text was only checked by hand")
    svg = subprocess.run(["dot", "-Tsvg"], input=dot_text, capture_output=True, text=True, timeout=120,
                         env=native_env)
    assert svg.returncode == 0, svg.stderr
    root = ET.fromstring(svg.stdout)
    assert root.tag.endswith("svg")
    assert "fib" in svg.stdout


def test_flameprof(prof_file, tmp_path, native_env):
    require("flameprof")
    out = tmp_path / "flame.svg"
    with open(str(out), "w") as f:
        proc = subprocess.run([sys.executable, "-m", "flameprof", prof_file], stdout=f,
                              stderr=subprocess.PIPE, text=True, timeout=120, env=native_env)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    root = ET.fromstring(text)
    assert root.tag.endswith("svg")
    assert "fib" in text and "workload" in text


def test_tuna(prof_file):
    require("tuna")
    from tuna.main import read, render
    data = read(prof_file)
    assert data
    page = render(data, prof_file)
    for name in NAMES:
        assert name in page, name


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_snakeviz(prof_file, native_env):
    require("snakeviz")
    require("tornado")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-u", "-m", "snakeviz", "-s", "-p", str(port),
                             "-H", "127.0.0.1", prof_file],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=native_env)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        url = None
        page = None
        while time.monotonic() < deadline and page is None:
            if proc.poll() is not None:
                break
            url = next((ln.strip() for ln in list(lines) if ln.startswith("http://127.0.0.1:")), None)
            if url is None:
                time.sleep(0.1)
                continue
            try:
                with urllib.request.urlopen(url, timeout=10) as resp:
                    assert resp.status == 200
                    page = resp.read().decode("utf-8", "replace")
            except (urllib.error.URLError, ConnectionError, socket.timeout):
                time.sleep(0.2)
        assert page is not None, "snakeviz gave no page (url %r); output:\n%s" % (url, "".join(lines))
        for name in NAMES:
            assert name in page, name
        assert "Could not read" not in page
    finally:
        proc.kill()
        proc.wait(timeout=30)
        reader.join(timeout=10)
