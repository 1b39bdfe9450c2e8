"""A service-like target for tests/test_attach.py: three worker threads
doing known work in a loop until told to stop.

    python attach_target.py CONTROL_DIR [--block-main FIFO]

Writes CONTROL_DIR/ready once every worker has done work.  Stops when CONTROL_DIR/stop
appears (its content: the exit status), then prints the work done and what
sys.monitoring's profiler slot holds (and whether fastprof or sys.path changed), and exits with that status.  With
--block-main the main thread first waits in one C call (opening the named
pipe FIFO for reading, then reading a byte from it) until the test writes to
it: the case where an attach request has to wait for as long as the test
wants.
"""
import os
import sys
import threading
import time


def square_sum(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def worker_step(results, k):
    results[k] += square_sum(200)


def worker(results, k, stop):
    while not stop.is_set():
        worker_step(results, k)
        time.sleep(0.001)


def main():
    path_at_start = list(sys.path)
    control = sys.argv[1]
    block = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--block-main" else None
    results = [0, 0, 0]
    stop = threading.Event()
    workers = [threading.Thread(target=worker, args=(results, k, stop), name="worker-%d" % k)
               for k in range(3)]
    for t in workers:
        t.start()
    while not all(results):  # each worker has done work: "work done" holds however soon it stops
        time.sleep(0.001)
    with open(os.path.join(control, "ready.tmp"), "w") as f:
        f.write(str(os.getpid()))
    os.replace(os.path.join(control, "ready.tmp"), os.path.join(control, "ready"))
    if block:
        # one C call each: the main thread checks for nothing meanwhile
        fd = os.open(block, os.O_RDONLY)
        os.read(fd, 1)
        os.close(fd)
    stop_file = os.path.join(control, "stop")
    while not os.path.exists(stop_file):
        time.sleep(0.02)
    time.sleep(0.05)
    with open(stop_file) as f:
        status = int(f.read().strip() or 0)
    stop.set()
    for t in workers:
        t.join()
    steps = [r // square_sum(200) for r in results]
    print("work done:", all(s > 0 for s in steps), "exact:", all(
        r == s * square_sum(200) for r, s in zip(results, steps)))
    print("profiler slot:", sys.monitoring.get_tool(sys.monitoring.PROFILER_ID))
    print("fastprof modules:", sorted(m for m in sys.modules if m.startswith("fastprof")))
    print("sys.path unchanged:", sys.path == path_at_start)
    sys.stdout.flush()
    sys.exit(status)


if __name__ == "__main__":
    main()
