#!/usr/bin/env python3
"""What ``fastprof top`` costs a process that starts a thread per task (a
thread-per-request server): its task rate before, during and after a
``top --batch -o`` session, what each snapshot cost it (the helper's CPU
time, the snapshot's ``cost``), and how long the end of the session (the
profile written, the stop) took.  3.14+ (``sys.remote_exec``).

    PYTHONPATH=build/py3.14/lib python3.14 benchmarks/questions/top_thread_churn.py \
        [--seconds 10] [--interval 1] [--before 3] [--after 3]

The script starts itself as the target (``--target DIR``, fastprof not on
its path: the attacher brings it): tasks of a few calls, each on a thread
of its own, one after the other; every 0.25 s it notes its tasks so far
and whether fastprof's sys.monitoring tool is registered.  The attacher
watches for BEFORE seconds, runs ``fastprof top PID --batch -n
SECONDS/INTERVAL --interval INTERVAL -o FILE`` (reading each snapshot the
agent writes in its private directory), then lets the target run AFTER
seconds more.  "After, first second" is the rate in the second after the
tool was gone, "after" the rest.
"""
import argparse
import glob
import json
import marshal
import os
import subprocess
import sys
import tempfile
import time

WINDOW = 0.25  # seconds between the target's notes


def target(control):
    import threading

    def task(k, out):
        out[k % 64] = sum((k * 31 + i) % 1009 for i in range(5))

    mon = sys.monitoring
    out = {}
    notes = []
    k = 0
    stop = os.path.join(control, "stop")
    next_note = time.monotonic()
    while not os.path.exists(stop):
        t = threading.Thread(target=task, args=(k, out), name="task-%d" % k)
        t.start()
        t.join()
        k += 1
        now = time.monotonic()
        if now >= next_note:
            tools = [mon.get_tool(i) for i in range(2, 5)]
            notes.append((now, k, "fastprof" in tools))
            next_note = now + WINDOW
            if len(notes) == 2:
                open(os.path.join(control, "ready"), "w").close()
    with open(os.path.join(control, "notes.json"), "w") as f:
        json.dump(notes, f)


def rate(notes, start, end):
    """Tasks per second between monotonic times start and end (notes in it)."""
    inside = [(t, k) for t, k, _on in notes if start <= t <= end]
    if len(inside) < 2:
        return float("nan")
    return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])


def watch_snapshots(private, costs):
    for path in glob.glob(os.path.join(private, "*", "snapshot")):
        try:
            with open(path, "rb") as f:
                snap = marshal.load(f)
        except (OSError, EOFError, ValueError, TypeError):
            continue
        if "cost" in snap:
            costs[snap["seq"]] = (snap["cost"], len(snap["threads"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="attached for (default 10)")
    ap.add_argument("--interval", type=float, default=1.0, help="top's interval (default 1)")
    ap.add_argument("--before", type=float, default=3.0, help="unprofiled, before (default 3)")
    ap.add_argument("--after", type=float, default=3.0, help="unprofiled, after (default 3)")
    ap.add_argument("--target", metavar="DIR", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.target:
        return target(args.target)
    if not hasattr(sys, "remote_exec"):
        sys.exit("top_thread_churn: fastprof top needs Python 3.14+ (sys.remote_exec)")
    for name in ("seconds", "interval", "before", "after"):
        if not getattr(args, name) > 0:
            sys.exit("top_thread_churn: --%s must be more than 0" % name)
    with tempfile.TemporaryDirectory(prefix="fastprof-top-churn-") as tmp:
        control, private = os.path.join(tmp, "control"), os.path.join(tmp, "private")
        os.mkdir(control)
        os.mkdir(private)
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--target", control],
                                env=env)
        try:
            while not os.path.exists(os.path.join(control, "ready")):
                if proc.poll() is not None:
                    sys.exit("top_thread_churn: the target ended early")
                time.sleep(0.05)
            time.sleep(args.before)
            out = os.path.join(tmp, "churn.prof")
            n = max(1, int(round(args.seconds / args.interval)))
            top_env = dict(os.environ, TMPDIR=private)
            costs = {}
            t0 = time.monotonic()
            top = subprocess.Popen([sys.executable, "-m", "fastprof.cli", "top", str(proc.pid),
                                    "--batch", "-n", str(n), "--interval", str(args.interval),
                                    "--limit", "3", "-o", out], env=top_env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            while top.poll() is None:
                watch_snapshots(private, costs)
                time.sleep(args.interval / 4)
            session = time.monotonic() - t0
            err = top.stderr.read()
            time.sleep(args.after)
        finally:
            open(os.path.join(control, "stop"), "w").close()
            proc.wait(timeout=120)
        with open(os.path.join(control, "notes.json")) as f:
            notes = json.load(f)
    on = [t for t, _k, attached in notes if attached]
    print("python %d.%d: a thread per task, top --batch -n %d --interval %g -o FILE"
          % (sys.version_info[:2] + (n, args.interval)))
    print("  top: exit %d after %.1f s (%g s of intervals); %s"
          % (top.returncode, session, n * args.interval,
             "profile written" if "wrote " in err else "NO PROFILE: " + err.strip()[-300:]))
    if costs:
        cpu = sorted(c for c, _t in costs.values())
        print("  snapshots: %d read, CPU in the target: median %.1f ms, max %.1f ms; "
              "threads listed: max %d" % (len(cpu), cpu[len(cpu) // 2] * 1e3, cpu[-1] * 1e3,
                                          max(t for _c, t in costs.values())))
    if not on:
        print("  the target never saw fastprof's tool registered")
        return
    first, last = on[0], on[-1]
    print("  tasks/s: before %.0f, during %.0f, after (first second) %.0f, after %.0f"
          % (rate(notes, notes[0][0], first), rate(notes, first, last),
             rate(notes, last, last + 1.0), rate(notes, last + 1.0, notes[-1][0])))
    print("  threads the target ran while attached: about %d"
          % (max(k for t, k, _a in notes if t <= last) - max(k for t, k, _a in notes if t <= first)))


if __name__ == "__main__":
    main()
