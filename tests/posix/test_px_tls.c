/* Thread-local storage stays the thread's own while threads move between
 * kernel threads: __thread counters and arrays, initialised thread-locals in
 * new threads (also threads that reuse an exited thread's storage), errno
 * and its address, thread-locals of a dlopened library (loaded before the
 * threads exist, and while they do), malloc and free from many threads, and
 * pthread_key_create destructors at thread exit, which still see the
 * thread's thread-locals.
 *
 * On glibc every thread is a kernel thread and all of this holds trivially;
 * the tests pass there to show that they assert only what a thread may
 * expect. On weft the threads are ULTs that move between its workers (two
 * by default, one per CPU) at every blocking point, and each has a thread
 * control block of its own, installed wherever it runs (src/sched/tls.c).
 * Every thread here blocks thousands of times (block_once: sched_yield, a
 * short nanosleep, a handoff to a partner thread under a mutex and a
 * condition variable, or a change of its CPU affinity - a glibc extension,
 * which on weft binds it to another worker) and checks its thread-locals
 * after each time; on weft a test also checks that its threads did change
 * kernel threads. With WEFT_TLS=worker, where threads share their worker's
 * thread-locals, every test but the malloc one fails; that is how they were
 * shown to test something. In sanitizer builds weft gives threads no
 * storage of their own (include/weft.h, enum weft_tls), so those tests skip
 * themselves there.
 *
 * The executables are built with -fstack-protector-all
 * (tests/posix/CMakeLists.txt): every function checks its stack canary,
 * read from the thread control block, on return - often on another worker
 * than the one it was entered on. */
#include "ptest.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if !defined(__SSP_ALL__)
#error "test_px_tls is meant to be built with -fstack-protector-all (tests/posix/CMakeLists.txt)"
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZER_BUILD 1
#else
#define SANITIZER_BUILD 0
#endif

/* For the tests of thread-locals: skip where weft cannot give threads
 * their own (not with WEFT_TLS=worker: there the tests are meant to fail). */
#define SKIP_WITHOUT_OWN_TLS()                                                           \
	do {                                                                             \
		if (SANITIZER_BUILD && px_weft())                                        \
			PX_SKIP("sanitizer build: weft's threads share their worker's "  \
				"thread-local storage (include/weft.h, enum weft_tls)"); \
	} while (0)

#define MAX_THREADS 16
#define ROUNDS      3000 /* blocking points per thread */

/* ---- threads that move ------------------------------------------------- */

/* Two threads that hand a turn back and forth: each handoff blocks one of
 * them on the condition variable until the other has taken its turn. Both
 * must hand off equally often, or the last one waits forever. */
struct pair {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int turn;
};

static void handoff(struct pair *p, int side)
{
	PX_OK(pthread_mutex_lock(&p->m));
	while (p->turn != side)
		PX_OK(pthread_cond_wait(&p->cv, &p->m));
	p->turn = !side;
	PX_OK(pthread_cond_signal(&p->cv));
	PX_OK(pthread_mutex_unlock(&p->m));
}

/* One thread of a crew: its number, its partner pair, and how often it was
 * seen on a different kernel thread than at its previous blocking point. */
struct member {
	struct crew *crew;
	int me;
	struct pair *pair;
	int side;
	unsigned round;
	long tid;
	unsigned moves;
};

#define MAX_CPUS 256

/* n threads running body; the odd and even members pair up (n is even). */
struct crew {
	int n;
	void *(*body)(struct member *);
	void *ctx;
	cpu_set_t usable;  /* the CPUs main may run on */
	int cpu[MAX_CPUS]; /* which they are */
	int n_cpu;
	struct pair pairs[MAX_THREADS / 2];
	struct member m[MAX_THREADS];
	pthread_t t[MAX_THREADS];
	void *ret[MAX_THREADS];
};

static long kernel_tid(void)
{
	return syscall(SYS_gettid);
}

/* Move to another CPU: bind to one of the usable CPUs, in turn, or unbind
 * again. A bound thread runs on that CPU's worker on weft, so this makes
 * it change kernel threads; on glibc the kernel thread changes CPU. */
static void change_cpu(struct member *w)
{
	/* Not where weft's threads share their worker's thread-locals and
	 * stay on one worker (WEFT_MIGRATE=0, tests/posix/CMakeLists.txt). */
	if (SANITIZER_BUILD && px_weft())
		return;
	const struct crew *c = w->crew;
	unsigned k = w->round / 4;
	cpu_set_t set = c->usable;
	if (k % 2 == 0) {
		CPU_ZERO(&set);
		CPU_SET(c->cpu[(w->me + k / 2) % c->n_cpu], &set);
	}
	PX_OK(pthread_setaffinity_np(pthread_self(), sizeof set, &set));
}

/* Block once, in the way the thread's round picks: a yield, a sleep of
 * 10 us, a handoff to its partner, or a change of CPU. Every thread blocks
 * equally often. */
static void block_once(struct member *w)
{
	switch (w->round++ % 4) {
	case 0:
		/* (not PX_SYSOK, which clears errno) */
		if (sched_yield() != 0)
			fail_msg("sched_yield: %s", px_errname(errno));
		break;
	case 1:
		px_sleep_ns(10 * PX_NS_PER_US);
		break;
	case 2:
		handoff(w->pair, w->side);
		break;
	default:
		change_cpu(w);
		break;
	}
	long tid = kernel_tid();
	if (tid != w->tid)
		w->moves++;
	w->tid = tid;
}

static void *crew_thread(void *arg)
{
	struct member *w = arg;
	w->tid = kernel_tid();
	return w->crew->body(w);
}

static void crew_start(struct crew *c, int n, void *(*body)(struct member *), void *ctx)
{
	PX_TRUE(n % 2 == 0 && n <= MAX_THREADS, "a crew of %d", n);
	memset(c, 0, sizeof *c);
	c->n = n;
	c->body = body;
	c->ctx = ctx;
	PX_OK(pthread_getaffinity_np(pthread_self(), sizeof c->usable, &c->usable));
	for (int cpu = 0; cpu < CPU_SETSIZE && c->n_cpu < MAX_CPUS; cpu++)
		if (CPU_ISSET(cpu, &c->usable))
			c->cpu[c->n_cpu++] = cpu;
	PX_CMP(c->n_cpu, >, 0);
	for (int i = 0; i < n / 2; i++) {
		PX_OK(pthread_mutex_init(&c->pairs[i].m, NULL));
		PX_OK(pthread_cond_init(&c->pairs[i].cv, NULL));
	}
	for (int i = 0; i < n; i++) {
		c->m[i] = (struct member){
			.crew = c, .me = i, .pair = &c->pairs[i / 2], .side = i % 2};
		c->t[i] = px_start(NULL, crew_thread, &c->m[i]);
	}
}

/* Join the crew; returns how often its threads moved between kernel
 * threads (0 on glibc). */
static unsigned crew_join(struct crew *c)
{
	unsigned moves = 0;
	for (int i = 0; i < c->n; i++) {
		c->ret[i] = px_join(c->t[i]);
		moves += c->m[i].moves;
	}
	for (int i = 0; i < c->n / 2; i++) {
		PX_OK(pthread_mutex_destroy(&c->pairs[i].m));
		PX_OK(pthread_cond_destroy(&c->pairs[i].cv));
	}
	return moves;
}

/* On weft with a worker per CPU (the default) and two CPUs or more, the
 * threads did change kernel threads, so the test showed something. */
static void report_moves(unsigned moves)
{
	printf("[   INFO   ] %u moves between kernel threads\n", moves);
	if (px_weft() && !SANITIZER_BUILD && px_usable_cpus(NULL) > 1 && !getenv("WEFT_WORKERS"))
		PX_CMP(moves, >, 0);
}

/* The crew's results are distinct addresses, none of them main's. */
static void check_distinct(struct crew *c, const void *mine)
{
	for (int i = 0; i < c->n; i++) {
		PX_TRUE(c->ret[i] != mine, "thread %d's copy is not main's", i);
		for (int j = 0; j < i; j++)
			PX_TRUE(c->ret[i] != c->ret[j], "threads %d and %d have distinct copies", i,
				j);
	}
}

/* ---- __thread counters --------------------------------------------------- */

static __thread unsigned long tls_counter;
static __thread int tls_owner = -1;

/* Through a call that the compiler cannot see into, so the address is
 * computed afresh from the thread pointer (not kept from before a block). */
__attribute__((noinline, noipa)) static unsigned long *counter_addr(void)
{
	return &tls_counter;
}

static void *count_body(struct member *w)
{
	PX_EQ(tls_counter, 0);
	PX_EQ(tls_owner, -1);
	tls_owner = w->me;
	unsigned long *addr = counter_addr();
	for (unsigned long i = 1; i <= ROUNDS; i++) {
		tls_counter++;
		block_once(w);
		unsigned long *now = counter_addr();
		if (tls_counter != i || *now != i || now != addr || tls_owner != w->me)
			fail_msg("thread %d after %lu blocks: counter %lu (%lu at %p, was at %p), "
				 "owner %d",
				 w->me, i, tls_counter, *now, (void *)now, (void *)addr, tls_owner);
	}
	return addr;
}

/* Each thread counts in its own __thread variable and finds its own count
 * after every blocking point. */
static void test_thread_counters_stay_per_thread(void **state)
{
	SKIP_WITHOUT_OWN_TLS();
	static struct crew c;
	tls_counter = 12345;
	crew_start(&c, 8, count_body, NULL);
	unsigned moves = crew_join(&c);
	check_distinct(&c, counter_addr());
	PX_EQ(tls_counter, 12345);
	PX_EQ(tls_owner, -1);
	report_moves(moves);
}

/* ---- initialised thread-locals and a static-TLS array -------------------------- */

#define TLS_INITIAL 0x5eed1234
#define WAVES       4

static const char tls_word_image[] = "weft";
static __thread int tls_initial = TLS_INITIAL;
static __thread const char *tls_word = tls_word_image;
static __thread char tls_buf[4096];

static unsigned char fill_byte(int me, unsigned round)
{
	return (unsigned char)(me * 37 + round * 11 + 1);
}

/* Is every byte of buf c? Returns the first other one's index, or -1. */
static long first_not(const char *buf, size_t n, unsigned char c)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)buf[i] != c)
			return (long)i;
	return -1;
}

/* A stack array across a block: its canary is checked on return, maybe on
 * another worker. */
__attribute__((noinline)) static void local_array_across_block(struct member *w)
{
	char local[512];
	memset(local, w->me + 1, sizeof local);
	block_once(w);
	PX_EQ(first_not(local, sizeof local, (unsigned char)(w->me + 1)), -1);
}

static void *initial_body(struct member *w)
{
	/* A new thread starts with every thread-local's initial value, also
	 * when it runs in the storage of a thread that exited before. */
	PX_EQ(tls_initial, TLS_INITIAL);
	PX_EQ_PTR(tls_word, tls_word_image);
	PX_EQ(first_not(tls_buf, sizeof tls_buf, 0), -1);
	for (unsigned r = 0; r < ROUNDS / WAVES; r++) {
		unsigned char c = fill_byte(w->me, r);
		memset(tls_buf, c, sizeof tls_buf);
		tls_initial = w->me;
		if (r % 2)
			local_array_across_block(w);
		else
			block_once(w);
		long bad = first_not(tls_buf, sizeof tls_buf, c);
		if (bad >= 0)
			fail_msg("thread %d round %u: tls_buf[%ld] = %d, expected %d", w->me, r,
				 bad, (unsigned char)tls_buf[bad], c);
		PX_EQ(tls_initial, w->me);
		PX_EQ_PTR(tls_word, tls_word_image);
	}
	/* Leave it dirty for the next wave's threads to not see. */
	tls_word = NULL;
	return tls_buf;
}

/* A __thread variable with an initialiser reads its initial value in every
 * new thread, and a 4 KiB __thread array is per thread - over several waves
 * of threads, each starting after the last has exited. */
static void test_initialised_thread_locals_and_array(void **state)
{
	SKIP_WITHOUT_OWN_TLS();
	static struct crew c;
	memset(tls_buf, 'M', sizeof tls_buf);
	tls_initial = -1;
	unsigned moves = 0;
	for (int wave = 0; wave < WAVES; wave++) {
		crew_start(&c, 8, initial_body, NULL);
		moves += crew_join(&c);
		check_distinct(&c, tls_buf);
	}
	PX_EQ(first_not(tls_buf, sizeof tls_buf, 'M'), -1);
	PX_EQ(tls_initial, -1);
	PX_EQ_PTR(tls_word, tls_word_image);
	report_moves(moves);
}

/* ---- errno ---------------------------------------------------------------- */

/* Fail a call: open of a missing file (ENOENT) or close(-1) (EBADF). */
static int fail_a_call(int which)
{
	if (which) {
		PX_ERRNO(close(-1), EBADF);
		return EBADF;
	}
	PX_ERRNO(open("/nonexistent/px_tls/missing", O_RDONLY), ENOENT);
	return ENOENT;
}

/* errno's address, asked afresh: the compiler may keep the address of
 * errno (__errno_location is a const function) across calls in a function,
 * but not across this one. */
__attribute__((noinline, noipa)) static int *errno_addr(void)
{
	return &errno;
}

static void *errno_body(struct member *w)
{
	int *addr = errno_addr();
	for (unsigned r = 0; r < ROUNDS; r++) {
		int want = fail_a_call((w->me + r / 3) % 2);
		/* glibc's and weft's sched_yield, nanosleep and mutex and
		 * condition variable calls leave errno alone when they succeed
		 * (POSIX would let them change it, never to another thread's
		 * value). */
		block_once(w);
		int got = errno;
		int *now = errno_addr();
		if (got != want || now != addr || *now != want)
			fail_msg("thread %d round %u: errno %s, at %p %s (was at %p), expected %s",
				 w->me, r, px_errname(got), (void *)now, px_errname(*now),
				 (void *)addr, px_errname(want));
	}
	return addr;
}

/* errno set by a failing call is still the thread's value after it blocks
 * and moves, and stays at the same address (code may keep &errno). */
static void test_errno_survives_blocking(void **state)
{
	SKIP_WITHOUT_OWN_TLS();
	static struct crew c;
	crew_start(&c, 8, errno_body, NULL);
	unsigned moves = crew_join(&c);
	check_distinct(&c, errno_addr());
	report_moves(moves);
}

/* ---- thread-locals of a dlopened library ------------------------------------- */

struct lib {
	void *handle;
	int *(*value)(void);
	char *(*name)(void);
	long *(*zero)(void);
	int initial;
};

static void *lib_symbol(void *handle, const char *name)
{
	void *p = dlsym(handle, name);
	PX_TRUE(p != NULL, "dlsym %s: %s", name, dlerror());
	return p;
}

static void lib_open(struct lib *lib, const char *path)
{
	lib->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	PX_TRUE(lib->handle != NULL, "dlopen %s: %s", path, dlerror());
	lib->value = (int *(*)(void))lib_symbol(lib->handle, "px_tls_lib_value_addr");
	lib->name = (char *(*)(void))lib_symbol(lib->handle, "px_tls_lib_name_addr");
	lib->zero = (long *(*)(void))lib_symbol(lib->handle, "px_tls_lib_zero_addr");
	lib->initial = ((int (*)(void))lib_symbol(lib->handle, "px_tls_lib_initial"))();
}

#define LIB_ZERO_LEN 64

/* The library's thread-locals start at their initial values in this thread
 * and stay its own across the thread's blocks. */
static void *use_lib(struct member *w, const struct lib *lib)
{
	int *v = lib->value();
	PX_EQ(*v, lib->initial);
	PX_EQ_STR(lib->name(), "px_tls_lib");
	long *zero = lib->zero();
	for (int i = 0; i < LIB_ZERO_LEN; i++)
		PX_EQ(zero[i], 0);

	char name[64];
	snprintf(name, sizeof name, "thread %d", w->me);
	strcpy(lib->name(), name);
	*v = w->me * 1000000;
	for (int r = 1; r <= ROUNDS; r++) {
		(*lib->value())++;
		block_once(w);
		int *now = lib->value();
		if (now != v || *now != w->me * 1000000 + r)
			fail_msg("thread %d after %d blocks: the library's value %d at %p, "
				 "expected %d at %p",
				 w->me, r, *now, (void *)now, w->me * 1000000 + r, (void *)v);
		PX_EQ_STR(lib->name(), name);
	}
	/* Leave it dirty for the next wave's threads to not see. */
	for (int i = 0; i < LIB_ZERO_LEN; i++)
		zero[i] = w->me + 1;
	return v;
}

static void *lib_body(struct member *w)
{
	return use_lib(w, w->crew->ctx);
}

/* Two waves of threads, the second in storage the first left behind. */
static void lib_waves(struct lib *lib)
{
	static struct crew c;
	int *mine = lib->value();
	*mine = -7;
	unsigned moves = 0;
	for (int wave = 0; wave < 2; wave++) {
		crew_start(&c, 8, lib_body, lib);
		moves += crew_join(&c);
		check_distinct(&c, mine);
	}
	PX_EQ_PTR(lib->value(), mine);
	PX_EQ(*mine, -7);
	PX_EQ_STR(lib->name(), "px_tls_lib");
	report_moves(moves);
}

/* A library dlopened before the threads exist: its thread-locals (global
 * dynamic model, reached through __tls_get_addr) are per thread. */
static void test_dlopen_before_threads(void **state)
{
	SKIP_WITHOUT_OWN_TLS();
	static struct lib lib;
	lib_open(&lib, PX_TLS_LIB_EARLY);
	lib_waves(&lib);
}

/* Threads wait at a gate for the library main dlopens while they exist. */
struct gate {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int arrived;
	const struct lib *lib;
};

static void *late_body(struct member *w)
{
	struct gate *g = w->crew->ctx;
	/* Run and move before the library is there. */
	PX_EQ(tls_owner, -1);
	tls_owner = w->me;
	for (int r = 0; r < ROUNDS / 4; r++)
		block_once(w);
	PX_OK(pthread_mutex_lock(&g->m));
	g->arrived++;
	PX_OK(pthread_cond_broadcast(&g->cv));
	while (!g->lib)
		PX_OK(pthread_cond_wait(&g->cv, &g->m));
	const struct lib *lib = g->lib;
	PX_OK(pthread_mutex_unlock(&g->m));
	void *v = use_lib(w, lib);
	PX_EQ(tls_owner, w->me);
	return v;
}

/* A library dlopened while threads exist that have already run and moved:
 * its dynamic thread-locals are made for each of them when first used. */
static void test_dlopen_while_threads_exist(void **state)
{
	SKIP_WITHOUT_OWN_TLS();
	static struct crew c;
	static struct gate g;
	static struct lib lib;
	memset(&g, 0, sizeof g);
	PX_OK(pthread_mutex_init(&g.m, NULL));
	PX_OK(pthread_cond_init(&g.cv, NULL));
	crew_start(&c, 8, late_body, &g);
	PX_OK(pthread_mutex_lock(&g.m));
	while (g.arrived < c.n)
		PX_OK(pthread_cond_wait(&g.cv, &g.m));
	PX_OK(pthread_mutex_unlock(&g.m));

	lib_open(&lib, PX_TLS_LIB_LATE);
	int *mine = lib.value();
	PX_EQ(*mine, lib.initial);
	*mine = -7;
	PX_OK(pthread_mutex_lock(&g.m));
	g.lib = &lib;
	PX_OK(pthread_cond_broadcast(&g.cv));
	PX_OK(pthread_mutex_unlock(&g.m));
	unsigned moves = crew_join(&c);
	check_distinct(&c, mine);
	PX_EQ(*lib.value(), -7);
	PX_OK(pthread_mutex_destroy(&g.m));
	PX_OK(pthread_cond_destroy(&g.cv));
	report_moves(moves);

	/* And threads created after it was loaded. */
	lib_waves(&lib);
}

/* ---- malloc and free --------------------------------------------------------- */

#define CHURN_THREADS 16
#define CHURN_ROUNDS  3000
#define CHURN_KEEP    16
#define QUEUE_LEN     256

/* A block and what its bytes should be. */
struct chunk {
	unsigned char *p;
	size_t size;
	unsigned tag;
};

/* Blocks on their way to be freed by another thread. */
static struct {
	pthread_mutex_t m;
	struct chunk q[QUEUE_LEN];
	unsigned head, len;
	atomic_long allocs, frees, cross_frees;
} churn = {.m = PTHREAD_MUTEX_INITIALIZER};

static unsigned char chunk_byte(unsigned tag, size_t i)
{
	return (unsigned char)(tag * 31 + i * 7);
}

static void chunk_fill(struct chunk *c)
{
	for (size_t i = 0; i < c->size; i++)
		c->p[i] = chunk_byte(c->tag, i);
}

/* The first n bytes hold c's pattern. */
static void chunk_check(const struct chunk *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (c->p[i] != chunk_byte(c->tag, i))
			fail_msg("block %p (tag %u, %zu bytes): byte %zu is %d, expected %d",
				 (void *)c->p, c->tag, c->size, i, c->p[i], chunk_byte(c->tag, i));
}

static void chunk_free(struct chunk *c)
{
	chunk_check(c, c->size);
	free(c->p);
	c->p = NULL;
	atomic_fetch_add(&churn.frees, 1);
}

static bool queue_push(const struct chunk *c)
{
	bool ok = false;
	PX_OK(pthread_mutex_lock(&churn.m));
	if (churn.len < QUEUE_LEN) {
		churn.q[(churn.head + churn.len++) % QUEUE_LEN] = *c;
		ok = true;
	}
	PX_OK(pthread_mutex_unlock(&churn.m));
	return ok;
}

static bool queue_pop(struct chunk *c)
{
	bool ok = false;
	PX_OK(pthread_mutex_lock(&churn.m));
	if (churn.len > 0) {
		*c = churn.q[churn.head];
		churn.head = (churn.head + 1) % QUEUE_LEN;
		churn.len--;
		ok = true;
	}
	PX_OK(pthread_mutex_unlock(&churn.m));
	return ok;
}

static uint32_t next_random(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void *churn_body(struct member *w)
{
	struct chunk keep[CHURN_KEEP] = {0};
	uint32_t seed = 0x9e3779b9u * (uint32_t)(w->me + 1);
	for (unsigned r = 0; r < CHURN_ROUNDS; r++) {
		/* Free what others left in the queue before adding to it, so
		 * that a block pushed is there for another thread to take
		 * while this one blocks. */
		struct chunk from_queue;
		for (int i = 0; i < 2 && queue_pop(&from_queue); i++) {
			if (from_queue.tag / CHURN_ROUNDS != (unsigned)w->me)
				atomic_fetch_add(&churn.cross_frees, 1);
			chunk_free(&from_queue);
		}

		struct chunk c = {.size = 16 + next_random(&seed) % (4096 - 16 + 1),
				  .tag = (unsigned)w->me * CHURN_ROUNDS + r};
		if (r % 5 == 0) {
			c.p = calloc(1, c.size);
			PX_TRUE(c.p != NULL, "calloc %zu", c.size);
			for (size_t i = 0; i < c.size; i++)
				PX_EQ(c.p[i], 0);
		} else {
			c.p = malloc(c.size);
			PX_TRUE(c.p != NULL, "malloc %zu", c.size);
		}
		atomic_fetch_add(&churn.allocs, 1);
		chunk_fill(&c);

		struct chunk *slot = &keep[r % CHURN_KEEP];
		if (r % 3 == 0 && queue_push(&c)) {
			/* freed by whichever thread pops it */
		} else if (slot->p && r % 7 == 0) {
			/* realloc keeps what fits, then the block takes c's place */
			size_t kept = slot->size < c.size ? slot->size : c.size;
			unsigned char *p = realloc(slot->p, c.size);
			PX_TRUE(p != NULL, "realloc %zu", c.size);
			slot->p = p;
			chunk_check(slot, kept);
			slot->size = c.size;
			chunk_fill(slot);
			chunk_free(&c);
		} else {
			if (slot->p)
				chunk_free(slot);
			*slot = c;
		}

		block_once(w);
	}
	for (int i = 0; i < CHURN_KEEP; i++)
		if (keep[i].p)
			chunk_free(&keep[i]);
	return NULL;
}

/* 16 threads allocate blocks of 16 to 4096 bytes, fill them with a pattern,
 * and free them later, or pass them through a queue to be freed by another
 * thread, blocking and moving in between: every block keeps its pattern
 * and every block is freed once. */
static void test_malloc_churn_across_threads(void **state)
{
	static struct crew c;
	crew_start(&c, CHURN_THREADS, churn_body, NULL);
	unsigned moves = crew_join(&c);
	struct chunk left;
	while (queue_pop(&left))
		chunk_free(&left);
	PX_EQ(atomic_load(&churn.allocs), (long)CHURN_THREADS * CHURN_ROUNDS);
	PX_EQ(atomic_load(&churn.frees), atomic_load(&churn.allocs));
	PX_CMP(atomic_load(&churn.cross_frees), >, 0);
	report_moves(moves);
}

/* ---- thread exit ------------------------------------------------------------- */

#define EXIT_WAVES  3
#define EXIT_ROUNDS 1000

static __thread struct exit_state {
	int owner;
	unsigned rounds;
} tls_exit = {.owner = -1};

static struct {
	pthread_key_t key;
	atomic_int runs;
	atomic_int seen[MAX_THREADS];
} exits;

/* Runs as the thread exits: its thread-locals are still there and still
 * its own, also after the destructor blocks. */
static void exit_destructor(void *value)
{
	struct exit_state *s = value;
	PX_EQ_PTR(s, &tls_exit);
	int owner = tls_exit.owner;
	PX_TRUE(owner >= 0 && owner < MAX_THREADS, "owner %d", owner);
	PX_EQ(tls_exit.rounds, EXIT_ROUNDS);
	PX_EQ(tls_owner, owner);
	for (int i = 0; i < 50; i++) {
		if (i % 2)
			PX_SYSOK(sched_yield());
		else
			px_sleep_ns(10 * PX_NS_PER_US);
		PX_EQ_PTR(&tls_exit, s);
		PX_EQ(tls_exit.owner, owner);
		PX_EQ(tls_owner, owner);
	}
	atomic_fetch_add(&exits.seen[owner], 1);
	atomic_fetch_add(&exits.runs, 1);
}

__attribute__((noinline)) static void exit_from_below(struct member *w)
{
	char frame[256];
	memset(frame, w->me, sizeof frame);
	PX_SYSOK(sched_yield());
	PX_EQ(first_not(frame, sizeof frame, (unsigned char)w->me), -1);
	pthread_exit((void *)(intptr_t)(w->me + 1));
}

static void *exit_body(struct member *w)
{
	PX_EQ(tls_exit.owner, -1);
	PX_EQ(tls_exit.rounds, 0);
	PX_EQ(tls_owner, -1);
	tls_exit.owner = w->me;
	tls_owner = w->me;
	PX_EQ_PTR(pthread_getspecific(exits.key), NULL);
	PX_OK(pthread_setspecific(exits.key, &tls_exit));
	for (int r = 0; r < EXIT_ROUNDS; r++) {
		tls_exit.rounds++;
		block_once(w);
		PX_EQ_PTR(pthread_getspecific(exits.key), &tls_exit);
	}
	/* Three ways out: return, pthread_exit here, and from a call below. */
	switch (w->me % 3) {
	case 0:
		return (void *)(intptr_t)(w->me + 1);
	case 1:
		pthread_exit((void *)(intptr_t)(w->me + 1));
	default:
		exit_from_below(w);
	}
	return NULL;
}

/* pthread_key_create destructors run in each exiting thread (whether it
 * returns or calls pthread_exit), get the address of one of the thread's
 * __thread variables and find it intact, also after blocking; a thread's
 * exit value arrives; the next wave's threads start with fresh
 * thread-locals. */
static void test_key_destructors_see_thread_locals(void **state)
{
	SKIP_WITHOUT_OWN_TLS();
	static struct crew c;
	PX_OK(pthread_key_create(&exits.key, exit_destructor));
	unsigned moves = 0;
	for (int wave = 0; wave < EXIT_WAVES; wave++) {
		atomic_store(&exits.runs, 0);
		for (int i = 0; i < MAX_THREADS; i++)
			atomic_store(&exits.seen[i], 0);
		crew_start(&c, 12, exit_body, NULL);
		moves += crew_join(&c);
		for (int i = 0; i < c.n; i++) {
			PX_EQ((intptr_t)c.ret[i], i + 1);
			PX_EQ(atomic_load(&exits.seen[i]), 1);
		}
		PX_EQ(atomic_load(&exits.runs), c.n);
	}
	PX_EQ(tls_exit.owner, -1);
	PX_EQ_PTR(pthread_getspecific(exits.key), NULL);
	PX_OK(pthread_key_delete(exits.key));
	report_moves(moves);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		PX_TEST(test_thread_counters_stay_per_thread),
		PX_TEST(test_initialised_thread_locals_and_array),
		PX_TEST(test_errno_survives_blocking),
		PX_TEST(test_dlopen_before_threads),
		PX_TEST(test_dlopen_while_threads_exist),
		PX_TEST(test_malloc_churn_across_threads),
		PX_TEST(test_key_destructors_see_thread_locals),
	};
	return PX_RUN(argc, argv, tests);
}
