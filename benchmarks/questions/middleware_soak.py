"""Does fastprof.middleware stay flat under a thread-per-request server:
over many requests, do the process's memory and CPU time per request stay
where they were, whether the requests are written, dropped or skipped?

    python benchmarks/questions/middleware_soak.py [--server inprocess|wsgiref|werkzeug]
           [--outcome dropped|written|skipped|none] [--memory] [--requests 100000] [--batch 10000]

Servers: ``inprocess`` (default) calls the middleware from a fresh
``threading.Thread`` per request in this process; ``wsgiref`` is a
``socketserver.ThreadingMixIn`` WSGI server, ``werkzeug`` Flask under
werkzeug's threaded development server (requirements-web.txt), each in a
child process on 127.0.0.1, driven by one client in this process, one
request at a time, a new connection each (so a new server thread each).
Outcomes: ``dropped`` (``slow_ms=100000``: every request recorded, none
kept), ``written`` (``every=1``: every request written, ``max_files=50``),
``skipped`` (``trigger=``: no request carries it, none recorded), ``none``
(no middleware: the app alone). ``--memory``: the middleware's
``memory=True`` (each request's bytes too).

Prints, per batch: CPU time per request of the server process (all its
threads: user + system, from /proc), its resident size, and in process the
profiler's own bytes (``Profile.memory()``) and its thread records. Bounded
in time by --requests; loopback only.
"""

import argparse
import http.client
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

APP = textwrap.dedent("""
    def build(n=50):
        rows = [{"id": i, "name": "item %d" % i} for i in range(n)]
        return str(sum(r["id"] for r in rows if r["id"] % 2 == 0)).encode()

    def app(environ, start_response):
        body = build()
        start_response("200 OK", [("Content-Type", "text/plain"),
                                  ("Content-Length", str(len(body)))])
        return [body]
""")

OUTCOMES = {
    "dropped": {"slow_ms": 100000},
    "written": {"every": 1, "max_files": 50},
    "skipped": {"trigger": "X-Profile"},
    "none": None,
}

SERVERS = {
    "wsgiref": APP + textwrap.dedent("""
        import os, socketserver, sys
        from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

        class Quiet(WSGIRequestHandler):
            def log_message(self, *args):
                pass

        class ThreadingServer(socketserver.ThreadingMixIn, WSGIServer):
            daemon_threads = True

        opts = eval(os.environ["SOAK_OPTIONS"])
        if opts is not None:
            from fastprof.middleware import WSGIMiddleware
            app = WSGIMiddleware(app, os.environ["SOAK_DIR"], **opts)
        server = make_server("127.0.0.1", int(sys.argv[1]), app,
                             server_class=ThreadingServer, handler_class=Quiet)
        server.serve_forever()
    """),
    "werkzeug": APP + textwrap.dedent("""
        import logging, os, sys
        from flask import Flask
        from werkzeug.serving import run_simple

        flask_app = Flask(__name__)

        @flask_app.get("/x")
        def route():
            return build()

        opts = eval(os.environ["SOAK_OPTIONS"])
        if opts is not None:
            from fastprof.middleware import WSGIMiddleware
            flask_app.wsgi_app = WSGIMiddleware(flask_app.wsgi_app, os.environ["SOAK_DIR"], **opts)
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        run_simple("127.0.0.1", int(sys.argv[1]), flask_app, threaded=True)
    """),
}


def proc_cpu(pid):
    """User + system CPU seconds of process *pid*, all its threads."""
    with open("/proc/%s/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_rss(pid):
    """Resident size of process *pid* in MB."""
    with open("/proc/%s/statm" % pid) as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def in_process(options, requests, batch, directory):
    ns = {}
    exec(APP, ns)
    app = mw = ns["app"]
    if options is not None:
        from fastprof.middleware import WSGIMiddleware
        app = mw = WSGIMiddleware(ns["app"], directory, **options)
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/x", "QUERY_STRING": "",
               "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80", "wsgi.url_scheme": "http"}

    def one():
        body = app(dict(environ), lambda status, headers, exc_info=None: None)
        for _chunk in body:
            pass
        getattr(body, "close", lambda: None)()

    def serve(n):
        for _ in range(n):
            t = threading.Thread(target=one)
            t.start()
            t.join()

    prof = mw.profiler._profile if options is not None else None
    report(serve, os.getpid(), requests, batch,
           (lambda: (prof.memory(), len(prof.threads()))) if prof is not None else None)
    if options is not None:
        mw.profiler.close()


def served(server, options, requests, batch, directory, workdir):
    port = free_port()
    script = os.path.join(workdir, "soak_server.py")
    with open(script, "w") as f:
        f.write(SERVERS[server])
    env = dict(os.environ, SOAK_OPTIONS=repr(options), SOAK_DIR=directory)
    proc = subprocess.Popen([sys.executable, script, str(port)], env=env,
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

        def serve(n):
            for _ in range(n):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conn.request("GET", "/x", headers={"Connection": "close"})
                resp = conn.getresponse()
                resp.read()
                conn.close()
                if resp.status != 200:
                    raise SystemExit("HTTP %d" % resp.status)

        report(serve, proc.pid, requests, batch, None)
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def report(serve, pid, requests, batch, inside):
    serve(min(200, batch))  # warm up: imports, first allocations
    print("%6s %10s %14s %9s %12s %8s" % ("batch", "requests", "CPU us/req", "RSS MB",
                                          "profiler MB", "records"))
    done = 0
    for i in range(1, requests // batch + 1):
        cpu0 = proc_cpu(pid)
        serve(batch)
        cpu = proc_cpu(pid) - cpu0
        done += batch
        extra = ("%12.2f %8d" % (inside()[0] / 1e6, inside()[1])) if inside else ""
        print("%6d %10d %14.0f %9.1f %s" % (i, done, cpu / batch * 1e6, proc_rss(pid), extra),
              flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", choices=["inprocess", "wsgiref", "werkzeug"], default="inprocess")
    ap.add_argument("--outcome", choices=sorted(OUTCOMES), default="dropped")
    ap.add_argument("--requests", type=int, default=100000)
    ap.add_argument("--batch", type=int, default=10000)
    ap.add_argument("--memory", action="store_true", help="the middleware's memory=True")
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="fastprof-soak-")
    directory = os.path.join(workdir, "profiles")
    options = OUTCOMES[args.outcome]
    if args.memory and options is not None:
        options = dict(options, memory=True)
    print("Python %s, %s server, %s, %d requests in batches of %d" % (
        sys.version.split()[0], args.server, args.outcome if options is None
        else "%s %r" % (args.outcome, options), args.requests, args.batch))
    try:
        if args.server == "inprocess":
            in_process(options, args.requests, args.batch, directory)
        else:
            served(args.server, options, args.requests, args.batch, directory, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
