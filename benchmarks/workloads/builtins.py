"""Loops dominated by builtins and C methods: the cost of C call/return events."""

DESCRIPTION = "list.append, dict.get, len, isinstance, str methods: mostly C calls"
SIZES = {"full": 600000, "smoke": 300}
#: the function --lines and line_profiler look at (most own time under cProfile)
HOT = "run"

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu "
         "nu xi omicron pi rho sigma tau upsilon phi chi psi omega").split()


def run(n):
    counts = {}
    out = []
    lengths = []
    nwords = len(WORDS)
    for i in range(n):
        w = WORDS[i % nwords]
        key = w.upper() if i % 3 == 0 else w
        counts[key] = counts.get(key, 0) + 1
        if key.startswith("A") or key.endswith("a"):
            out.append(key.lower())
        else:
            out.append(key.replace("e", "3"))
        lengths.append(len(key))
        if isinstance(key, str) and len(out) > 64:
            joined = ",".join(out)
            lengths.append(len(joined.split(",")))
            out.clear()
        if i % 97 == 0:
            lengths.append(max(lengths[-8:]) + min(lengths[-8:]))
    items = sorted(counts.items())
    return sum(v for _, v in items) + sum(lengths) + len("".join(k for k, _ in items))
