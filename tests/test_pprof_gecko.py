"""The pprof and gecko (Firefox Profiler) outputs, read back; and ``fastprof
merge`` of 1,000 files.

pprof is decoded by the small protobuf wire-format reader below (varints,
length-delimited fields, packed repeated fields) against profile.proto's
field numbers; gecko is loaded as JSON and checked against the structure
documented in ``fastprof/exports/gecko.py``.  Counts are checked against
the profile's own (cProfile-compatible) counts and, for a script, against
cProfile run on the same interpreter; times with a fake clock, exactly.
"""

import gzip
import json
import os
import subprocess
import sys
import textwrap

import pytest

from fastprof.data.profile_file import CallPaths, ProfileData, load_profile, write_profile
from fastprof.exports import export, render, render_bytes
from helpers import cli_env

# ---------------------------------------------------------------- wire-format reader


def read_varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def fields(buf):
    """{field number: [value, ...]}: ints for varints, bytes for length-delimited."""
    out = {}
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = read_varint(buf, i)
        elif wire == 2:
            n, i = read_varint(buf, i)
            value = bytes(buf[i:i + n])
            i += n
        elif wire == 1:
            value = int.from_bytes(buf[i:i + 8], "little")
            i += 8
        elif wire == 5:
            value = int.from_bytes(buf[i:i + 4], "little")
            i += 4
        else:
            raise AssertionError("bad wire type %d" % wire)
        out.setdefault(field, []).append(value)
    assert i == len(buf)
    return out


def ints(msg, field):
    """A repeated integer field, packed (bytes) or not (ints)."""
    out = []
    for v in msg.get(field, []):
        if isinstance(v, bytes):
            j = 0
            while j < len(v):
                x, j = read_varint(v, j)
                out.append(signed64(x))
        else:
            out.append(signed64(v))
    return out


def one(msg, field, default=0):
    values = ints(msg, field)
    assert len(values) <= 1
    return values[0] if values else default


def decode_pprof(blob):
    """profile.proto (gzip'd) as plain Python values."""
    p = fields(gzip.decompress(blob))
    strings = [s.decode("utf-8") for s in p.get(6, [])]
    assert strings and strings[0] == ""

    def value_type(b):
        m = fields(b)
        return strings[one(m, 1)], strings[one(m, 2)]

    functions = {}
    for b in p.get(5, []):
        m = fields(b)
        functions[one(m, 1)] = {"name": strings[one(m, 2)], "system_name": strings[one(m, 3)],
                                "filename": strings[one(m, 4)], "start_line": one(m, 5)}
    locations = {}
    for b in p.get(4, []):
        m = fields(b)
        lines = [fields(x) for x in m.get(4, [])]
        locations[one(m, 1)] = {"mapping_id": one(m, 2),
                                "lines": [(one(x, 1), one(x, 2)) for x in lines]}
    samples = []
    for b in p.get(2, []):
        m = fields(b)
        labels = {}
        for lb in m.get(3, []):
            lm = fields(lb)
            labels[strings[one(lm, 1)]] = strings[one(lm, 2)]
        samples.append({"locations": ints(m, 1), "values": ints(m, 2), "labels": labels})
    mappings = [fields(b) for b in p.get(3, [])]
    return {
        "sample_types": [value_type(b) for b in p.get(1, [])],
        "samples": samples, "functions": functions, "locations": locations,
        "mappings": mappings, "strings": strings,
        "comments": [strings[i] for i in ints(p, 13)],
        "default_sample_type": strings[one(p, 14)],
        "period_type": value_type(p[11][0]) if 11 in p else None,
        "duration_nanos": one(p, 10),
    }


def stack_keys(prof, sample):
    """A sample's stack, root first, as (file, line, name) of its functions."""
    out = []
    for loc_id in reversed(sample["locations"]):
        loc = prof["locations"][loc_id]
        assert len(loc["lines"]) == 1
        fid, line = loc["lines"][0]
        fn = prof["functions"][fid]
        assert fn["name"] and fn["system_name"]
        out.append((fn["filename"], line, fn["name"]))
    return tuple(out)


def check_pprof(data, prof, time_type="wall"):
    """What holds for every pprof file: types, resolvable stacks, counts and time."""
    assert prof["sample_types"] == [("calls", "count"), (time_type, "nanoseconds")]
    assert prof["default_sample_type"] == time_type
    assert prof["period_type"] == (time_type, "nanoseconds")
    ids = set(prof["functions"])
    assert set(prof["locations"]) == ids and len(ids) == len(prof["functions"])
    assert all(loc["mapping_id"] == 1 for loc in prof["locations"].values())
    assert len(prof["mappings"]) == 1 and fields_bool_all(prof["mappings"][0], (7, 8, 9))
    calls = {}
    total_ns = 0
    for s in prof["samples"]:
        assert len(s["values"]) == 2 and s["locations"]
        keys = stack_keys(prof, s)
        leaf = prof["functions"][prof["locations"][s["locations"][0]]["lines"][0][0]]
        calls[leaf["system_name"]] = calls.get(leaf["system_name"], 0) + s["values"][0]
        assert s["values"][0] >= 0 and s["values"][1] >= 0
        total_ns += s["values"][1]
        for _fname, line, _name in keys:
            assert line >= 0
    # call counts per function are the profile's, which are cProfile's
    from fastprof.data.names import stdname
    expected = {stdname(k): v[1] for k, v in data.stats.items() if v[1]}
    assert {k: v for k, v in calls.items() if v} == expected
    total = sum(v[2] for v in data.stats.values())
    assert abs(total_ns - total * 1e9) <= 2
    assert prof["duration_nanos"] == total_ns
    # Python functions carry their file and first line
    for k in data.stats:
        fn = [f for f in prof["functions"].values() if f["system_name"] == stdname(k)]
        assert len(fn) == 1
        if k[0] != "~":
            assert fn[0]["filename"] == k[0] and fn[0]["start_line"] == k[1]
    return calls


def fields_bool_all(m, nums):
    return all(one(m, n) == 1 for n in nums)


# ---------------------------------------------------------------- profiles


def fake_clock_profile():
    """A profile with call paths whose times are exact: only the code moves the clock."""
    fastprof = pytest.importorskip("fastprof._fastprof") and __import__("fastprof")
    now = [0]

    def leaf(n):
        now[0] += 7 * n

    def mid():
        now[0] += 3
        leaf(1)
        leaf(2)

    def other():
        now[0] += 5
        leaf(4)

    def main():
        now[0] += 1
        for _ in range(3):
            mid()
        other()

    prof = fastprof.Profile(timer=lambda: now[0], timeunit=1e-9, callpaths=True)
    prof.runcall(main)
    data = prof.profile_data()
    assert data.callpaths is not None
    return data, {"leaf": leaf.__code__, "mid": mid.__code__, "other": other.__code__,
                  "main": main.__code__}


def test_pprof_with_call_paths_has_the_real_stacks_and_exact_times():
    data, codes = fake_clock_profile()
    prof = decode_pprof(render_bytes(data, "pprof"))
    check_pprof(data, prof, time_type="time")  # a custom timer: "time"
    assert not any(s["labels"] for s in prof["samples"])
    assert not any("estimated" in c for c in prof["comments"])

    def name_path(s):
        return tuple(k[2].split(".")[-1] for k in stack_keys(prof, s))

    by_path = {}
    for s in prof["samples"]:
        by_path[name_path(s)] = s["values"]
    prefix = ("main",)
    # (calls, own nanoseconds) of each recorded path
    assert by_path[prefix] == [1, 1]
    assert by_path[prefix + ("mid",)] == [3, 9]
    assert by_path[prefix + ("mid", "leaf")] == [6, 3 * 7 * (1 + 2)]
    assert by_path[prefix + ("other",)] == [1, 5]
    assert by_path[prefix + ("other", "leaf")] == [1, 28]
    # every stack is one of the recorded call paths
    recorded = set()
    cp = data.callpaths
    for i in range(len(cp.nodes)):
        path, n = [], i
        while n >= 0:
            path.append(cp.functions[cp.nodes[n][1]][2].split(".")[-1])
            n = cp.nodes[n][0]
        recorded.add(tuple(reversed(path)))
    assert set(by_path) <= recorded


WORK = textwrap.dedent("""\
    import threading

    def leaf(n):
        return sum(range(n))

    def mid(i):
        return leaf(i) + leaf(2 * i)

    def rec(n):
        return 0 if n == 0 else rec(n - 1) + leaf(n)

    def worker():
        for i in range(30):
            leaf(i)

    def main():
        for i in range(40):
            mid(i)
        rec(12)
        t = threading.Thread(target=worker)
        t.start()
        t.join()

    main()
""")


def run(args, cwd, **kw):
    r = subprocess.run([sys.executable] + args, cwd=str(cwd), env=cli_env(), timeout=120,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, **kw)
    assert r.returncode == 0, r.stderr
    return r


def fastprof_cli(args, cwd, **kw):
    return run(["-c", "import sys; from fastprof.cli import main; sys.exit(main(sys.argv[1:]))"] + args,
               cwd, **kw)


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory):
    pytest.importorskip("fastprof._fastprof")
    d = tmp_path_factory.mktemp("pprof")
    (d / "work.py").write_text(WORK)
    run(["-m", "cProfile", "-o", "cprofile.prof", "work.py"], d)
    run(["-m", "fastprof", "--callpaths", "-o", "paths.prof", "work.py"], d)
    run(["-m", "fastprof", "--threads", "-o", "threads.prof", "work.py"], d)
    return d


def work_counts(stats):
    """Calls of work.py's (or single.py's) own functions, by name."""
    return {k[2]: v[1] for k, v in stats.items()
            if k[0].endswith(("work.py", "single.py")) and k[2] != "<module>"}


def pprof_calls_and_paths(prof):
    """Calls of work.py's functions (by name), and the paths through them."""
    calls = {}
    paths = set()
    for s in prof["samples"]:
        keys = stack_keys(prof, s)
        if keys[-1][0].endswith(("work.py", "single.py")):
            calls[keys[-1][2]] = calls.get(keys[-1][2], 0) + s["values"][0]
            paths.add(tuple(k[2] for k in keys if k[0].endswith(("work.py", "single.py"))))
    calls.pop("<module>", None)
    return calls, paths


def test_python_m_fastprof_writes_pprof_with_exact_stacks(work_dir):
    run(["-m", "fastprof", "-o", "app.pb.gz", "work.py"], work_dir)
    prof = decode_pprof((work_dir / "app.pb.gz").read_bytes())
    assert not any(s["labels"] for s in prof["samples"])  # -o .pb.gz records call paths
    calls, paths = pprof_calls_and_paths(prof)
    # real paths (direct recursion is one node of the recorded tree)
    assert ("<module>", "main", "mid", "leaf") in paths
    assert ("<module>", "main", "rec", "leaf") in paths
    assert ("worker", "leaf") in paths  # the thread's own root
    assert calls["worker"] == 1 and calls["rec"] == 13 and calls["mid"] == 40

    # counts as cProfile's on this interpreter (one thread: cProfile sees
    # other threads on 3.12+ only)
    (work_dir / "single.py").write_text(WORK.replace("t.start()", "pass").replace("t.join()", "pass"))
    run(["-m", "cProfile", "-o", "single.prof", "single.py"], work_dir)
    run(["-m", "fastprof", "-o", "single.pb.gz", "single.py"], work_dir)
    calls, _paths = pprof_calls_and_paths(decode_pprof((work_dir / "single.pb.gz").read_bytes()))
    cprofile = work_counts(load_profile(str(work_dir / "single.prof")).stats)
    assert calls == cprofile and cprofile["leaf"] == 92


def test_convert_with_call_paths(work_dir):
    fastprof_cli(["convert", "paths.prof", "-o", "paths.pb.gz"], work_dir)
    data = load_profile(str(work_dir / "paths.prof"))
    prof = decode_pprof((work_dir / "paths.pb.gz").read_bytes())
    check_pprof(data, prof)
    assert not any(s["labels"] for s in prof["samples"])
    # the stacks are the recorded paths, node for node (those with calls or time)
    cp = data.callpaths
    recorded = set()
    for i in range(len(cp.nodes)):
        path, n = [], i
        while n >= 0:
            path.append(tuple(cp.functions[cp.nodes[n][1]]))
            n = cp.nodes[n][0]
        recorded.add(tuple(reversed(path)))
    from fastprof.data.names import stdname
    by_std = {stdname(k): k for k in cp.functions}
    got = set()
    for s in prof["samples"]:
        got.add(tuple(by_std[prof["functions"][prof["locations"][loc]["lines"][0][0]]["system_name"]]
                      for loc in reversed(s["locations"])))
    assert got <= recorded
    assert len(got) >= len([n for n in cp.nodes if n[2] or n[3]]) * 0.9


def test_cprofile_file_gets_estimated_stacks_marked(work_dir):
    r = fastprof_cli(["convert", "cprofile.prof", "--to", "pprof", "-o", "est.out"], work_dir)
    assert "estimated" in r.stderr
    data = load_profile(str(work_dir / "cprofile.prof"))
    prof = decode_pprof((work_dir / "est.out").read_bytes())
    check_pprof(data, prof)
    assert prof["samples"] and all(s["labels"] == {"call_stacks": "estimated"} for s in prof["samples"])
    assert any("estimated" in c for c in prof["comments"])
    # cProfile's counts, summed over the estimated stacks
    calls = {}
    for s in prof["samples"]:
        k = stack_keys(prof, s)[-1]
        if k[0].endswith("work.py") and k[2] != "<module>":
            calls[k[2]] = calls.get(k[2], 0) + s["values"][0]
    assert calls == work_counts(data.stats)


def test_estimated_counts_survive_folded_branches():
    # 300 tiny callees of one function: the estimated tree folds most of
    # them (below its minimum width), yet each one's calls are in a sample
    f = "/nonexistent/w.py"
    main = (f, 1, "main")
    stats = {main: (1, 1, 1.0, 1.0 + 300e-9, {})}
    for i in range(300):
        stats[(f, 10 + i, "tiny%d" % i)] = (i + 1, i + 1, 1e-9, 1e-9, {main: (i + 1, i + 1, 1e-9, 1e-9)})
    data = ProfileData(stats)
    prof = decode_pprof(render_bytes(data, "pprof"))
    calls = check_pprof(data, prof)
    assert calls["%s:12(tiny2)" % f] == 3
    for s in prof["samples"]:
        keys = stack_keys(prof, s)
        assert keys[0][2] == "main"


def test_pprof_to_stdout_and_by_export(work_dir, tmp_path):
    r = subprocess.run([sys.executable, "-c", "import sys; from fastprof.cli import main; "
                        "sys.exit(main(sys.argv[1:]))", "convert", "paths.prof", "--to", "pprof", "-o", "-"],
                       cwd=str(work_dir), env=cli_env(), stdout=subprocess.PIPE, timeout=120)
    assert r.returncode == 0
    data = load_profile(str(work_dir / "paths.prof"))
    assert gzip.decompress(r.stdout) == gzip.decompress(render_bytes(data, "pprof", title="paths.prof"))
    assert export(data, str(tmp_path / "x.pb.gz")) == "pprof"
    check_pprof(data, decode_pprof((tmp_path / "x.pb.gz").read_bytes()))
    with pytest.raises(ValueError):
        render(data, "pprof")


def test_go_tool_pprof_reads_it(work_dir, tmp_path):
    # a second reader, when Go is installed (not a dependency: the decoder
    # above is the check every run makes)
    import shutil
    go = shutil.which("go")
    if go is None:
        pytest.skip("go not installed (go tool pprof is an extra check)")
    run(["-m", "fastprof", "-o", "app.pb.gz", "work.py"], work_dir)
    env = dict(os.environ, HOME=str(tmp_path), PPROF_TMPDIR=str(tmp_path))
    r = subprocess.run([go, "tool", "pprof", "-top", "-sample_index=calls", "-nodecount=10000",
                        str(work_dir / "app.pb.gz")], env=env, timeout=300,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert r.returncode == 0, r.stderr
    assert "Type: calls" in r.stdout and "fastprof deterministic profile" in r.stdout
    flat = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 6 and parts[0].isdigit():
            flat[parts[5]] = int(parts[0])
    calls, _paths = pprof_calls_and_paths(decode_pprof((work_dir / "app.pb.gz").read_bytes()))
    for name in ("leaf", "mid", "rec", "main", "worker"):
        assert flat[name] == calls[name], name


# ---------------------------------------------------------------- gecko

SAMPLE_COLUMNS = ("stack", "time", "weight")
STACK_COLUMNS = ("frame", "category", "subcategory", "prefix")
FRAME_COLUMNS = ("address", "category", "subcategory", "func", "innerWindowID", "implementation",
                 "optimizations", "line", "column", "inlineDepth", "nativeSymbol")
FUNC_COLUMNS = ("name", "isJS", "relevantForJS", "resource", "fileName", "lineNumber", "columnNumber")
RESOURCE_COLUMNS = ("lib", "name", "host", "type")


def check_table(table, columns):
    n = table["length"]
    for c in columns:
        assert len(table[c]) == n, c
    return n


def check_gecko(doc):
    """The documented structure; every index in range. Returns per thread
    (name, {func name: own ms})."""
    meta = doc["meta"]
    assert meta["version"] == 32 and meta["preprocessedProfileVersion"] == 57
    assert meta["symbolicated"] is True
    ncat = len(meta["categories"])
    assert all(set(c) >= {"name", "color", "subcategories"} for c in meta["categories"])
    strings = doc["shared"]["stringArray"]
    assert all(isinstance(s, str) for s in strings)
    assert doc["libs"] == [] and doc["pages"] == []
    out = []
    for th in doc["threads"]:
        for key in ("name", "tid", "pid", "isMainThread", "processType", "processName",
                    "registerTime", "processStartupTime", "markers", "nativeSymbols"):
            assert key in th, key
        samples, stacks, frames, funcs, res = (th["samples"], th["stackTable"], th["frameTable"],
                                               th["funcTable"], th["resourceTable"])
        ns = check_table(samples, SAMPLE_COLUMNS)
        nst = check_table(stacks, STACK_COLUMNS)
        nf = check_table(frames, FRAME_COLUMNS)
        nfu = check_table(funcs, FUNC_COLUMNS)
        nr = check_table(res, RESOURCE_COLUMNS)
        assert samples["weightType"] == "tracing-ms"
        assert th["markers"]["length"] == 0 and th["nativeSymbols"]["length"] == 0
        assert all(0 <= s < nst for s in samples["stack"])
        assert samples["time"] == sorted(samples["time"])
        for i in range(nst):
            assert 0 <= stacks["frame"][i] < nf
            p = stacks["prefix"][i]
            assert p is None or 0 <= p < i
            assert 0 <= stacks["category"][i] < ncat
        for i in range(nf):
            assert 0 <= frames["func"][i] < nfu and 0 <= frames["category"][i] < ncat
        for i in range(nfu):
            assert 0 <= funcs["name"][i] < len(strings)
            assert funcs["fileName"][i] is None or 0 <= funcs["fileName"][i] < len(strings)
            assert funcs["resource"][i] == -1 or 0 <= funcs["resource"][i] < nr
            assert funcs["isJS"][i] == (funcs["fileName"][i] is not None)
        for i in range(nr):
            assert 0 <= res["name"][i] < len(strings)
        own = {}
        for s, w in zip(samples["stack"], samples["weight"]):
            assert w > 0
            name = strings[funcs["name"][frames["func"][stacks["frame"][s]]]].split(".")[-1]
            own[name] = own.get(name, 0.0) + w
        assert ns == len(samples["weight"])
        out.append((th["name"], own))
    return out


def total_ms(stats):
    return sum(v[2] for v in stats.values()) * 1e3


def test_gecko_with_call_paths_is_one_exact_thread(work_dir):
    # python -m fastprof keeps per-thread stats: a track of the recorded
    # paths of all threads, then one estimated track per thread
    run(["-m", "fastprof", "--to", "gecko", "-o", "app.json", "work.py"], work_dir)
    threads = check_gecko(json.loads((work_dir / "app.json").read_text()))
    names = [t[0] for t in threads]
    assert names[:2] == ["all threads", "MainThread (estimated call stacks)"]
    assert len(names) == 3 and names[2].startswith("Thread-1") and names[2].endswith(
        " (estimated call stacks)")
    assert sum(threads[0][1].values()) == pytest.approx(
        sum(sum(t[1].values()) for t in threads[1:]), rel=1e-6)

    fastprof_cli(["convert", "paths.prof", "--to", "gecko", "-o", "paths.json"], work_dir)
    doc = json.loads((work_dir / "paths.json").read_text())
    name, own = check_gecko(doc)[0]
    assert name == "all threads"
    data = load_profile(str(work_dir / "paths.prof"))
    assert sum(own.values()) == pytest.approx(total_ms(data.stats), rel=1e-9, abs=1e-9)
    # the stacks are the recorded paths
    th = doc["threads"][0]
    strings = doc["shared"]["stringArray"]
    st = th["stackTable"]

    def names(s):
        out = []
        while s is not None:
            out.append(strings[th["funcTable"]["name"][th["frameTable"]["func"][st["frame"][s]]]])
            s = st["prefix"][s]
        return out[::-1]
    work = {"<module>", "main", "mid", "rec", "leaf", "worker"}
    paths = {tuple(n for n in names(s) if n in work) for s in range(st["length"])}
    assert {("<module>", "main", "mid", "leaf"), ("<module>", "main", "rec", "leaf"),
            ("worker", "leaf")} <= paths


def test_gecko_has_one_thread_per_profiled_thread(work_dir):
    fastprof_cli(["convert", "threads.prof", "--to", "gecko", "-o", "threads.json"], work_dir)
    data = load_profile(str(work_dir / "threads.prof"))
    assert len(data.threads) == 2
    threads = check_gecko(json.loads((work_dir / "threads.json").read_text()))
    assert len(threads) == 2
    for (name, own), record in zip(threads, data.threads):
        assert name.startswith(record["name"]) and name.endswith("(estimated call stacks)")
        assert sum(own.values()) == pytest.approx(total_ms(record["stats"]), rel=1e-9, abs=1e-9)
    assert "worker" in threads[1][1] and "worker" not in threads[0][1]


def test_gecko_of_a_cprofile_file_and_exact_fake_times():
    data, _codes = fake_clock_profile()
    doc = json.loads(render(data, "gecko"))
    (name, own), = check_gecko(doc)
    assert "estimated" not in name
    assert own["leaf"] == pytest.approx((21 * 3 + 28) * 1e-6)  # ns -> ms
    assert own["mid"] == pytest.approx(9e-6) and own["main"] == pytest.approx(1e-6)
    data.callpaths = None
    (name, own2), = check_gecko(json.loads(render(data, "gecko")))
    assert name.endswith("(estimated call stacks)")
    assert sum(own2.values()) == pytest.approx(sum(own.values()))


# ---------------------------------------------------------------- merge of 1,000 files

FUNCS = 40


def small_profile(i):
    f = "/nonexistent/svc.py"
    main = (f, 1, "main")
    stats = {main: (1, 1, 1e-6, 1e-6 * (FUNCS + 1), {})}
    nodes = [(-1, 0, 1, 1e-6, 1e-6 * (FUNCS + 1))]
    functions = [main]
    for j in range(FUNCS):
        key = (f, 10 + j, "handler_%d" % j)
        n = 1 + (i + j) % 5
        stats[key] = (n, n, 1e-6, 1e-6, {main: (n, n, 1e-6, 1e-6)})
        functions.append(key)
        nodes.append((0, j + 1, n, 1e-6, 1e-6))
    # per-thread stats, as python -m fastprof writes them
    worker = {(f, 99, "work"): (1, 1, 1e-6, 1e-6, {})}
    threads = [{"id": 0, "ident": 1, "name": "MainThread", "stats": stats},
               {"id": 1, "ident": 2, "name": "Thread-%d (worker)" % (i + 1), "stats": worker}]
    return ProfileData(stats, callpaths=CallPaths(functions, nodes), clock="tsc", threads=threads)


def write_inputs(d, count):
    names = []
    for i in range(count):
        name = str(d / ("p%04d.prof" % i))
        write_profile(name, small_profile(i))
        names.append(name)
    return names


def _lower_fd_limit():
    import resource
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_NOFILE via preexec_fn")
def test_merge_of_1000_files_under_64_file_handles(tmp_path):
    names = write_inputs(tmp_path, 1000)
    # the child cannot open more than 64 files at once
    r = fastprof_cli(["merge"] + names + ["-o", str(tmp_path / "all.prof")], tmp_path,
                     preexec_fn=_lower_fd_limit)
    assert "merged 1000 profiles" in r.stderr
    merged = load_profile(str(tmp_path / "all.prof"))
    f = "/nonexistent/svc.py"
    assert merged.stats[(f, 1, "main")][:2] == (1000, 1000)
    for j in range(FUNCS):
        want = sum(1 + (i + j) % 5 for i in range(1000))
        row = merged.stats[(f, 10 + j, "handler_%d" % j)]
        assert row[:2] == (want, want)
        assert row[4][(f, 1, "main")][:2] == (want, want)
    assert merged.callpaths is not None and len(merged.callpaths.nodes) == FUNCS + 1
    assert sum(n[2] for n in merged.callpaths.nodes) == sum(v[1] for v in merged.stats.values())
    # 2,000 threads summed into one record per name pattern
    assert [t["name"] for t in merged.threads] == [
        "MainThread [1000 threads of 1000 inputs, summed]",
        "Thread-N (worker) [1000 threads of 1000 inputs, summed]"]
    assert merged.threads[0]["stats"] == merged.stats
    assert merged.threads[1]["stats"][(f, 99, "work")][:2] == (1000, 1000)
    # the limit was real: the same child cannot hold 70 files open
    code = ("import sys, os\nfs=[]\ntry:\n    [fs.append(open(os.devnull)) for _ in range(70)]\n"
            "except OSError:\n    sys.exit(0)\nsys.exit(1)")
    assert subprocess.run([sys.executable, "-c", code], preexec_fn=_lower_fd_limit,
                          timeout=60).returncode == 0


def test_merge_of_a_few_files_keeps_threads_apart(tmp_path, capsys):
    from fastprof import cli
    names = write_inputs(tmp_path, 3)
    assert cli.main(["merge"] + names + ["-o", str(tmp_path / "m.prof")]) == 0
    merged = load_profile(str(tmp_path / "m.prof"))
    assert [t["name"] for t in merged.threads] == [
        "MainThread [input 1]", "Thread-1 (worker) [input 1]", "MainThread [input 2]",
        "Thread-2 (worker) [input 2]", "MainThread [input 3]", "Thread-3 (worker) [input 3]"]
    assert [t["id"] for t in merged.threads] == list(range(6))


PEAK_OF_MERGES = """\
import json, sys, tracemalloc
from fastprof import cli

def peak(inputs):
    tracemalloc.start()
    try:
        assert cli.main(["merge"] + inputs + ["-o", "m.prof"]) == 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

names = sys.argv[1:]
print(json.dumps([peak(names[:100]), peak(names)]))
"""


def test_merge_memory_does_not_grow_with_the_inputs(tmp_path):
    # measured in a child of its own: tracemalloc counts every thread's
    # allocations, and a thread an earlier test left in this process once
    # added 0.3 MB to one of the two peaks
    names = write_inputs(tmp_path, 400)
    size = sum(os.path.getsize(n) for n in names)
    r = run(["-c", PEAK_OF_MERGES] + names, tmp_path)
    # both past the 32 inputs whose threads are kept apart: holding every
    # input (or every thread) would take 4x the memory for 4x the inputs
    few, many = json.loads(r.stdout.splitlines()[-1])
    assert many < 1.3 * few, (few, many, size)
    assert load_profile(str(tmp_path / "m.prof")).stats[("/nonexistent/svc.py", 1, "main")][1] == 400
