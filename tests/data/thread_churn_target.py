"""A thread per task, one after the other, for tests/test_top.py: what a
thread-per-request server does to a profiler (``fastprof top`` on it).

    python thread_churn_target.py CONTROL_DIR

Until CONTROL_DIR/stop appears, starts a thread named ``task-K`` for each
task K, which computes task(K), and joins it.  Writes CONTROL_DIR/ready
once tasks run.  At the end prints how many tasks ran, whether every
result was right, and what a profiler could have left behind:
sys.monitoring's profiler slot and fastprof modules.
"""
import os
import sys
import threading


def leaf(k):
    return (k * 31 + 7) % 1009


def task(k, out):
    out[k] = sum(leaf(k + i) for i in range(5))


def main():
    control = sys.argv[1]
    stop = os.path.join(control, "stop")
    out = {}
    k = 0
    while not os.path.exists(stop):
        for _ in range(50):
            t = threading.Thread(target=task, args=(k, out), name="task-%d" % k)
            t.start()
            t.join()
            k += 1
        if k == 50:
            with open(os.path.join(control, "ready.tmp"), "w") as f:
                f.write(str(os.getpid()))
            os.replace(os.path.join(control, "ready.tmp"), os.path.join(control, "ready"))
    right = all(out[j] == sum(leaf(j + i) for i in range(5)) for j in range(k))
    mon = getattr(sys, "monitoring", None)
    slot = mon.get_tool(mon.PROFILER_ID) if mon else None
    print("tasks: %d right: %s" % (k, right))
    print("profiler slot: %s fastprof modules: %s" % (
        slot, sorted(m for m in sys.modules if m.startswith("fastprof"))))


if __name__ == "__main__":
    main()
