"""Names people can read (issue 11, items 5-8): C functions whose names carry
an address are one function across runs; qualified names in the views;
threads of a server named and grouped; overlapping coroutine times without
absurd percentages.  Every profile here comes from a real run in a child
process (addresses differ between processes)."""

import os
import subprocess
import sys
import textwrap

import pytest

import fastprof
from fastprof.data import model, names
from fastprof.data.profile_file import ProfileData, load_profile, write_profile
from fastprof.tools import diff, merge

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import cli_env as env  # noqa: E402

HAS_QUALNAME = sys.version_info >= (3, 11)


def python(*args, cwd, timeout=120):
    r = subprocess.run([sys.executable] + list(args), cwd=str(cwd), env=env(), timeout=timeout,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert r.returncode == 0, r.stderr
    return r


def profile(tmp_path, source, out, *options):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(source))
    python("-m", "fastprof", "-o", out, *options, "prog.py", cwd=tmp_path)
    return load_profile(str(tmp_path / out))


def view(tmp_path, *args):
    return python("-m", "fastprof.cli", "view", *args, cwd=tmp_path).stdout


# -- item 5: addresses ------------------------------------------------------

ADDRESSED = """
class A:
    pass

def work():
    for _ in range(5):
        object.__new__(A)

work()
"""


def _addressed(stats):
    return [k for k in stats if model.is_builtin(k) and " at 0x" in k[2]]


@pytest.fixture
def two_runs(tmp_path):
    a = profile(tmp_path, ADDRESSED, "a.prof")
    b = profile(tmp_path, ADDRESSED, "b.prof")
    ka, kb = _addressed(a.stats), _addressed(b.stats)
    assert len(ka) == 1 and len(kb) == 1, (ka, kb)
    if ka == kb:
        pytest.skip("the two processes got the same address (ASLR off?)")
    return a, b, ka[0], kb[0]


def test_diff_matches_a_builtin_whose_address_changed(two_runs, tmp_path):
    a, b, ka, kb = two_runs
    changes = {c.key: c for c in diff.diff_stats(a.stats, b.stats)}
    key = model.match_key(ka)
    assert key == model.match_key(kb) and "0x" not in key[2]
    c = changes[key]
    assert c.base_key is not None and c.new_key is not None
    assert c.base[:2] == c.new[:2] == (5, 5)
    out = python("-m", "fastprof.cli", "diff", "a.prof", "b.prof", "-s", "calls", "-n", "0",
                 cwd=tmp_path).stdout
    assert "[new]" not in out and "[gone]" not in out and " at 0x" not in out


def test_merge_sums_a_builtin_whose_address_changed(two_runs, tmp_path):
    a, b, ka, kb = two_runs
    python("-m", "fastprof.cli", "merge", "a.prof", "b.prof", "-o", "ab.prof", cwd=tmp_path)
    merged = load_profile(str(tmp_path / "ab.prof"))
    rows = _addressed(merged.stats)
    assert rows == [ka]  # the first input's key, as cProfile wrote it
    cc, nc, _tt, _ct, callers = merged.stats[ka]
    assert (cc, nc) == (10, 10)
    work = [k for k in callers if k[2] == "work"]
    assert len(work) == 1 and callers[work[0]][:2] == (10, 10)


def test_views_show_and_sum_rows_without_the_address():
    stats = {
        ("~", 0, "<built-in method __new__ of type object at 0x10>"): (1, 1, 1.0, 1.0, {}),
        ("~", 0, "<built-in method __new__ of type object at 0x20>"): (2, 2, 2.0, 2.0, {}),
    }
    shown = model.by_match_key(stats)
    assert shown == {("~", 0, "<built-in method __new__ of type object>"): (3, 3, 3.0, 3.0, {})}
    assert names.readable_name(next(iter(stats))) == "<built-in method __new__ of type object>"


# -- item 6: qualified names -------------------------------------------------

QUALIFIED = r"""
from dataclasses import dataclass

class Node:
    def __init__(self):
        self.x = 1

    def visit(self):
        return [i for i in range(3)]

# two classes whose __init__ share one key, <string>:2(__init__), as
# namedtuple's and dataclass's generated methods do
SOURCE = "class {0}:\n    def __init__(self):\n        pass\n"
space = {}
exec(SOURCE.format("A"), space)
exec(SOURCE.format("B"), space)
A, B = space["A"], space["B"]

@dataclass
class D:
    x: int = 0

def main():
    for _ in range(3):
        Node().visit()
        A()
        B()
        D()

main()
"""


def test_qualified_names_in_views_but_not_in_keys(tmp_path):
    data = profile(tmp_path, QUALIFIED, "q.prof", "--callpaths")
    keys = {k[2] for k in data.stats}
    assert "__init__" in keys and "visit" in keys and "Node.__init__" not in keys
    # A's and B's __init__ share one pstats key, and so does the dataclass's
    # generated one on some versions: their calls are summed (3 each), where
    # cProfile keeps the last code object's
    shared = [k for k in data.stats if k[0] == "<string>" and k[1] == 2 and k[2] == "__init__"]
    assert len(shared) == 1 and data.stats[shared[0]][1] in (6, 9)
    out = view(tmp_path, "q.prof", "-n", "0")
    collapsed = tmp_path / "q.collapsed"
    python("-m", "fastprof.cli", "convert", "q.prof", "-o", str(collapsed), cwd=tmp_path)
    folded = collapsed.read_text()
    if HAS_QUALNAME:
        # (the dataclass's generated __init__ may share the key too)
        assert data.qualnames[shared[0]].startswith("A.__init__ | B.__init__")
        assert "Node.__init__" in out and "Node.visit" in out and "A.__init__ | B.__init__" in out
        assert "Node.visit.<locals>.<listcomp>" in out or sys.version_info >= (3, 12)
        assert "Node.visit (" in folded
    else:
        # 3.9/3.10 have no co_qualname: read from the module and the code
        # around (func_patterns.code_qualnames); the classes exec made belong
        # to no module, so their __init__ has none
        assert "Node.__init__" in out and "Node.visit" in out
        assert "Node.visit.<locals>.<listcomp>" in out
        assert "A.__init__" not in data.qualnames.get(shared[0], "")
        assert "Node.visit (" in folded


def test_qualnames_survive_merge_and_old_files_still_load(tmp_path):
    key = ("f.py", 3, "__init__")
    data = ProfileData({key: (1, 1, 1.0, 1.0, {})}, qualnames={key: "A.__init__"})
    other = ProfileData({key: (1, 1, 1.0, 1.0, {})}, qualnames={key: "B.__init__"})
    merged = merge.merge_profiles([data, other])
    assert merged.qualnames == {key: "A.__init__ | B.__init__"}
    write_profile(str(tmp_path / "m.prof"), merged)
    assert load_profile(str(tmp_path / "m.prof")).qualnames == merged.qualnames
    import pstats
    assert pstats.Stats(str(tmp_path / "m.prof")).stats[key][:2] == (2, 2)
    write_profile(str(tmp_path / "plain.prof"), ProfileData({key: (1, 1, 1.0, 1.0, {})}))
    assert load_profile(str(tmp_path / "plain.prof")).qualnames == {}


# -- item 7: threads at scale -------------------------------------------------

SERVER = """
import threading, time, urllib.request
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(0.01)  # a backend: waiting dominates even on a slow (ASan) build
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
serving = threading.Thread(target=server.serve_forever, name="server", daemon=True)
serving.start()
url = "http://127.0.0.1:%d/" % server.server_address[1]
for _ in range(REQUESTS):
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.read() == b"ok"
server.shutdown()
server.server_close()
"""
REQUESTS = 110


@pytest.fixture(scope="module")
def server_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("server")
    data = profile(tmp, SERVER.replace("REQUESTS", str(REQUESTS)), "srv.prof")
    return tmp, data


def test_short_lived_threads_keep_their_names(server_run):
    _tmp, data = server_run
    # beyond the newest 64 ended threads, ended ones are folded into one
    # record per name group (docs/threads-coroutines.md)
    folded = [t for t in data.threads if "group" in t]
    kept = [t["name"] for t in data.threads if "group" not in t]
    assert len(kept) + sum(t["threads"] for t in folded) == REQUESTS + 2
    # the server thread started first: it ended before the newest 64
    groups = {t["group"]: t["threads"] for t in folded}
    assert groups.pop("server") == 1
    assert "MainThread" in kept
    assert not [n for n in kept if "(ended)" in n], kept
    workers = [n for n in kept if n != "MainThread"]
    assert len(set(workers)) == len(workers) == 64  # each its own Thread-N name
    assert list(groups.values()) == [REQUESTS - 64]
    if sys.version_info >= (3, 10):  # 3.10+ names threads after their target
        assert all(n.endswith("(process_request_thread)") for n in workers)
        assert list(groups) == ["Thread-N (process_request_thread)"]


def test_view_header_groups_threads_and_says_thread_seconds(server_run):
    tmp, data = server_run
    out = view(tmp, "srv.prof", "-n", "3")
    header = out.splitlines()[:4]  # the totals, the threads, the cost removed, the hint
    assert "thread-seconds" in header[0] and "%d threads" % (REQUESTS + 2) in header[0]
    assert len(header[1]) < 200 and "%d\u00d7 Thread-N" % REQUESTS in header[1]
    assert "--clock cpu" in "\n".join(header)  # the server mostly waits
    pattern = [t for t in header[1].split(": ", 1)[1].split(", ") if "\u00d7" in t][0]
    group = view(tmp, "srv.prof", "--thread", pattern.split("\u00d7 ", 1)[1], "-n", "3")
    assert "%d threads" % REQUESTS in group.splitlines()[0]


def test_per_thread_prints_one_table_per_group(tmp_path):
    (tmp_path / "prog.py").write_text(textwrap.dedent(SERVER.replace("REQUESTS", str(REQUESTS))))
    out = python("-m", "fastprof", "--per-thread", "prog.py", cwd=tmp_path).stdout
    titles = [ln for ln in out.splitlines() if ln.startswith("=== ")]
    assert len(titles) == 3, titles  # MainThread, server, and every request thread, folded ones too
    assert any(t.startswith("=== %d threads Thread-N" % REQUESTS) and "%d ended earlier" % (REQUESTS - 64) in t
               for t in titles), titles


def test_clock_hint_rule():
    from fastprof.tools.view import clock_hint
    lock = ("~", 0, "<method 'acquire' of '_thread.lock' objects>")
    work = ("w.py", 1, "work")
    assert clock_hint({lock: (1, 1, 6.0, 6.0, {}), work: (1, 1, 4.0, 4.0, {})}, "tsc")
    assert not clock_hint({lock: (1, 1, 4.0, 4.0, {}), work: (1, 1, 6.0, 6.0, {})}, "tsc")
    assert not clock_hint({lock: (1, 1, 6.0, 6.0, {}), work: (1, 1, 4.0, 4.0, {})}, "cpu")


# -- item 8: overlapping coroutines ---------------------------------------------

COROUTINES = """
import asyncio

async def one(i):
    await asyncio.wait_for(asyncio.sleep(0.01), timeout=5)

async def main():
    await asyncio.gather(*(one(i) for i in range(500)))

asyncio.run(main())
"""


def test_concurrent_coroutines_get_no_absurd_percent(tmp_path):
    data = profile(tmp_path, COROUTINES, "co.prof", "--coroutines", "wall")
    total = sum(v[2] for v in data.stats.values())
    over = [k for k, v in data.stats.items() if v[3] > total]
    assert any(k[2] in ("one", "wait_for") for k in over)  # the bug's precondition
    out = view(tmp_path, "co.prof", "-s", "cumtime", "-n", "0")
    table = out.split("function\n", 1)[1]
    percents = [float(cell[:-1]) for cell in table.split() if cell.endswith("%") and cell[:-1].replace(".", "").isdigit()]
    assert percents and max(percents) <= 100.0
    assert "summed over activations that overlapped" in out
    row = [ln for ln in table.splitlines() if "wait_for" in ln][0]
    assert "*" in row and " - " in row


def test_thread_start_bookkeeping_is_gone_after_disable():
    import threading
    seen = []
    pr = fastprof.Profile(threads=True)
    with pr:
        t = threading.Thread(target=lambda: None, name="during")
        t.start()
        t.join()
    assert threading._profile_hook is None
    if hasattr(sys, "monitoring"):
        assert [sys.monitoring.get_tool(i) for i in (2, 3, 4)] == [None] * 3
    after = threading.Thread(target=lambda: seen.append(sys.getprofile()), name="after")
    after.start()
    after.join()
    assert seen == [None]
    assert "during" in [name for _tid, _i, name, _st in pr.thread_stats()]


THREADING_AFTER_ENABLE = """
import json, sys
import fastprof
assert "threading" not in sys.modules
pr = fastprof.Profile(threads=True)
pr.enable()
import threading, _thread
def work(n):
    return sum(range(n))
for i in range(5):
    t = threading.Thread(target=work, args=(1000,), name="short-%d" % i)
    t.start()
    t.join()
done = threading.Event()
def raw():
    work(10)
    done.set()
_thread.start_new_thread(raw, ())
done.wait(10)
pr.disable()
pr.create_stats()
print(json.dumps({"names": [name for _tid, _i, name, _st in pr.thread_stats()],
                  "rows": sorted({k[2] for k in pr.stats})}))
"""


def test_threads_named_from_their_start_when_threading_comes_later(tmp_path):
    # python -m fastprof enables the profiler before the program imports
    # threading: names must still come from each thread's start
    import json
    out = python("-c", THREADING_AFTER_ENABLE, cwd=tmp_path).stdout
    got = json.loads(out.strip().splitlines()[-1])
    names_ = got["names"]
    assert ["short-%d" % i for i in range(5)] == [n for n in names_ if n.startswith("short-")]
    assert "MainThread" in names_
    # the raw _thread has no Thread object: named as ended, never wrongly
    # (3.9-3.11 follow only the threads threading starts, as cProfile's hook)
    assert len(names_) == (7 if hasattr(sys, "monitoring") else 6)
    assert len([n for n in names_ if n.endswith("(ended)")]) <= 1
    # the naming itself is never recorded
    assert not [r for r in got["rows"] if "thread_started" in r or "starting_thread_name" in r]
    assert "work" in got["rows"]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="co_qualname is 3.11+")
def test_qualnames_of_codes_sharing_a_key():
    """Each key's qualified names, sorted and joined when several code
    objects share it; a name that says no more than the key's is left
    out; C functions (str) are skipped."""
    def code_of(src, name):
        ns = {}
        exec(compile(src, "shared.py", "exec"), ns)
        obj = ns[name]
        return obj.f.__code__ if hasattr(obj, "f") else obj.__code__
    b = code_of("class B:\n    def f(self): pass\n", "B")
    a = code_of("class A:\n    def f(self): pass\n", "A")
    a2 = code_of("class A:\n    def f(self): pass\n", "A")  # the same name again
    plain = code_of("def g(): pass\n", "g")
    got = names.qualnames_of([b, "len", a, a2, plain])
    assert got == {("shared.py", 2, "f"): "A.f | B.f"}
    assert names.qualnames_of([a, a2]) == {("shared.py", 2, "f"): "A.f"}
