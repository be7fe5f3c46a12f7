"""fork from a CPython program with threads running (check_python.sh runs it
on glibc and under LD_PRELOAD=libweft-pthread.so and compares the output):
a multiprocessing pool of forked workers, each of which starts threads of its
own, while a thread of the parent waits on a queue; then os.fork from a
thread that is not main, whose child starts a thread and exits with a status;
then os.fork from main, whose child starts a thread and exits."""
import multiprocessing as mp
import os
import queue
import threading


def square_sum(x):
    # Threads inside the forked worker.
    out = []
    lock = threading.Lock()

    def add(i):
        with lock:
            out.append(i * x)

    ts = [threading.Thread(target=add, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(out)


def waiter(q, seen):
    while True:
        v = q.get()
        if v is None:
            return
        seen.append(v)


def fork_from_thread(result):
    pid = os.fork()
    if pid == 0:
        got = []
        t = threading.Thread(target=lambda: got.append(os.getpid()))
        t.start()
        t.join()
        os._exit(5 if got == [os.getpid()] else 6)
    result.append(os.waitpid(pid, 0)[1] >> 8)


def main():
    q = queue.Queue()
    seen = []
    t = threading.Thread(target=waiter, args=(q, seen))
    t.start()
    with mp.get_context("fork").Pool(3) as pool:
        for rnd in range(3):
            q.put(rnd)
            print("pool round", rnd, sum(pool.map(square_sum, range(30))))
    q.put(None)
    t.join()
    print("waiter saw", seen)

    result = []
    f = threading.Thread(target=fork_from_thread, args=(result,))
    f.start()
    f.join()
    print("child of a thread exited", result[0])

    pid = os.fork()
    if pid == 0:
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()
        os._exit(0)
    print("child of main exited", os.waitpid(pid, 0)[1] >> 8)


if __name__ == "__main__":
    main()
