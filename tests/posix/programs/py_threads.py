"""CPython's threading on whatever pthreads the process has (check_python.sh
runs it on glibc and under LD_PRELOAD=libweft-pthread.so).

The interpreter's threads block in the kernel all the time: in a pipe's
read() while a child process answers, in waitpid() for it, in the futex or
semaphore behind the GIL, a Queue or an Event, in time.sleep. Every line
printed on stdout depends only on the input below, never on timing, so the
two runs must print the same thing. Timings go to stderr.
"""

import concurrent.futures
import hashlib
import queue
import subprocess
import sys
import threading
import time

JOBS = 32
PRODUCERS = 3
ITEMS = 500


def job(i):
    """Run cat on some bytes of our own and check that they come back."""
    data = b"".join(b"%d:%d;" % (i, k) for k in range(200 + 37 * i))
    r = subprocess.run(["cat"], input=data, capture_output=True, timeout=60, check=True)
    if r.stdout != data:
        raise RuntimeError("job %d: cat returned %d bytes, not %d" % (i, len(r.stdout), len(data)))
    # A pipe read by a thread of ours while the child writes into it.
    p = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    got = []

    def drain():
        got.append(p.stdout.read())

    t = threading.Thread(target=drain)
    t.start()
    p.stdin.write(data)
    p.stdin.close()
    t.join(60)
    if t.is_alive() or p.wait(60) != 0:
        raise RuntimeError("job %d: cat did not finish" % i)
    if got[0] != data:
        raise RuntimeError("job %d: piped cat returned other bytes" % i)
    return i, len(data), hashlib.sha256(data).hexdigest()[:16]


def pool():
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as ex:
        results = list(ex.map(job, range(JOBS), timeout=120))
    total = sum(n for _, n, _ in results)
    digest = hashlib.sha256("".join(h for _, _, h in results).encode()).hexdigest()[:16]
    print("pool: %d jobs, %d bytes through cat, digest %s" % (len(results), total, digest))


def producer_consumer():
    """Producers put numbered items on a small bounded queue (so they block
    when it is full); consumers take them (blocking when it is empty); one
    None per consumer ends it."""
    q = queue.Queue(maxsize=8)
    sums = []
    lock = threading.Lock()

    def produce(p):
        for k in range(ITEMS):
            q.put(p * 100000 + k, timeout=60)
            if k % 100 == 0:
                time.sleep(0.001)

    def consume():
        s = n = 0
        while True:
            item = q.get(timeout=60)
            if item is None:
                break
            s += item
            n += 1
        with lock:
            sums.append((n, s))

    consumers = [threading.Thread(target=consume) for _ in range(4)]
    producers = [threading.Thread(target=produce, args=(p,)) for p in range(PRODUCERS)]
    for t in consumers + producers:
        t.start()
    for t in producers:
        t.join(60)
    for _ in consumers:
        q.put(None, timeout=60)
    for t in consumers:
        t.join(60)
    n = sum(c for c, _ in sums)
    s = sum(v for _, v in sums)
    print("queue: %d items, sum %d, %d consumers finished" % (n, s, len(sums)))


def events():
    """A relay: each thread waits for its Event, sleeps a little and sets the next one."""
    n = 10
    evs = [threading.Event() for _ in range(n + 1)]
    order = []

    def relay(i):
        if not evs[i].wait(60):
            return
        time.sleep(0.005)
        order.append(i)
        evs[i + 1].set()

    ts = [threading.Thread(target=relay, args=(i,)) for i in reversed(range(n))]
    for t in ts:
        t.start()
    t0 = time.monotonic()
    evs[0].set()
    done = evs[n].wait(60)
    for t in ts:
        t.join(60)
    print("event relay: %s, order %s" % ("done" if done else "TIMED OUT", order))
    print("event relay took %.3f s" % (time.monotonic() - t0), file=sys.stderr)


def sleeps():
    """time.sleep in several threads at once ends neither early nor very late."""
    late = []

    def sleeper():
        for _ in range(5):
            t0 = time.monotonic()
            time.sleep(0.02)
            late.append(time.monotonic() - t0 - 0.02)

    ts = [threading.Thread(target=sleeper) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    ok = len(late) == 20 and min(late) >= -0.001 and max(late) < 0.5
    print("sleeps: %d, on time: %s" % (len(late), "yes" if ok else "no"))
    print("sleeps: latest %.1f ms late" % (max(late) * 1000), file=sys.stderr)


def main():
    t0 = time.monotonic()
    pool()
    producer_consumer()
    events()
    sleeps()
    print("py_threads: %.3f s" % (time.monotonic() - t0), file=sys.stderr)


if __name__ == "__main__":
    main()
