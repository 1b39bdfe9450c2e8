"""Memory along call paths (``--memory --callpaths``) and the exports that
weigh by bytes.

- ``Profile(memory=True, callpaths=True)``: each call path's own bytes,
  the same path's from every thread summed; a function's bytes over its
  paths are its ``memory_stats()`` row; the ``.prof`` trailer keeps them;
- pprof: Go's heap sample types (``alloc_objects``, ``alloc_space``,
  ``inuse_objects``, ``inuse_space``) after calls and time, each path's
  values its own counts.
"""
import os
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_pprof_gecko import decode_pprof, stack_keys  # noqa: E402

import helpers  # noqa: E402

pytestmark = pytest.mark.skipif(helpers.USING_CPROFILE, reason="memory is fastprof's")


def leaf(n):
    return bytearray(n)


def small():
    return leaf(1000)


def big():
    return leaf(50000)


def main(keep):
    keep.append(small())
    keep.append(big())


def _profile():
    import fastprof
    keep = []
    prof = fastprof.Profile(memory=True, callpaths=True, threads=True, builtins=False)
    prof.enable()
    main(keep)
    t = threading.Thread(target=main, args=(keep,))
    t.start()
    t.join()
    del keep[2:]  # the thread's blocks freed: not in use at the end
    prof.disable()
    return prof


def _paths(data):
    """{path of names: memory counts} of a ProfileData's call paths."""
    cp = data.callpaths
    names, out = [], {}
    for (parent, func, *_), counts in zip(cp.nodes, cp.memory):
        names.append((names[parent] if parent >= 0 else ()) + (cp.functions[func][2],))
        out[names[-1]] = counts
    return out


def test_bytes_per_call_path(tmp_path):
    from fastprof.data.memory import FIELDS
    from fastprof.profile_file import load_profile
    prof = _profile()
    path = str(tmp_path / "m.prof")
    prof.dump_stats(path)
    data = load_profile(path)
    paths = _paths(data)
    allocated = FIELDS.index("allocated")
    net = FIELDS.index("net")
    # each leaf path: its bytearray from both threads (the same path merged)
    small_leaf = [c for p, c in paths.items() if p[-2:] == ("small", "leaf")]
    big_leaf = [c for p, c in paths.items() if p[-2:] == ("big", "leaf")]
    assert len(small_leaf) == 2 and len(big_leaf) == 2  # main thread, thread's run()
    for counts in small_leaf:
        assert 1000 <= counts[allocated] < 1100, counts
    assert sum(c[allocated] for c in big_leaf) >= 2 * 50000
    # one path's bytes alive at the end, the other's freed
    assert sorted(c[net] > 0 for c in big_leaf) == [False, True]
    # a function's bytes over its paths are its row
    rows = prof.memory_stats()
    (leaf_key,) = [k for k in rows if k[2] == "leaf"]
    assert sum(c[allocated] for p, c in paths.items() if p[-1] == "leaf") == rows[leaf_key].allocated


def test_pprof_heap_sample_types(tmp_path):
    from fastprof.exports import render_bytes
    from fastprof.profile_file import load_profile
    prof = _profile()
    prof.dump_stats(str(tmp_path / "m.prof"))
    data = load_profile(str(tmp_path / "m.prof"))
    decoded = decode_pprof(render_bytes(data, "pprof"))
    assert decoded["sample_types"][2:] == [("alloc_objects", "count"), ("alloc_space", "bytes"),
                                           ("inuse_objects", "count"), ("inuse_space", "bytes")]
    assert decoded["default_sample_type"] == "wall"
    space = {}
    for sample in decoded["samples"]:
        names = tuple(k[2].split(".")[-1] for k in stack_keys(decoded, sample))
        space[names] = sample["values"][2:]
    paths = _paths(data)
    for names, counts in paths.items():
        if counts[1]:
            allocations, allocated, frees, _freed, net = counts[:5]
            assert space[names] == [allocations, allocated, allocations - frees, net], names
    big = [v for p, v in space.items() if p[-2:] == ("big", "leaf")]
    assert sorted(v[3] >= 50000 for v in big) == [False, True]


def test_pprof_without_memory_has_two_sample_types(tmp_path):
    import fastprof
    from fastprof.exports import render_bytes
    prof = fastprof.Profile(callpaths=True)
    prof.enable()
    main([])
    prof.disable()
    decoded = decode_pprof(render_bytes(prof.profile_data(), "pprof"))
    assert [t for t, _ in decoded["sample_types"]] == ["calls", "wall"]


def _callgrind_costs(text):
    """({function name: self costs}, {(caller, callee): call costs}) of a
    callgrind file, names resolved from its ``fn=(id) name`` compression."""
    names, own, calls = {}, {}, {}
    current = callee = None
    for line in text.splitlines():
        if line.startswith(("fn=", "cfn=")):
            ref = line.split("=", 1)[1]
            ident, _, name = ref.partition(" ")
            if name:
                names[ident] = name
            if line.startswith("fn="):
                current, callee = names[ident], None
            else:
                callee = names[ident]
        elif line[:1].isdigit() and current is not None:
            costs = [int(n) for n in line.split()[1:]]
            if callee is None:
                own[current] = costs
            else:
                calls[(current, callee)] = costs
                callee = None
    return own, calls


def test_callgrind_has_a_bytes_event(tmp_path):
    from fastprof.exports import render
    prof = _profile()
    data = prof.profile_data()
    text = render(data, "callgrind")
    assert "events: ns bytes\n" in text
    own, calls = _callgrind_costs(text)
    rows = prof.memory_stats()

    def row(name):
        (key,) = [k for k in rows if k[2] == name]
        return key, rows[key]
    leaf_key, leaf = row("leaf")
    big_key, _big = row("big")
    assert own["leaf"][1] == leaf.allocated >= 2 * 51000
    # a call's bytes are its callee's with callees, from that caller
    assert calls[("big", "leaf")][1] == leaf.callers[big_key].allocated_incl >= 2 * 50000
    summary = [line for line in text.splitlines() if line.startswith("summary: ")]
    assert int(summary[0].split()[2]) == sum(c[1] for c in own.values())
    plain = fastprof_plain_callgrind()
    assert "events: ns\n" in plain and all(len(line.split()) == 2 for line in plain.splitlines()
                                            if line[:1].isdigit())


def fastprof_plain_callgrind():
    import fastprof
    from fastprof.exports import render
    prof = fastprof.Profile()
    prof.enable()
    main([])
    prof.disable()
    return render(prof.profile_data(), "callgrind")


def _convert(*args, cwd):
    import subprocess
    return subprocess.run([sys.executable, "-m", "fastprof.cli", "convert"] + list(args), cwd=cwd,
                          env=helpers.cli_env(), capture_output=True, text=True, timeout=300)


def test_collapsed_and_speedscope_by_bytes(tmp_path):
    import json

    from fastprof.data.memory import FIELDS
    from fastprof.profile_file import load_profile
    prof = _profile()
    prof.dump_stats(str(tmp_path / "m.prof"))
    data = load_profile(str(tmp_path / "m.prof"))
    paths = _paths(data)
    for weight, column in (("allocated", "allocated"), ("held", "live_at_peak"), ("net", "net")):
        out = _convert("m.prof", "-o", "m.collapsed", "--weight", weight, "--min-percent", "0",
                       cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        lines = (tmp_path / "m.collapsed").read_text().splitlines()
        got = {}
        for line in lines:
            stack, n = line.rsplit(" ", 1)
            got[tuple(f.split(" (")[0].split(".")[-1] for f in stack.split(";"))] = int(n)
        want = {p: c[FIELDS.index(column)] for p, c in paths.items() if c[FIELDS.index(column)] > 0}
        assert got == want, weight
    out = _convert("m.prof", "-o", "m.speedscope.json", "--weight", "allocated", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "of the total bytes" in out.stderr
    doc = json.loads((tmp_path / "m.speedscope.json").read_text())
    (profile,) = doc["profiles"]
    assert profile["unit"] == "bytes" and "(bytes: allocated)" in profile["name"]
    total = sum(c[FIELDS.index("allocated")] for c in paths.values())
    # (paths below 0.01% of the bytes folded into their callers: the total is whole)
    assert profile["endValue"] == total


def test_gecko_by_bytes(tmp_path):
    import json

    from fastprof.data.memory import FIELDS
    from fastprof.profile_file import load_profile
    prof = _profile()
    prof.dump_stats(str(tmp_path / "m.prof"))
    paths = _paths(load_profile(str(tmp_path / "m.prof")))
    out = _convert("m.prof", "-o", "m.json", "--to", "gecko", "--weight", "held", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    doc = json.loads((tmp_path / "m.json").read_text())
    (thread,) = doc["threads"]  # the recorded paths' track only: threads' tracks would be times
    assert thread["name"] == "all threads (bytes alive at the process's peak)"
    samples = thread["samples"]
    assert samples["weightType"] == "bytes"
    names = doc["shared"]["stringArray"]
    got = {}
    for stack, weight in zip(samples["stack"], samples["weight"]):
        path = []
        while stack is not None:
            func = thread["frameTable"]["func"][thread["stackTable"]["frame"][stack]]
            path.append(names[thread["funcTable"]["name"][func]].split(".")[-1])
            stack = thread["stackTable"]["prefix"][stack]
        got[tuple(reversed(path))] = weight
    held = FIELDS.index("live_at_peak")
    assert got == {p: c[held] for p, c in paths.items() if c[held] > 0}


@pytest.mark.parametrize("args, message", [
    (["plain.prof", "-o", "x.collapsed", "--weight", "held"], "has no memory along call paths"),
    (["m.prof", "-o", "x.html", "--weight", "held"], "only collapsed, speedscope and gecko output"),
])
def test_weight_errors(tmp_path, args, message):
    import fastprof
    prof = _profile()
    prof.dump_stats(str(tmp_path / "m.prof"))
    plain = fastprof.Profile(callpaths=True)
    plain.enable()
    main([])
    plain.disable()
    plain.dump_stats(str(tmp_path / "plain.prof"))
    out = _convert(*args, cwd=tmp_path)
    assert out.returncode == 2 and message in out.stderr, out.stderr


def test_merge_sums_memory(tmp_path):
    from fastprof.data.memory import FIELDS
    from fastprof.profile_file import load_profile
    from fastprof.tools.merge import merge_profiles
    one, two = _profile(), _profile()
    for name, prof in (("one", one), ("two", two)):
        prof.dump_stats(str(tmp_path / (name + ".prof")))
    a, b = (load_profile(str(tmp_path / name)) for name in ("one.prof", "two.prof"))
    merged = merge_profiles([a, b], pair_installs=False)
    for key, row in merged.memory.items():
        x, y = a.memory.get(key), b.memory.get(key)
        for name in FIELDS:
            values = [getattr(r, name) for r in (x, y) if r is not None]
            assert getattr(row, name) == (max(values) if name == "peak" else sum(values)), (key, name)
        for caller, edge in row.callers.items():
            parts = [r.callers[caller] for r in (x, y) if r is not None and caller in r.callers]
            assert edge.allocated_incl == sum(p.allocated_incl for p in parts), (key, caller)
    assert set(merged.memory) == set(a.memory) | set(b.memory)
    assert merged.memory_totals["allocations"] == (a.memory_totals["allocations"]
                                                   + b.memory_totals["allocations"])
    assert merged.memory_totals["peak"] == a.memory_totals["peak"] + b.memory_totals["peak"]
    # along call paths: each path's counts summed
    paths, pa, pb = _paths(merged), _paths(a), _paths(b)
    allocated = FIELDS.index("allocated")
    for path, counts in paths.items():
        assert counts[allocated] == pa.get(path, [0] * 8)[allocated] + pb.get(path, [0] * 8)[allocated]
    # an input without memory: the sum has none (a part would pass for the whole)
    import fastprof
    plain = fastprof.Profile(callpaths=True)
    plain.enable()
    main([])
    plain.disable()
    partial = merge_profiles([a, plain.profile_data()], pair_installs=False)
    assert partial.memory is None and partial.callpaths.memory is None
    # the command line keeps it in the file
    out = _merge("one.prof", "two.prof", "-o", "sum.prof", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    back = load_profile(str(tmp_path / "sum.prof"))
    assert back.memory == merged.memory and back.memory_totals == merged.memory_totals


def _merge(*args, cwd):
    import subprocess
    return subprocess.run([sys.executable, "-m", "fastprof.cli", "merge"] + list(args), cwd=cwd,
                          env=helpers.cli_env(), capture_output=True, text=True, timeout=300)
