"""A small, real program to profile: analyse a web server's access log.

It makes a deterministic access log (so every run does the same work),
then parses it line by line, groups requests by endpoint, computes latency
percentiles, builds a tree of URL paths and walks it recursively, and
round-trips the report through JSON. The hot spots are ordinary Python:
string splitting, dict updates, sorting, recursion, json.

    python -m fastprof -s cumulative examples/demo.py
    python examples/demo.py --lines 20000      (without a profiler)
"""
import argparse
import json
import random
from collections import Counter, defaultdict

ENDPOINTS = [
    "/", "/login", "/logout", "/search", "/api/v1/users", "/api/v1/users/{id}",
    "/api/v1/orders", "/api/v1/orders/{id}", "/api/v1/orders/{id}/items",
    "/static/app.js", "/static/app.css", "/static/img/logo.png", "/docs/{page}",
]
AGENTS = [
    "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) Safari/605.1.15",
    "curl/8.5.0",
    "python-requests/2.32.3",
    "Googlebot/2.1 (+http://www.google.com/bot.html)",
]
METHODS = ["GET"] * 8 + ["POST", "PUT", "DELETE"]
STATUSES = [200] * 20 + [201, 204, 301, 304, 400, 401, 403, 404, 404, 500]


def make_log(n, seed=42):
    """Return n lines in (a simplified) combined log format."""
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        path = rnd.choice(ENDPOINTS)
        if "{" in path:
            path = path.replace("{id}", str(1 + rnd.getrandbits(9))).replace("{page}", "abcdefgh"[i % 8])
        if i % 5 == 0:
            path += "?q=%s&page=%d" % (AGENTS[i % 3][:6].strip("/"), 1 + i % 9)
        bits = rnd.getrandbits(24)
        ip = "10.%d.%d.%d" % (bits >> 22, (bits >> 8) & 255, 1 + (bits & 127))
        ms = rnd.lognormvariate(3.0, 0.9)
        lines.append('%s - - [22/Nov/2025:05:%02d:%02d +0000] "%s %s HTTP/1.1" %d %d %.3f "%s"' % (
            ip, (i // 60) % 60, i % 60, METHODS[bits % len(METHODS)], path,
            STATUSES[(bits >> 4) % len(STATUSES)], 200 + (bits & 0xffff), ms, rnd.choice(AGENTS)))
    return lines


def parse_line(line):
    """Split one log line into a dict; None for a malformed line."""
    try:
        head, request, rest = line.split('"', 2)
        method, target, _proto = request.split(" ")
        fields, agent = rest.split('"', 1)
        status, size, ms = fields.split()
        agent = agent.rstrip('"')
    except ValueError:
        return None
    path, _, query = target.partition("?")
    return {
        "ip": head.split(" ", 1)[0],
        "method": method,
        "path": path,
        "query": parse_query(query),
        "status": int(status),
        "bytes": int(size),
        "ms": float(ms),
        "agent": agent,
    }


def parse_query(query):
    params = {}
    if query:
        for pair in query.split("&"):
            key, _, value = pair.partition("=")
            params[key] = value
    return params


def normalise(path):
    """/api/v1/users/17 -> /api/v1/users/{id}: group requests by route."""
    parts = []
    for part in path.split("/"):
        parts.append("{id}" if part.isdigit() else part)
    return "/".join(parts)


def percentile(sorted_values, q):
    if not sorted_values:
        return 0.0
    k = (len(sorted_values) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def summarise(records):
    by_route = defaultdict(list)
    errors = Counter()
    for r in records:
        route = normalise(r["path"])
        by_route[route].append(r["ms"])
        if r["status"] >= 500:
            errors[route] += 1
    report = {}
    for route, times in by_route.items():
        times.sort()
        report[route] = {
            "requests": len(times),
            "p50_ms": round(percentile(times, 0.50), 3),
            "p95_ms": round(percentile(times, 0.95), 3),
            "p99_ms": round(percentile(times, 0.99), 3),
            "errors": errors[route],
        }
    return report


def build_tree(paths):
    """A trie of URL path segments: {segment: (count, children)}."""
    root = {}
    for path in paths:
        node = root
        for seg in path.strip("/").split("/"):
            count, children = node.get(seg, (0, {}))
            node[seg] = (count + 1, children)
            node = children
    return root


def walk(tree, depth=0):
    """Recursively count the nodes and find the deepest level of the trie."""
    nodes, deepest = 0, depth
    for _seg, (_count, children) in tree.items():
        n, d = walk(children, depth + 1)
        nodes += 1 + n
        deepest = max(deepest, d)
    return nodes, deepest


def top_agents(records, k=3):
    words = Counter()
    for r in records:
        for word in r["agent"].replace("(", " ").replace(")", " ").split():
            if "/" in word and not word.startswith("+"):      # product/version tokens
                words[word.split("/")[0]] += 1
    return words.most_common(k)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=10000, help="log lines to make (default 10000)")
    args = ap.parse_args(argv)

    lines = make_log(args.lines)
    records = [r for r in map(parse_line, lines) if r is not None]
    report = summarise(records)
    nodes, depth = walk(build_tree(r["path"] for r in records))
    doc = json.loads(json.dumps({"routes": report, "agents": top_agents(records)}, sort_keys=True))

    print("parsed %d of %d lines, %d routes, path tree: %d nodes, depth %d"
          % (len(records), len(lines), len(doc["routes"]), nodes, depth))
    print("%-28s %8s %9s %9s %7s" % ("route", "requests", "p50 ms", "p99 ms", "5xx"))
    busiest = sorted(doc["routes"].items(), key=lambda kv: -kv[1]["requests"])[:6]
    for route, s in busiest:
        print("%-28s %8d %9.2f %9.2f %7d" % (route, s["requests"], s["p50_ms"], s["p99_ms"], s["errors"]))
    print("top user-agent words:", ", ".join("%s (%d)" % (w, n) for w, n in doc["agents"]))


if __name__ == "__main__":
    main()
