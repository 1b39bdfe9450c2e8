"""A busy multi-threaded target for tests/test_top.py (``fastprof top``).

    python top_target.py CONTROL_DIR

Two kinds of work on named threads until CONTROL_DIR/stop appears: "alpha"
calls alpha_work, few calls of much own time each (and 4 KiB allocated); "beta-0" and "beta-1"
call beta_work, many calls of little time each.  Writes CONTROL_DIR/ready
once they run.  At the end prints a computed value that does not depend on
how long the threads ran (so a profiled run prints the same), whether the
work each thread counted is exact, and what a profiler could have left
behind: sys.monitoring's profiler slot, the profile hook, fastprof modules,
threads started by _thread still running, sys.path.
"""
import _thread
import os
import sys
import threading
import time


def alpha_work():
    scratch = bytearray(4096)  # (fastprof top --memory: the most allocated)
    total = 0
    for i in range(20000):
        total += i % 7
    return total + len(scratch) - 4096


def beta_work(i):
    return (i * 31 + 7) % 1009


def alpha(results, stop):
    while not stop.is_set():
        results["alpha"].append(alpha_work())
        time.sleep(0.001)


def beta(results, k, stop):
    n = 0
    while not stop.is_set():
        for _ in range(200):
            results["beta"][k] += beta_work(n % 1000)
            n += 1
        results["beta_n"][k] = n
        time.sleep(0.001)


def main():
    path_at_start = list(sys.path)
    control = sys.argv[1]
    results = {"alpha": [], "beta": [0, 0], "beta_n": [0, 0]}
    stop = threading.Event()
    threads = [threading.Thread(target=alpha, args=(results, stop), name="alpha")]
    threads += [threading.Thread(target=beta, args=(results, k, stop), name="beta-%d" % k)
                for k in range(2)]
    for t in threads:
        t.start()
    with open(os.path.join(control, "ready.tmp"), "w") as f:
        f.write(str(os.getpid()))
    os.replace(os.path.join(control, "ready.tmp"), os.path.join(control, "ready"))
    stop_file = os.path.join(control, "stop")
    while not os.path.exists(stop_file):
        time.sleep(0.02)
    stop.set()
    for t in threads:
        t.join()
    time.sleep(0.2)  # a helper thread that was told to stop has ended by now
    # the beta threads' sums, recomputed: exact whatever the count
    exact = all(results["beta"][k] == sum(beta_work(i % 1000) for i in range(results["beta_n"][k]))
                for k in range(2))
    print("work done:", bool(results["alpha"]) and all(results["beta_n"]),
          "alpha exact:", set(results["alpha"]) == {alpha_work()}, "beta exact:", exact)
    print("result:", sum(beta_work(i) for i in range(100000)) + alpha_work())
    print("profiler slot:", sys.monitoring.get_tool(sys.monitoring.PROFILER_ID),
          "profile hook:", sys.getprofile())
    print("fastprof modules:", sorted(m for m in sys.modules if m.startswith("fastprof")))
    print("other threads:", _thread._count(), "sys.path unchanged:", sys.path == path_at_start)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
