/* State Threads (Debian libst-dev), a peer of weft-bench's micro rows when
 * CMake finds it (WB_HAVE_ST). State Threads runs every thread on the one
 * kernel thread that called st_init, switching only when a thread blocks:
 * the N:1 model of the QuickThreads paper's era, and the fastest peer on
 * same-core hand-offs. Its threads run on weft-bench's main thread, between
 * weft sessions, like the other peers. See peers.h. */
#include "peers.h"
#include "report.h"

#include <errno.h>
#include <st.h>

/* st_init once: it makes the calling thread State Threads' primordial
 * thread and starts its idle thread. */
static int st_ready(void)
{
	static int rc = -1;
	if (rc < 0)
		rc = st_init() == 0 ? 0 : (errno ? errno : EAGAIN);
	return rc;
}

static void *st_noop(void *arg)
{
	return arg;
}

int wb_st_create_join(long n, int64_t *elapsed_ns)
{
	int rc = st_ready();
	if (rc)
		return rc;
	int64_t t0 = wb_now_ns();
	for (long i = 0; i < n; i++) {
		st_thread_t t = st_thread_create(st_noop, NULL, 1, 0);
		if (!t)
			return errno ? errno : EAGAIN;
		st_thread_join(t, NULL);
	}
	*elapsed_ns = wb_now_ns() - t0;
	return 0;
}

/* Two threads take turns: each waits on its condition variable until it
 * is its turn, passes the turn and signals the other; one round trip per
 * iteration. No mutex: State Threads switch only when a thread blocks. */
struct st_pp {
	st_cond_t c[2];
	long n;
	int turn;
};

struct st_player {
	struct st_pp *pp;
	int me;
};

static void *st_cond_player(void *arg)
{
	struct st_player *pl = arg;
	struct st_pp *pp = pl->pp;
	for (long i = 0; i < pp->n; i++) {
		while (pp->turn != pl->me)
			st_cond_wait(pp->c[pl->me]);
		pp->turn = 1 - pl->me;
		st_cond_signal(pp->c[1 - pl->me]);
	}
	return NULL;
}

int wb_st_cond_pingpong(long n, int64_t *elapsed_ns)
{
	int rc = st_ready();
	if (rc)
		return rc;
	struct st_pp pp = {.n = n};
	pp.c[0] = st_cond_new();
	pp.c[1] = st_cond_new();
	if (!pp.c[0] || !pp.c[1])
		return ENOMEM;
	struct st_player pl[2] = {{&pp, 0}, {&pp, 1}};
	int64_t t0 = wb_now_ns();
	st_thread_t t[2];
	for (int i = 0; i < 2; i++)
		if (!(t[i] = st_thread_create(st_cond_player, &pl[i], 1, 0)))
			return errno ? errno : EAGAIN; /* (the first, if made, stays blocked) */
	for (int i = 0; i < 2; i++)
		st_thread_join(t[i], NULL);
	*elapsed_ns = wb_now_ns() - t0;
	st_cond_destroy(pp.c[0]);
	st_cond_destroy(pp.c[1]);
	return 0;
}
