/* Park/unpark: the one blocking primitive.
 *
 * Every thread that can block owns a wf_parker: a ULT has one in its
 * descriptor, a foreign kernel thread one in thread-local storage. Its state
 * is a token in the style of a binary semaphore:
 *
 *   EMPTY     no token, nobody parked
 *   NOTIFIED  a token is waiting (an unpark came first)
 *   PARKED    the owner is blocked and needs waking
 *
 *   park   (owner only)   NOTIFIED -> EMPTY: return at once, token consumed.
 *                         Otherwise block: a ULT switches away with action
 *                         PARK and the next context commits EMPTY -> PARKED
 *                         once the ULT is off its stack (sched.c); if that
 *                         CAS finds NOTIFIED (the wake-before-park race), it
 *                         consumes the token and requeues the ULT instead.
 *                         A foreign thread CASes EMPTY -> PARKED itself and
 *                         futex-waits while the word is PARKED.
 *   unpark (anyone)       CAS PARKED -> EMPTY: the unparker owns the parked
 *                         thread and makes it runnable (queues the ULT on
 *                         the caller's worker, or futex-wakes the foreign
 *                         thread). Otherwise exchange the state with
 *                         NOTIFIED. Was EMPTY or NOTIFIED: a token is left,
 *                         done. Was PARKED (it parked in between): as above,
 *                         after exchanging the state to EMPTY. Always a
 *                         read-modify-write: see the comment in wf_unpark
 *                         for the race a plain load would lose.
 *
 * Ordering: the commit CAS is acq_rel and the unpark exchange is acq_rel, so the
 * parked ULT's saved context (written before the switch, on the parking
 * worker) happens-before the unparker queues it, which happens-before the
 * worker that dequeues it (queue release/acquire) resumes it.
 *
 * Who owns the parked ULT: between the commit (EMPTY -> PARKED) and the
 * unpark exchange that finds PARKED, nobody may touch it; after that, only
 * that unparker, until it has queued the ULT.
 *
 * Two cheaper forms for a wait's parker (src/sync/wait.c), which exactly
 * one party - whoever took the waiter out of its queue - unparks:
 *
 *   wf_park_unlock  a ULT parks while it holds its queue's lock, which
 *                   that party must take first; the next context commits
 *                   EMPTY -> PARKED with a store and only then releases
 *                   the lock (sched.c, WF_AFTER_PARK): no unpark can come
 *                   in between, so the commit needs no CAS. (Go's gopark
 *                   with an unlock function does the same.) The lock is
 *                   held across one switch; the decision in it defers its
 *                   timer checks, whose fire functions take such locks,
 *                   to the release (pick_next).
 *   wf_unpark_sole  the one party finds a ULT's parker PARKED: nobody
 *                   else can move it now, so a store EMPTY takes it.
 *                   Not for a foreign owner, which moves its own word
 *                   PARKED -> EMPTY when its wait times out.
 *
 * Biased parkers: two ULTs handing one worker back and forth with
 * weft_park/weft_unpark (or weft_park_handoff) would pay two CASes a
 * round: the commit and the unpark's, each about as dear as the rest of
 * the switch. So a ULT's own parker (only that one: a waiter's has the
 * cheaper forms above) may be biased to a worker W - W's id plus one in
 * the state word above the token - once its ULT was unparked from the
 * worker it parked on park_need times in a row (park_local counts them;
 * need starts at WF_PARK_BIAS_AFTER). The commit CAS that parks it sets
 * the bias. While it is biased, W's kernel thread - the commit, a ULT on
 * W that parks or unparks it - moves it with plain stores, inside the
 * owner's side of W's owner-biased lock (w->park_bias, util/bias.h: a
 * store and a load, no locked instruction), and every other thread must
 * take the lock's other side (a membarrier) - which it does only to take
 * the bias away (debias): an unpark from another worker or a foreign
 * thread, the ULT itself parking after it moved to another worker. The
 * ULT then waits twice as many local unparks for its next bias (up to
 * WF_PARK_BIAS_MAX): a pattern that keeps breaking the bias soon pays a
 * membarrier only once in thousands of unparks. Unbiased, every change is
 * a CAS of the whole word, so no change can overwrite a bias set
 * meanwhile (that is why the unpark below never exchanges).
 *
 * Where a parker lives: a ULT's own one in its descriptor (weft_park), a
 * foreign thread's in thread-local storage, and a wait-on-address waiter's
 * on the waiter's stack (src/sync/wait.c). A parker on a stack is safe
 * because its unparker touches it for the last time before the owner can
 * return: the exchange that leaves a token if the owner had not blocked yet
 * (the owner returns only after it sees that token), and otherwise the RMW
 * that sets EMPTY, which comes before the ULT is queued, or which a foreign
 * owner waits for (it returns only once the word is EMPTY again; the futex
 * wake after it may hit a dead address, which the kernel tolerates).
 */
#include "sched/sched.h"
#include "trace/trace.h"

static __thread wf_parker_t foreign_parker; /* .ult = NULL: foreign */

wf_parker_t *wf_foreign_parker(void)
{
	return &foreign_parker;
}

/* Consume a waiting token: NOTIFIED -> EMPTY (unbiased). */
static inline int take_token(wf_parker_t *p)
{
	int e = WF_PARK_NOTIFIED;
	return atomic_compare_exchange_strong_explicit(&p->state, &e, WF_PARK_EMPTY,
						       memory_order_acquire, memory_order_relaxed);
}

/* ---- the bias ------------------------------------------------------------ */

static inline int load_state(wf_parker_t *p)
{
	return atomic_load_explicit(&p->state, memory_order_relaxed);
}

/* Inside w's owner side, p biased to w (b): its new state. */
static inline void set_biased(wf_parker_t *p, int b, int token)
{
	atomic_store_explicit(&p->state, (b << 2) | token, memory_order_relaxed);
}

/* Take p's bias b away, from a kernel thread that is not b's worker's. Its
 * owner is not half-way through a store once we hold the other side. The
 * load acquires what the commit CAS that set the bias published (the lock
 * orders only what the owner stored inside it); the release orders all of
 * it, and ours, before whoever's CAS reads the word next. */
static void debias(wf_parker_t *p, int b)
{
	wf_bias_lock_t *l = &wf_rt.workers[b - 1]->park_bias;
	wf_bias_other_lock(l);
	int s = atomic_load_explicit(&p->state, memory_order_acquire);
	if (WF_PARK_BIAS(s) == b)
		atomic_store_explicit(&p->state, WF_PARK_TOKEN(s), memory_order_release);
	wf_bias_other_unlock(l);
	wf_ult_t *u = p->ult;
	int need = atomic_load_explicit(&u->park_need, memory_order_relaxed);
	if (need < WF_PARK_BIAS_MAX)
		atomic_store_explicit(&u->park_need, need * 2, memory_order_relaxed);
	atomic_store_explicit(&u->park_local, 0, memory_order_relaxed);
}

/* Count an unpark of u's own parker made on w (NULL: a foreign thread):
 * is it from the worker u parked on? A hint, so plain loads and stores. */
static inline void count_unpark(wf_ult_t *u, const wf_worker_t *w)
{
	int n = atomic_load_explicit(&u->park_local, memory_order_relaxed);
	if (w && __atomic_load_n(&u->last_worker, __ATOMIC_RELAXED) == w->id) {
		if (n < WF_PARK_BIAS_MAX)
			atomic_store_explicit(&u->park_local, n + 1, memory_order_relaxed);
	} else if (n) {
		atomic_store_explicit(&u->park_local, 0, memory_order_relaxed);
	}
}

int wf_park_commit(wf_worker_t *w, wf_parker_t *p)
{
	int b = w->id + 1;
	if (WF_PARK_BIAS(load_state(p)) == b) {
		wf_bias_owner_lock(&w->park_bias);
		int s = load_state(p);
		if (WF_PARK_BIAS(s) == b) {
			int token = WF_PARK_TOKEN(s) == WF_PARK_NOTIFIED;
			set_biased(p, b, token ? WF_PARK_EMPTY : WF_PARK_PARKED);
			wf_bias_owner_unlock(&w->park_bias);
			return token;
		}
		wf_bias_owner_unlock(&w->park_bias); /* taken away meanwhile */
	}
	/* Unbiased (wf_park and wf_park_handoff took any other worker's bias
	 * away before the switch, and only this commit sets one). */
	wf_ult_t *u = p->ult;
	int bias = u && p == &u->parker &&
				   atomic_load_explicit(&u->park_local, memory_order_relaxed) >=
					   atomic_load_explicit(&u->park_need, memory_order_relaxed)
			   ? b
			   : 0;
	int e = WF_PARK_EMPTY;
	if (atomic_compare_exchange_strong_explicit(&p->state, &e, (bias << 2) | WF_PARK_PARKED,
						    memory_order_acq_rel, memory_order_acquire))
		return 0;
	/* An unpark arrived while we were switching: consume it. */
	WF_ASSERT(e == WF_PARK_NOTIFIED);
	atomic_store_explicit(&p->state, WF_PARK_EMPTY, memory_order_relaxed);
	return 1;
}

/* ---- park and unpark ----------------------------------------------------- */

void wf_park(wf_parker_t *p)
{
	if (!p->ult) {
		wf_park_until(p, 0, 0);
		return;
	}
	wf_worker_t *w = wf_worker_self();
	for (;;) {
		int s = load_state(p);
		int b = WF_PARK_BIAS(s);
		if (b == 0) {
			/* Look before the CAS: a failed CAS costs as much as a
			 * successful one, and without a token the block below
			 * copes with one arriving late. */
			if (WF_PARK_TOKEN(s) == WF_PARK_NOTIFIED && take_token(p))
				return;
			break;
		}
		if (b != w->id + 1) {
			debias(p, b); /* we moved to another worker */
			continue;
		}
		wf_bias_owner_lock(&w->park_bias);
		s = load_state(p);
		if (WF_PARK_BIAS(s) != b) {
			wf_bias_owner_unlock(&w->park_bias); /* taken away meanwhile */
			continue;
		}
		int token = WF_PARK_TOKEN(s) == WF_PARK_NOTIFIED;
		if (token)
			set_biased(p, b, WF_PARK_EMPTY);
		wf_bias_owner_unlock(&w->park_bias);
		if (token)
			return;
		break;
	}
	WF_OWNER_ADD(&w->n_parks, 1);
	w->prev_parker = p;
	wf_block(w, p->ult, WF_AFTER_PARK);
}

/* Foreign threads only: park until a token arrives, or, if deadline_ns is
 * not 0, until CLOCK_MONOTONIC passes it, or, if intr, until a signal
 * handler ran on the thread. Returns 0 (token consumed), ETIMEDOUT or
 * EINTR (no token consumed, the parker is EMPTY). */
int wf_park_until(wf_parker_t *p, uint64_t deadline_ns, int intr)
{
	WF_ASSERT(p->ult == NULL);
	if (take_token(p))
		return 0;
	int e = WF_PARK_EMPTY;
	if (!atomic_compare_exchange_strong_explicit(&p->state, &e, WF_PARK_PARKED,
						     memory_order_acq_rel, memory_order_acquire)) {
		take_token(p); /* an unpark came in between: its token is ours */
		return 0;
	}
	for (;;) {
		int s = atomic_load_explicit(&p->state, memory_order_acquire);
		if (s == WF_PARK_EMPTY)
			return 0; /* the unparker is done with p */
		if (s == WF_PARK_NOTIFIED) {
			wf_cpu_relax(); /* between the unparker's two exchanges */
			continue;
		}
		struct timespec rel, *relp = NULL;
		if (deadline_ns) {
			uint64_t now = wf_now_ns();
			if (now >= deadline_ns) {
				e = WF_PARK_PARKED;
				if (atomic_compare_exchange_strong_explicit(
					    &p->state, &e, WF_PARK_EMPTY, memory_order_acquire,
					    memory_order_relaxed))
					return ETIMEDOUT;
				continue; /* an unparker won: wait for it to finish */
			}
			rel.tv_sec = (time_t)((deadline_ns - now) / 1000000000u);
			rel.tv_nsec = (long)((deadline_ns - now) % 1000000000u);
			relp = &rel;
		}
		if (wf_futex_wait(&p->state, WF_PARK_PARKED, relp) == -EINTR && intr) {
			e = WF_PARK_PARKED; /* a handler ran: stop waiting, as for a deadline */
			if (atomic_compare_exchange_strong_explicit(&p->state, &e, WF_PARK_EMPTY,
								    memory_order_acquire,
								    memory_order_relaxed))
				return EINTR;
		}
	}
}

/* Make the parked thread runnable: the wake is ours. */
static void resume(wf_parker_t *p, wf_ult_t *u)
{
	if (u) {
		wf_worker_t *w = wf_worker_self();
		if (WF_TRACING())
			wf_trace_unpark(w, u);
		wf_make_runnable(w, u);
	} else
		wf_futex_wake(&p->state, 1);
}

void wf_unpark(wf_parker_t *p)
{
	/* Read before the first RMW: after it, an owner that had not blocked
	 * yet may return, and p may be gone. */
	wf_ult_t *u = p->ult;
	wf_worker_t *w = NULL;
	if (u && p == &u->parker) {
		w = wf_worker_self();
		count_unpark(u, w);
	}
	for (;;) {
		int s = load_state(p);
		int b = WF_PARK_BIAS(s);
		if (b) {
			if (!w || b != w->id + 1) {
				debias(p, b);
				continue;
			}
			wf_bias_owner_lock(&w->park_bias);
			s = load_state(p);
			if (WF_PARK_BIAS(s) != b) {
				wf_bias_owner_unlock(&w->park_bias);
				continue;
			}
			int parked = WF_PARK_TOKEN(s) == WF_PARK_PARKED;
			set_biased(p, b, parked ? WF_PARK_EMPTY : WF_PARK_NOTIFIED);
			wf_bias_owner_unlock(&w->park_bias);
			if (parked)
				resume(p, u);
			return;
		}
		/* The owner is parked: PARKED -> EMPTY takes it (and orders
		 * what we published before it runs again). Otherwise leave a
		 * token, always with a read-modify-write, never "saw NOTIFIED,
		 * return": the caller has just published the condition its
		 * parker will re-check (a turn variable, a queue). A plain load
		 * may be performed before that store is visible (store->load
		 * reordering), and a parker consuming the old token could then
		 * miss both the condition and this wake-up. */
		int t = WF_PARK_TOKEN(s);
		if (unlikely(t != WF_PARK_EMPTY && t != WF_PARK_NOTIFIED && t != WF_PARK_PARKED))
			wf_panic("parker %p in bad state %d", (void *)p, s);
		int n = t == WF_PARK_PARKED ? WF_PARK_EMPTY : WF_PARK_NOTIFIED;
		if (atomic_compare_exchange_weak_explicit(&p->state, &s, n, memory_order_acq_rel,
							  memory_order_relaxed)) {
			if (t == WF_PARK_PARKED)
				resume(p, u);
			return;
		}
	}
}

void wf_park_unlock(wf_parker_t *p, wf_bspin_t *l, int how)
{
	wf_worker_t *w = wf_worker_self();
	WF_ASSERT(p->ult && p->ult == w->current);
	WF_OWNER_ADD(&w->n_parks, 1);
	w->prev_parker = p;
	w->prev_unlock = l;
	w->prev_unlock_how = how;
	wf_block(w, p->ult, WF_AFTER_PARK);
}

void wf_unpark_sole(wf_parker_t *p)
{
	wf_ult_t *u = p->ult; /* read first, as in wf_unpark */
	if (u && atomic_load_explicit(&p->state, memory_order_acquire) == WF_PARK_PARKED) {
		atomic_store_explicit(&p->state, WF_PARK_EMPTY, memory_order_relaxed);
		resume(p, u);
		return;
	}
	wf_unpark(p);
}

/* Take u's own parker p from PARKED to EMPTY if u is parked: the caller,
 * on w, then owns u, exactly as wf_unpark's winner would. */
static int take_parked(wf_parker_t *p, wf_ult_t *u, wf_worker_t *w)
{
	int s = load_state(p);
	int b = WF_PARK_BIAS(s);
	int taken;
	if (b == 0) {
		int e = WF_PARK_PARKED;
		taken = atomic_compare_exchange_strong_explicit(
			&p->state, &e, WF_PARK_EMPTY, memory_order_acq_rel, memory_order_acquire);
	} else if (b == w->id + 1) {
		wf_bias_owner_lock(&w->park_bias);
		taken = load_state(p) == ((b << 2) | WF_PARK_PARKED);
		if (taken)
			set_biased(p, b, WF_PARK_EMPTY);
		wf_bias_owner_unlock(&w->park_bias);
	} else {
		taken = 0; /* biased to another worker: wf_unpark takes it away */
	}
	if (taken)
		count_unpark(u, w);
	return taken;
}

/* Park the calling ULT (on its parker `mine`) and unpark p's owner - the
 * same as wf_unpark(p) then wf_park(mine) - but when p's owner is a parked
 * ULT, run it on this worker in the caller's place (wf_park_to): the
 * directed hand-off of a simulation kernel passing control from one thread
 * to the next. A token already waiting on `mine`, a foreign owner, or an
 * owner not parked yet take the plain two-step path. Called only by the ULT
 * that owns `mine`. */
void wf_park_handoff(wf_parker_t *mine, wf_parker_t *p)
{
	wf_ult_t *u = p->ult; /* read before the RMW, as in wf_unpark */
	wf_worker_t *w = wf_worker_self();
	int ms = load_state(mine);
	if (WF_PARK_BIAS(ms) && WF_PARK_BIAS(ms) != w->id + 1) {
		debias(mine, WF_PARK_BIAS(ms)); /* we moved: as in wf_park */
		ms = load_state(mine);
	}
	if (!u || p != &u->parker || WF_PARK_TOKEN(ms) == WF_PARK_NOTIFIED ||
	    !take_parked(p, u, w)) {
		wf_unpark(p);
		wf_park(mine);
		return;
	}
	WF_OWNER_ADD(&w->n_parks, 1);
	if (WF_TRACING())
		wf_trace_unpark(w, u);
	wf_park_to(w, mine->ult, mine, u);
}
