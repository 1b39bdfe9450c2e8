"""Allocation-heavy code: records built as dicts, lists and strings, dumped
to JSON and loaded back, kept a while and dropped (the memory benchmark's
workload: benchmarks/questions/memory_cost.py)."""

import json

DESCRIPTION = "records built as dicts/lists/str -> json.dumps -> json.loads, a window kept, the rest dropped"
SIZES = {"full": 4000, "smoke": 5}
#: the function --lines and line_profiler look at (most own time under cProfile)
HOT = "make_record"


def make_record(i):
    return {
        "id": i,
        "name": "item-%d" % i,
        "tags": [str(i % 7), str(i % 11), "t%d" % (i % 13)],
        "values": list(range(i % 24)),
        "note": ("x" * (i % 50)) + str(i),
    }


def batch(start, n):
    return [make_record(i) for i in range(start, start + n)]


def round_trip(records):
    text = json.dumps(records)
    return text, json.loads(text)


def run(n):
    total = 0
    window = []
    for k in range(n):
        text, back = round_trip(batch(k * 12, 12))
        window.append(back)
        if len(window) > 60:
            window = window[30:]
        total += len(text) + len(back)
    return total
