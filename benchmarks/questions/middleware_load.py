"""Cost per request of fastprof.middleware's trigger modes, measured with a
load generator (wrk, Debian's package) on 127.0.0.1 (docs/performance.md).

    python benchmarks/questions/middleware_load.py [--seconds 5] [--connections 1] [--server uvicorn|waitress]
    python benchmarks/questions/middleware_load.py --in-process     # the middleware alone, no server

Starts the server (uvicorn + FastAPI, or waitress + Flask) once per mode,
drives one route with wrk for a bounded time, and prints requests per
second and the server's CPU time per request (from /proc: wall time on a
shared machine is too noisy); the cost of a mode is its CPU time per
request less that of the server without the middleware. Needs the
checkout's requirements-web.txt and wrk; bounded in time, loopback only.
"""

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time

ROUTE_WORK = textwrap.dedent("""
    def build(n=150):
        # a typical handler: some objects, a dict, a few helper calls
        rows = [{"id": i, "name": "item %d" % i, "tags": [str(i % 7), str(i % 3)]} for i in range(n)]
        return {"count": len(rows), "rows": [r for r in rows if r["id"] % 2 == 0]}
""")

APPS = {
    "uvicorn": ROUTE_WORK + textwrap.dedent("""
        import os
        from fastapi import FastAPI
        api = FastAPI()

        @api.get("/async")
        async def route_async():
            return build()

        @api.get("/sync")
        def route_sync():          # Starlette's threadpool
            return build()

        app = api
        opts = eval(os.environ["MODE_OPTIONS"])
        if opts is not None:
            from fastprof.middleware import ASGIMiddleware
            app = ASGIMiddleware(api, os.environ["PROFILE_DIR"], **opts)
    """),
    "waitress": ROUTE_WORK + textwrap.dedent("""
        import os
        from flask import Flask
        app = Flask(__name__)

        @app.get("/sync")
        def route_sync():
            return build()

        opts = eval(os.environ["MODE_OPTIONS"])
        if opts is not None:
            from fastprof.middleware import WSGIMiddleware
            app.wsgi_app = WSGIMiddleware(app.wsgi_app, os.environ["PROFILE_DIR"], **opts)
    """),
}

COMMANDS = {
    "uvicorn": lambda port: [sys.executable, "-m", "uvicorn", "app:app", "--host", "127.0.0.1",
                             "--port", str(port), "--log-level", "warning", "--no-access-log"],
    "waitress": lambda port: [sys.executable, "-m", "waitress", "--host=127.0.0.1",
                              "--port=%d" % port, "--threads=4", "app:app"],
}

MODES = [
    ("no middleware", None),
    ("trigger, not triggered", {"trigger": "X-Profile"}),
    ("every=100", {"every": 100}),
    ("slow_ms, none slow", {"slow_ms": 10000}),
    ("every=1 (all kept, .prof)", {"every": 1}),
    ("slow_ms + fast=True", {"slow_ms": 10000, "fast": True}),
    # line by line, the route's work (build: ~20 line events per request)
    ("slow_ms + lines=", {"slow_ms": 10000, "lines": ["app:build"]}),
    ("every=1 + lines=", {"every": 1, "lines": ["app:build"]}),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_mode(server, route, options, seconds, connections, workdir):
    port = free_port()
    profile_dir = os.path.join(workdir, "profiles")
    env = dict(os.environ, MODE_OPTIONS=repr(options), PROFILE_DIR=profile_dir,
               PYTHONPATH=os.pathsep.join([workdir] + sys.path))
    proc = subprocess.Popen(COMMANDS[server](port), cwd=workdir, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("server failed: %s" % proc.stderr.read().decode()) from None
                time.sleep(0.1)
        url = "http://127.0.0.1:%d%s" % (port, route)
        # warm up, then measure
        subprocess.run(["wrk", "-t1", "-c%d" % connections, "-d1s", url], capture_output=True)
        cpu0 = cpu_seconds(proc.pid)
        out = subprocess.run(["wrk", "-t1", "-c%d" % connections, "-d%ds" % seconds, url],
                             capture_output=True, text=True, timeout=seconds + 30).stdout
        cpu = cpu_seconds(proc.pid) - cpu0
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    count = int(re.search(r"(\d+) requests in", out).group(1))
    kept = len(os.listdir(profile_dir)) if os.path.isdir(profile_dir) else 0
    shutil.rmtree(profile_dir, ignore_errors=True)
    return rps, cpu / max(count, 1) * 1e6, kept


def cpu_seconds(pid):
    """CPU time (user + system) of process *pid* so far, all its threads
    (Linux /proc): less disturbed by the machine's other work than wall time."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


_SELECTED = []


def selected(name):
    """Whether mode *name* is measured (--mode; the baseline always is)."""
    return not _SELECTED or name == "no middleware" or any(m in name for m in _SELECTED)


def in_process(rounds, n):
    """The middleware's own cost per request, without a server: a WSGI app
    running build() called n times per mode, best of `rounds` (the modes
    interleaved, so a busy machine slows them alike)."""
    from fastprof.middleware import WSGIMiddleware
    ns = {"__name__": "app"}  # the module lines= names
    exec(ROUTE_WORK, ns)
    build = ns["build"]

    def app(environ, start_response):
        build()
        start_response("200 OK", [])
        return [b"x"]

    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/x", "QUERY_STRING": ""}

    def start_response(status, headers, exc_info=None):
        pass

    def one_round(wsgi):
        # CPU time of this thread: the machine's other processes count less
        # (every=1's files are written by the middleware's writer thread,
        # not counted here)
        t = time.thread_time()
        for _ in range(n):
            body = wsgi(environ, start_response)
            list(body)
            getattr(body, "close", lambda: None)()
        return (time.thread_time() - t) / n * 1e6

    workdir = tempfile.mkdtemp(prefix="fastprof-mwmicro-")
    apps = [("no middleware", app)]
    for name, options in MODES[1:]:
        if not selected(name):
            continue
        if options.get("fast") and sys.version_info[:2] == (3, 13):
            continue
        apps.append((name, WSGIMiddleware(app, workdir, **options)))
    best = {name: float("inf") for name, _a in apps}
    for _ in range(rounds):
        for name, wsgi in apps:
            best[name] = min(best[name], one_round(wsgi))
            if name != "no middleware":
                # slow_ms stays enabled: off before the next mode runs (one
                # profiler at a time; its enable is in the round's first request)
                wsgi.profiler.close()
    print("Python %s, in process (WSGI, no server), CPU time, best of %d x %d requests" % (
        sys.version.split()[0], rounds, n))
    print("  %-28s %12s %12s" % ("mode", "us/request", "cost (us)"))
    base = best["no middleware"]
    for name, _a in apps:
        print("  %-28s %12.1f %12s" % (name, best[name], "" if name == "no middleware"
                                       else "%+.1f" % (best[name] - base)))
    for _name, wsgi in apps[1:]:
        wsgi.profiler.close()
    shutil.rmtree(workdir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=5, help="wrk duration per mode (default 5)")
    ap.add_argument("--connections", type=int, default=1,
                    help="concurrent connections (default 1: time per request = 1/rps)")
    ap.add_argument("--server", choices=sorted(APPS), action="append",
                    help="which server(s) (default: both)")
    ap.add_argument("--in-process", action="store_true",
                    help="measure the middleware alone (no server, no wrk): best of rounds")
    ap.add_argument("--rounds", type=int, default=7, help="--in-process: rounds (default 7)")
    ap.add_argument("--requests", type=int, default=300,
                    help="--in-process: requests per mode and round (default 300)")
    ap.add_argument("--mode", action="append", default=[],
                    help="only the modes whose name contains this (repeatable; e.g. 'lines=')")
    args = ap.parse_args()
    _SELECTED.extend(args.mode)
    if args.in_process:
        in_process(rounds=args.rounds, n=args.requests)
        return
    if shutil.which("wrk") is None:
        raise SystemExit("needs wrk (apt-get install wrk)")
    print("Python %s, %d connection(s), %d s per mode" % (
        sys.version.split()[0], args.connections, args.seconds))
    for server in args.server or sorted(APPS):
        workdir = tempfile.mkdtemp(prefix="fastprof-mwload-")
        with open(os.path.join(workdir, "app.py"), "w") as f:
            f.write(APPS[server])
        for route in (["/async", "/sync"] if server == "uvicorn" else ["/sync"]):
            base = None
            print("\n%s %s" % (server, route))
            print("  %-28s %8s %14s %16s %8s" % ("mode", "req/s", "CPU us/request",
                                                   "cost (CPU us)", "files"))
            for name, options in MODES:
                if not selected(name):
                    continue
                if options and options.get("fast") and sys.version_info[:2] == (3, 13):
                    continue
                rps, per, kept = run_mode(server, route, options, args.seconds, args.connections,
                                          workdir)
                base = per if base is None else base
                print("  %-28s %8.0f %14.0f %16s %8d" % (
                    name, rps, per, "" if options is None else "%+.0f (%+.0f%%)" % (
                        per - base, (per - base) / base * 100), kept))
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
