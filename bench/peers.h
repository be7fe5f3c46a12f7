/* The systems weft is compared with. Each entry point runs one measurement
 * of size n on the calling (plain) kernel thread, stores the wall time in
 * *elapsed_ns and returns 0 or an errno value. They know nothing of the
 * harness, so a peer file is only its library's code.
 *
 * CPU arguments are CPU numbers to pin to, or -1 for "not pinned".
 */
#ifndef WB_PEERS_H
#define WB_PEERS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* glibc pthreads (peers_pthread.c) */

/* n times pthread_create + pthread_join of a thread that returns at once. */
int wb_pthread_create_join(long n, int64_t *elapsed_ns);
/* Two threads pinned to cpu hand a turn back and forth n times, waiting
 * for it with sched_yield: n round trips, 2n switches. */
int wb_pthread_yield_pingpong(long n, int cpu, int64_t *elapsed_ns);
/* Two threads, on cpu_a and cpu_b, hand a turn back and forth n times,
 * waiting for it with FUTEX_WAIT: n round trips. */
int wb_pthread_futex_pingpong(long n, int cpu_a, int cpu_b, int64_t *elapsed_ns);
/* fib(k) with one pthread per call; *threads is the number of threads made. */
int wb_pthread_fib(int k, long *threads, int64_t *elapsed_ns);
/* n threads alive at once: thread i creates thread i+1 and joins it. */
int wb_pthread_chain(long n, int64_t *elapsed_ns);
/* n rounds, each after a pause of pause_ns: a thread starts `threads`
 * threads that each run work(iters), and joins them; elapsed_ns counts the
 * rounds, not the pauses. */
int wb_pthread_spread(long n, int threads, long iters, uint64_t (*work)(long), long pause_ns,
		      int64_t *elapsed_ns);

/* glibc pthreads' synchronization (peers_pthread_sync.c), the sync rows */

/* n times pthread_mutex_lock + unlock of a default mutex, one thread. */
int wb_pthread_mutex_uncontended(long n, int64_t *elapsed_ns);
/* Two threads, on cpu_a and cpu_b, hand a turn back and forth n times with
 * a mutex and a condition variable per thread: n round trips. */
int wb_pthread_cond_pingpong(long n, int cpu_a, int cpu_b, int64_t *elapsed_ns);
/* The same with two semaphores (post the other's, wait on one's own). */
int wb_pthread_sem_pingpong(long n, int cpu_a, int cpu_b, int64_t *elapsed_ns);
/* What the threads of a hammer run take: a default mutex, a spinlock, or
 * nothing (each only yields). */
enum { WB_HAMMER_MUTEX, WB_HAMMER_SPIN, WB_HAMMER_YIELD };
/* threads threads (thread i pinned to cpus[i]; cpus NULL: none pinned),
 * released together, each lock a default mutex (kind WB_HAMMER_SPIN: a
 * pthread_spinlock_t), increment a shared counter (and mix it into a hash),
 * unlock, per_thread times; WB_HAMMER_YIELD: sched_yield per_thread times
 * (the counter counts the yields). *counter is the final count; elapsed
 * from the release to the last join. */
int wb_pthread_mutex_hammer(int threads, long per_thread, const int *cpus, int kind, long *counter,
			    int64_t *elapsed_ns);
/* n threads each nanosleep(sleep_ns); from the first create to the last
 * join. On a failed pthread_create, *created says how many were made (all
 * joined) and its error is returned. */
int wb_pthread_sleep_many(long n, long sleep_ns, long *created, int64_t *elapsed_ns);
/* n threads block in sem_wait on one semaphore; once all have started
 * (*block_ns after the first create), n sem_posts release them and all are
 * joined (*elapsed_ns). *created as above. */
int wb_pthread_sem_many(long n, long *created, int64_t *block_ns, int64_t *elapsed_ns);

/* glibc ucontext (peers_ucontext.c) */

/* n swapcontext round trips between two contexts (2n switches). */
int wb_ucontext_swap_rt(long n, int64_t *elapsed_ns);

/* Boost (peers_boost.cc), present when WB_HAVE_BOOST */

/* n jump_fcontext round trips between two bare contexts (2n switches). */
int wb_boost_jump_rt(long n, int64_t *elapsed_ns);
/* n times boost::context::callcc: create, run, destroy. */
int wb_boost_callcc(long n, int64_t *elapsed_ns);
/* n times boost::fibers::fiber f(fn); f.join(). */
int wb_boost_fiber_create_join(long n, int64_t *elapsed_ns);
/* Two fibers each call boost::this_fiber::yield() n times (2n switches). */
int wb_boost_fiber_yield(long n, int64_t *elapsed_ns);

/* State Threads (peers_st.c), present when WB_HAVE_ST */

/* n times st_thread_create (joinable) + st_thread_join. */
int wb_st_create_join(long n, int64_t *elapsed_ns);
/* n round trips of two threads taking turns through two st_cond_t. */
int wb_st_cond_pingpong(long n, int64_t *elapsed_ns);

/* Go (peers_go.c), present when WB_HAVE_GO: weft-peer-go was built */

typedef struct wb_go_result {
	int64_t elapsed_ns;  /* the n operations, timed by the Go program */
	int64_t block_ns;    /* alive: until every goroutine had started */
	int64_t pre_rss_kb;  /* resident before the operations */
	int64_t peak_rss_kb; /* the process's peak (wait4) */
} wb_go_result_t;
/* One run of weft-peer-go BENCH n (bench/peers_go/main.go says what each
 * is); 0, or an errno value with err saying why (ENOSYS: not built). */
int wb_go_run(const char *bench, long n, wb_go_result_t *res, char *err, size_t errlen);
/* Its benchmarks, for wb_go_case's iarg[0]. */
enum {
	WB_GO_CREATE_JOIN,
	WB_GO_YIELD,
	WB_GO_CHAN_PINGPONG,
	WB_GO_COND_PINGPONG,
	WB_GO_MUTEX_HAMMER,
	WB_GO_ALIVE,
};
/* A weft-bench row's run function (harness.h's wb_run_fn) for Go:
 * c->iarg[0] is the benchmark, c->iarg[1] the operations per unit of n
 * (yield: 2 switches; 0 means 1). The value is ns per operation; alive's
 * is seconds, with sem_1m's per-thread extras. */
struct wb_case;
struct wb_sample;
int wb_go_case(const struct wb_case *c, long n, struct wb_sample *s);

#ifdef __cplusplus
}
#endif

#endif
