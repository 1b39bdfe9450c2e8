"""asyncio coroutines, tasks, gather, queues and async generators.

Deterministic: nothing waits on a timer or on I/O; every suspension is an
`asyncio.sleep(0)` or a queue hand-off, so the event loop runs the same
callbacks in the same order each time.
"""
import asyncio


async def leaf(x):
    await asyncio.sleep(0)
    return x * 2


async def worker(name, n):
    total = 0
    for i in range(n):
        total += await leaf(i)
    return name, total


async def producer(queue, n):
    for i in range(n):
        await queue.put(i)
    await queue.put(None)


async def consumer(queue):
    seen = []
    while True:
        item = await queue.get()
        if item is None:
            return seen
        seen.append(item)


async def agen(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i


class AsyncResource:
    def __init__(self):
        self.log = []

    async def __aenter__(self):
        await asyncio.sleep(0)
        self.log.append("enter")
        return self

    async def __aexit__(self, *exc):
        self.log.append("exit")
        return False


async def amain():
    results = await asyncio.gather(*(worker(name, 5) for name in "abcd"))
    queue = asyncio.Queue(maxsize=2)
    prod = asyncio.ensure_future(producer(queue, 12))
    seen = await consumer(queue)
    await prod
    collected = [x async for x in agen(6)]
    async with AsyncResource() as res:
        await leaf(1)
    return results, seen, collected, res.log


def main():
    return asyncio.run(amain())


if __name__ == "__main__":
    print(main())
