/* A process for tools/weft-gdb.py to look at (tests/gdb/test_weft_gdb.sh).
 *
 * It sets up one ULT in each state the extension must report, each blocked
 * inside a function with a distinctive name (gt_*) so that the driver can
 * check the backtraces, prints "READY <ids>" and then stays as it is:
 *
 *   main          running on worker 0, holding gt_mutex, in a kernel sleep
 *                 (gt_main_holds_the_mutex)
 *   mutex-waiter  parked: weft_mutex_lock(&gt_mutex)     (gt_wait_on_mutex)
 *   cond-waiter   parked: weft_cond_wait(&gt_cond, ...)  (gt_wait_on_cond)
 *   parker        parked: weft_park()                    (gt_park_forever)
 *   joiner        parked: weft_join(parker)              (gt_join_the_parker)
 *   sleeper       parked: weft_nanosleep(1 hour)         (gt_sleep_long)
 *   yielder       runnable on worker 1: it yielded, and busy took worker 1
 *                 from it for good                       (gt_yield_forever)
 *   busy          running on worker 1, in a kernel sleep (gt_busy_forever)
 *   queued        runnable on worker 1, never ran: busy keeps it waiting
 *   finished      exited, never joined
 *
 * The runtime uses 2 workers and no migration, so main stays on worker 0
 * and the two ULTs bound to worker 1 share it as described. The process
 * ends itself after WEFT_GDB_TARGET_SECONDS (default 120) so that it never
 * outlives a test that forgot it.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <weft.h>
#include <weft/sync.h>

#define NOINLINE __attribute__((noinline))

static weft_mutex_t gt_mutex;
static weft_mutex_t gt_cond_mutex;
static weft_cond_t gt_cond;
static weft_t gt_parker_id;
static atomic_int gt_ready_count; /* ULTs about to block */
static atomic_int gt_yields;
static atomic_int gt_busy_started;
static volatile int gt_sink; /* keeps the gt_* calls from being tail calls */

static void die(const char *what, int e)
{
	fprintf(stderr, "gdb_target: %s failed: %d\n", what, e);
	_exit(2);
}

#define CHECK(call)                     \
	do {                            \
		int e_ = (call);        \
		if (e_ != 0)            \
			die(#call, e_); \
	} while (0)

/* A kernel-level sleep: the worker itself blocks (weft does not see it). */
static void kernel_sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static NOINLINE void gt_wait_on_mutex(void)
{
	atomic_fetch_add(&gt_ready_count, 1);
	CHECK(weft_mutex_lock(&gt_mutex)); /* main holds it until the end */
	CHECK(weft_mutex_unlock(&gt_mutex));
	gt_sink++;
}

static void *gt_mutex_waiter_main(void *arg)
{
	gt_wait_on_mutex();
	gt_sink++;
	return NULL;
}

static NOINLINE void gt_wait_on_cond(void)
{
	CHECK(weft_mutex_lock(&gt_cond_mutex));
	atomic_fetch_add(&gt_ready_count, 1);
	for (;;) /* nobody signals it */
		CHECK(weft_cond_wait(&gt_cond, &gt_cond_mutex));
}

static void *gt_cond_waiter_main(void *arg)
{
	gt_wait_on_cond();
	gt_sink++;
	return NULL;
}

static NOINLINE void gt_park_forever(void)
{
	atomic_fetch_add(&gt_ready_count, 1);
	for (;;) /* nobody unparks it */
		CHECK(weft_park());
}

static void *gt_parker_main(void *arg)
{
	gt_park_forever();
	gt_sink++;
	return NULL;
}

static NOINLINE void gt_join_the_parker(void)
{
	atomic_fetch_add(&gt_ready_count, 1);
	CHECK(weft_join(gt_parker_id, NULL));
	gt_sink++;
}

static void *gt_joiner_main(void *arg)
{
	gt_join_the_parker();
	gt_sink++;
	return NULL;
}

static NOINLINE void gt_sleep_long(void)
{
	atomic_fetch_add(&gt_ready_count, 1);
	struct timespec hour = {.tv_sec = 3600};
	CHECK(weft_nanosleep(&hour, NULL));
	gt_sink++;
}

static void *gt_sleeper_main(void *arg)
{
	gt_sleep_long();
	gt_sink++;
	return NULL;
}

static NOINLINE void gt_yield_forever(void)
{
	for (;;) {
		atomic_fetch_add(&gt_yields, 1);
		CHECK(weft_yield());
	}
}

static void *gt_yielder_main(void *arg)
{
	gt_yield_forever();
	gt_sink++;
	return NULL;
}

static NOINLINE void gt_busy_forever(void)
{
	atomic_store(&gt_busy_started, 1);
	for (;;) /* never gives worker 1 back */
		kernel_sleep_ms(50);
}

static void *gt_busy_main(void *arg)
{
	gt_busy_forever();
	gt_sink++;
	return NULL;
}

static void *gt_queued_main(void *arg)
{
	return arg;
}

static void *gt_finished_main(void *arg)
{
	return arg;
}

static weft_t spawn(const char *name, int worker, void *(*fn)(void *))
{
	weft_attr_t a;
	weft_t t;
	CHECK(weft_attr_init(&a));
	CHECK(weft_attr_setname(&a, name));
	CHECK(weft_attr_setworker(&a, worker));
	CHECK(weft_create(&t, &a, fn, NULL));
	CHECK(weft_attr_destroy(&a));
	return t;
}

/* Let the other ULTs run until cond holds (a weft sleep: worker 0 is free
 * meanwhile); give up after 10 s. */
static void wait_until(const char *what, int (*cond)(void))
{
	for (int i = 0; !cond(); i++) {
		if (i == 1000) {
			fprintf(stderr, "gdb_target: timed out waiting for %s\n", what);
			_exit(2);
		}
		CHECK(weft_sleep_ns(10000000));
	}
}

static int all_blocking(void)
{
	return atomic_load(&gt_ready_count) == 5;
}

static int yielder_ran(void)
{
	return atomic_load(&gt_yields) > 0;
}

static int busy_started(void)
{
	return atomic_load(&gt_busy_started) != 0;
}

static NOINLINE void gt_main_holds_the_mutex(long seconds)
{
	/* Still RUNNING (weft does not know the worker sleeps in the kernel),
	 * so the debugger reads main's stack from worker 0's kernel thread. */
	for (long i = 0; i < seconds * 10; i++)
		kernel_sleep_ms(100);
	gt_sink++;
}

int main(void)
{
	const char *s = getenv("WEFT_GDB_TARGET_SECONDS");
	long seconds = s ? atol(s) : 120;

	weft_config_t c;
	CHECK(weft_config_init(&c));
	c.workers = 2;
	c.migrate = -1; /* main stays on worker 0 */
	CHECK(weft_init(&c));
	CHECK(weft_mutex_init(&gt_mutex, NULL));
	CHECK(weft_mutex_init(&gt_cond_mutex, NULL));
	CHECK(weft_cond_init(&gt_cond, NULL));
	CHECK(weft_mutex_lock(&gt_mutex));

	weft_t finished = spawn("finished", -1, gt_finished_main);
	weft_t mutex_waiter = spawn("mutex-waiter", -1, gt_mutex_waiter_main);
	weft_t cond_waiter = spawn("cond-waiter", -1, gt_cond_waiter_main);
	gt_parker_id = spawn("parker", -1, gt_parker_main);
	weft_t joiner = spawn("joiner", -1, gt_joiner_main);
	weft_t sleeper = spawn("sleeper", -1, gt_sleeper_main);
	wait_until("the blocking ULTs", all_blocking);

	weft_t yielder = spawn("yielder", 1, gt_yielder_main);
	wait_until("the yielder", yielder_ran);
	weft_t busy = spawn("busy", 1, gt_busy_main);
	wait_until("busy", busy_started);
	weft_t queued = spawn("queued", 1, gt_queued_main);
	/* The ULTs that said they are about to block have had time to. */
	CHECK(weft_sleep_ns(200000000));

	printf("READY main=%llu finished=%llu mutex-waiter=%llu cond-waiter=%llu parker=%llu "
	       "joiner=%llu sleeper=%llu yielder=%llu busy=%llu queued=%llu\n",
	       (unsigned long long)weft_self(), (unsigned long long)finished,
	       (unsigned long long)mutex_waiter, (unsigned long long)cond_waiter,
	       (unsigned long long)gt_parker_id, (unsigned long long)joiner,
	       (unsigned long long)sleeper, (unsigned long long)yielder, (unsigned long long)busy,
	       (unsigned long long)queued);
	fflush(stdout);

	gt_main_holds_the_mutex(seconds);
	fprintf(stderr, "gdb_target: %ld s passed, exiting\n", seconds);
	_exit(3);
}
