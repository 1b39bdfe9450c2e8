"""asyncio: tasks, queues, gather, locks: coroutine resume/suspend events + the event loop."""

import asyncio

DESCRIPTION = "asyncio.run with producer/consumer tasks, Queue, gather, Lock, sleep(0)"
SIZES = {"full": 80000, "smoke": 40}
#: the function --lines and line_profiler look at (most own time under cProfile)
HOT = "consume"


async def produce(queue, start, count):
    for i in range(start, start + count):
        await queue.put(i)
        if i % 8 == 0:
            await asyncio.sleep(0)


async def consume(queue, results, lock, count):
    for _ in range(count):
        item = await queue.get()
        value = await transform(item)
        async with lock:
            results.append(value)
        queue.task_done()


async def transform(item):
    if item % 5 == 0:
        await asyncio.sleep(0)
    return helper(item) + 1


def helper(x):
    return (x * 2654435761) % 1009


async def fan_out(k):
    vals = await asyncio.gather(*(transform(k * 10 + j) for j in range(10)))
    return sum(vals)


async def main(n):
    queue = asyncio.Queue(maxsize=64)
    lock = asyncio.Lock()
    results = []
    producers = 4
    per = n // producers
    tasks = [asyncio.ensure_future(produce(queue, p * per, per)) for p in range(producers)]
    tasks += [asyncio.ensure_future(consume(queue, results, lock, per)) for _ in range(producers)]
    await asyncio.gather(*tasks)
    extra = 0
    for k in range(n // 50):
        extra += await fan_out(k)
    # results arrive in a deterministic order (no timers, single thread), but sum anyway
    return sum(results) + extra + len(results)


def run(n):
    return asyncio.run(main(n))
