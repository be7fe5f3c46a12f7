/* Thread-specific data.
 *
 * Keys: a global table of WEFT_KEYS_MAX slots, each with a sequence number
 * that is odd while the key exists; create and delete bump it under
 * keys_lock. A thread's value remembers the sequence number it was set
 * under, so a value set for a deleted key is invisible to a later key that
 * reuses the slot (weft_getspecific returns NULL).
 *
 * Values: per thread, lazily, 32 blocks of 32 entries (a ULT that never
 * calls weft_setspecific costs one NULL pointer). A ULT's table hangs off
 * its descriptor and is owned by the ULT; a foreign thread's is
 * thread-local, and a pthread key runs its destructors when it exits. The
 * root ULT's table becomes its kernel thread's at weft_shutdown.
 *
 * An exiting ULT's destructors leave every value of its table NULL, which
 * makes the table, blocks and all, as good as a fresh one: it goes to its
 * worker's cache (owned by the worker, like the stack cache) for the next
 * ULT there that sets a value. So a ULT that sets one value costs no
 * allocation once its worker has a table cached.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sync/wait.h"
#include "util/sys.h"

#define BLOCK   32
#define NBLOCKS (WEFT_KEYS_MAX / BLOCK)

typedef struct {
	uint32_t seq;
	void *val;
} wf_tsd_entry_t;

struct wf_tsd {
	uint32_t used;         /* bit b: block[b] is allocated */
	uint32_t set[NBLOCKS]; /* bit i of set[b]: block[b][i] may hold a value */
	wf_tsd_entry_t *block[NBLOCKS];
	struct wf_tsd *next; /* in a worker's cache */
};

_Static_assert(NBLOCKS <= 32 && BLOCK == 32, "one bit per block, and per entry of a block");

static struct {
	_Atomic uint32_t seq; /* odd: the key exists */
	void (*_Atomic dtor)(void *);
} keys[WEFT_KEYS_MAX];
static wf_spinlock_t keys_lock;

static __thread struct wf_tsd *foreign_tsd;
static pthread_key_t foreign_exit_key;
static pthread_once_t foreign_exit_once = PTHREAD_ONCE_INIT;

int weft_key_create(weft_key_t *k, void (*destructor)(void *))
{
	if (!k)
		return EINVAL;
	wf_spin_lock(&keys_lock);
	for (unsigned i = 0; i < WEFT_KEYS_MAX; i++) {
		uint32_t s = atomic_load_explicit(&keys[i].seq, memory_order_relaxed);
		if (s & 1)
			continue;
		if (s + 1 == 0) /* the slot's sequence is used up: never reuse it */
			continue;
		atomic_store_explicit(&keys[i].dtor, destructor, memory_order_relaxed);
		atomic_store_explicit(&keys[i].seq, s + 1, memory_order_release);
		wf_spin_unlock(&keys_lock);
		*k = i;
		return 0;
	}
	wf_spin_unlock(&keys_lock);
	return EAGAIN;
}

int weft_key_delete(weft_key_t k)
{
	if (k >= WEFT_KEYS_MAX)
		return EINVAL;
	wf_spin_lock(&keys_lock);
	uint32_t s = atomic_load_explicit(&keys[k].seq, memory_order_relaxed);
	int e = EINVAL;
	if (s & 1) {
		atomic_store_explicit(&keys[k].seq, s + 1, memory_order_release);
		atomic_store_explicit(&keys[k].dtor, NULL, memory_order_relaxed);
		e = 0;
	}
	wf_spin_unlock(&keys_lock);
	return e;
}

static void foreign_exit(void *arg);

static void foreign_exit_init(void)
{
	WF_SYS(pthread_key_create)(&foreign_exit_key, foreign_exit);
}

/* The caller's table slot: the ULT's or the foreign thread's. */
static struct wf_tsd **my_table(void)
{
	wf_worker_t *w = wf_worker_self();
	if (w && w->current)
		return &w->current->tsd;
	return &foreign_tsd;
}

/* Tables of exited ULTs, their values all NULL, kept per worker (indexed
 * by worker id; only that worker's kernel thread touches its entry) so a
 * ULT that sets a value pays no calloc/free. Allocated when the runtime
 * starts (wf_sync_start); NULL if that failed: no caching then. */
#define TSD_CACHE 16
struct tsd_cache {
	struct wf_tsd *head;
	int n;
} WF_ALIGNED_CL;
static struct tsd_cache *caches;
static int ncaches;

/* The calling ULT's worker's cache, or NULL (a foreign thread). */
static struct tsd_cache *my_cache(void)
{
	wf_worker_t *w = wf_worker_self();
	return w && w->current && w->id < ncaches ? &caches[w->id] : NULL;
}

/* A table with every value NULL: for a ULT, its worker's cached one if
 * there is one; else a new one. */
static struct wf_tsd *table_get(void)
{
	struct tsd_cache *c = my_cache();
	struct wf_tsd *t = c ? c->head : NULL;
	if (t) {
		c->head = t->next;
		c->n--;
		t->next = NULL;
		return t;
	}
	return calloc(1, sizeof *t);
}

static void table_free(struct wf_tsd *t)
{
	for (uint32_t m = t->used; m; m &= m - 1)
		free(t->block[__builtin_ctz(m)]);
	free(t);
}

/* t's values are all NULL: cache it on the calling ULT's worker, or free it. */
static void table_put(struct wf_tsd *t)
{
	struct tsd_cache *c = my_cache();
	if (c && c->n < TSD_CACHE) {
		t->next = c->head;
		c->head = t;
		c->n++;
		return;
	}
	table_free(t);
}

void wf_sync_start(int nworkers)
{
	wf_signals_start();
	wf_wait_unbias(); /* biased to the workers of a runtime before, if any */
	caches = aligned_alloc(WF_CACHELINE, (size_t)nworkers * sizeof *caches);
	if (caches)
		memset(caches, 0, (size_t)nworkers * sizeof *caches);
	ncaches = caches ? nworkers : 0;
}

/* After the workers' kernel threads ended: nothing uses the caches. */
void wf_sync_stop(void)
{
	for (int i = 0; i < ncaches; i++)
		while (caches[i].head) {
			struct wf_tsd *t = caches[i].head;
			caches[i].head = t->next;
			table_free(t);
		}
	free(caches);
	caches = NULL;
	ncaches = 0;
}

void wf_tsd_on_return(wf_ult_t *u)
{
	wf_ult_exiting(u, 0); /* returning does not run cleanup handlers */
}

void *weft_getspecific(weft_key_t k)
{
	if (k >= WEFT_KEYS_MAX)
		return NULL;
	struct wf_tsd *t = *my_table();
	if (!t || !t->block[k / BLOCK])
		return NULL;
	wf_tsd_entry_t *e = &t->block[k / BLOCK][k % BLOCK];
	if (e->seq != atomic_load_explicit(&keys[k].seq, memory_order_acquire))
		return NULL;
	return e->val;
}

int weft_setspecific(weft_key_t k, const void *value)
{
	if (k >= WEFT_KEYS_MAX)
		return EINVAL;
	uint32_t seq = atomic_load_explicit(&keys[k].seq, memory_order_acquire);
	if (!(seq & 1))
		return EINVAL;
	struct wf_tsd **slot = my_table();
	if (!*slot) {
		if (!(*slot = table_get()))
			return ENOMEM;
		if (slot == &foreign_tsd) {
			WF_SYS(pthread_once)(&foreign_exit_once, foreign_exit_init);
			WF_SYS(pthread_setspecific)(foreign_exit_key, *slot);
		}
	}
	struct wf_tsd *t = *slot;
	if (!t->block[k / BLOCK]) {
		if (!(t->block[k / BLOCK] = calloc(BLOCK, sizeof(wf_tsd_entry_t))))
			return ENOMEM;
		t->used |= 1u << (k / BLOCK);
	}
	wf_tsd_entry_t *e = &t->block[k / BLOCK][k % BLOCK];
	e->seq = seq;
	e->val = (void *)value;
	t->set[k / BLOCK] |= 1u << (k % BLOCK);
	return 0;
}

/* Run the destructors of t's values with the POSIX iteration rule, and
 * leave every value NULL. Runs on the exiting thread, which may still
 * block in them (and set values again: t->used is read afresh). */
static void run_destructors(struct wf_tsd *t)
{
	for (int round = 0; round < WEFT_DESTRUCTOR_ITERATIONS; round++) {
		int any = 0;
		for (uint32_t bm = t->used; bm; bm &= bm - 1) {
			unsigned b = (unsigned)__builtin_ctz(bm);
			/* This round's values; those set again go to the next. */
			uint32_t m = t->set[b];
			t->set[b] = 0;
			for (; m; m &= m - 1) {
				unsigned i = (unsigned)__builtin_ctz(m), k = b * BLOCK + i;
				wf_tsd_entry_t *e = &t->block[b][i];
				void *v = e->val;
				if (!v)
					continue;
				e->val = NULL;
				void (*dtor)(void *) =
					atomic_load_explicit(&keys[k].dtor, memory_order_relaxed);
				if (e->seq != atomic_load_explicit(&keys[k].seq,
								   memory_order_acquire) ||
				    !dtor)
					continue;
				dtor(v);
				any = 1;
			}
		}
		if (!any)
			return;
	}
	/* Values set again in the last round: dropped, as POSIX allows. */
	for (uint32_t bm = t->used; bm; bm &= bm - 1) {
		unsigned b = (unsigned)__builtin_ctz(bm);
		for (uint32_t m = t->set[b]; m; m &= m - 1)
			t->block[b][__builtin_ctz(m)].val = NULL;
		t->set[b] = 0;
	}
}

void wf_tsd_exit(struct wf_tsd **slot)
{
	/* Destructors may set values again: the table stays reachable while
	 * they run, and is detached only when they are done. */
	struct wf_tsd *t = *slot;
	if (!t)
		return;
	run_destructors(t);
	*slot = NULL;
	table_put(t);
}

void wf_tsd_take_foreign(struct wf_tsd **slot)
{
	/* The calling kernel thread becomes the root ULT (weft_init, or a lazy
	 * start): the values it set as a foreign thread go with it. */
	if (!foreign_tsd || *slot)
		return;
	*slot = foreign_tsd;
	foreign_tsd = NULL;
	WF_SYS(pthread_setspecific)(foreign_exit_key, NULL);
}

void wf_tsd_adopt(struct wf_tsd **slot)
{
	/* The root ULT leaves weft (weft_shutdown) and its kernel thread goes
	 * on as a foreign thread: its values go with it. */
	struct wf_tsd *t = *slot;
	if (!t)
		return;
	*slot = NULL;
	if (foreign_tsd) {
		run_destructors(t); /* both tables set: keep the thread's own */
		table_free(t);
		return;
	}
	foreign_tsd = t;
	WF_SYS(pthread_once)(&foreign_exit_once, foreign_exit_init);
	WF_SYS(pthread_setspecific)(foreign_exit_key, t);
}

static void foreign_exit(void *arg)
{
	if (foreign_tsd == arg)
		wf_tsd_exit(&foreign_tsd);
}

void wf_tsd_fork(int phase, const wf_worker_t *kept)
{
	wf_spin_fork(&keys_lock, phase);
	if (phase != WF_FORK_CHILD)
		return;
	/* The other workers' caches (all, if kept is NULL) may have been
	 * half-way through a change (each is its worker's alone): dropped,
	 * their tables left alone. */
	for (int i = 0; i < ncaches; i++)
		if (!kept || i != kept->id) {
			caches[i].head = NULL;
			caches[i].n = 0;
		}
}
