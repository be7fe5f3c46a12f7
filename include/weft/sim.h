/* weft/sim.h — weft-sim: a SpecC-style discrete-event simulation kernel
 * (libweftsim; pkg-config weft-sim).
 *
 * A model is a tree of behaviors: C functions that run as threads of the
 * simulation. wsim_run starts the root behavior; wsim_par forks child
 * behaviors and waits for all of them (SpecC `par`). Behaviors synchronise
 * through events (wsim_notify, wsim_wait, wsim_wait_any) and advance
 * simulated time with wsim_waitfor; channels built on events carry data.
 *
 * Semantics (SpecC's discrete-event scheduler; docs/simulation.md):
 *   - a thread is READY, RUN, WAIT (events), WAITFOR (time), JOIN (its par
 *     children) or COMPLETE;
 *   - a notified event stays notified until the end of the current delta
 *     cycle: when no thread is READY or running, every thread waiting on a
 *     notified event becomes READY and the notifications are cleared (a
 *     delta cycle); an event notified with nobody waiting is lost then;
 *   - when a delta cycle wakes nobody, simulated time advances to the
 *     earliest waitfor and those threads become READY (a timed cycle);
 *   - the simulation ends when the root behavior returns, or - EDEADLK -
 *     when every thread waits on events that nobody can notify.
 *
 * Parallel simulation: with `simcpus` > 1 up to that many READY threads run
 * at once (synchronous parallel DE: cycles still advance only when all of
 * them have stopped), under one kernel lock that the kernel and the
 * channels take. Model code outside the kernel calls runs in parallel; data
 * it shares outside channels is its own to protect.
 *
 * Thread backends (wsim_config_t.backend, or WEFT_SIM_BACKEND):
 *   posix    one glibc pthread per behavior (parallel allowed)
 *   lite     clone() + futex kernel threads sharing the creator's TLS:
 *            sequential only (simcpus 1), see docs/simulation.md
 *   context  N:1 on weft's ucontext switch (sequential only)
 *   quick    N:1 on weft's asm switch (sequential only)
 *   hybrid   M:N: one weft ULT per behavior on weft's workers (parallel
 *            allowed; the runtime starts with `simcpus` workers unless the
 *            program already initialised it)
 *
 * Errors: calls return 0 or an errno value. EPERM: the caller is not a
 * thread of a running simulation. EINVAL: bad arguments.
 *
 * Only the simulation's own threads may call the blocking and notifying
 * calls. A parallel simulation tells other threads apart (EPERM); a
 * sequential one does not check per call, for speed: a call from an
 * outside thread while it runs acts on whichever thread the kernel runs.
 *
 * After EDEADLK the discarded threads never return: a channel one of them
 * was sending on may hold a pointer into its gone stack - initialise such a
 * channel again before using it in another simulation (events and queues
 * need nothing; a queue keeps its contents).
 */
#ifndef WEFT_SIM_H
#define WEFT_SIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define WSIM_API __attribute__((visibility("default")))
#else
#define WSIM_API
#endif

typedef uint64_t wsim_time_t;

enum wsim_backend {
	WSIM_BACKEND_DEFAULT = 0, /* WEFT_SIM_BACKEND, else hybrid */
	WSIM_BACKEND_POSIX = 1,
	WSIM_BACKEND_LITE = 2,
	WSIM_BACKEND_CONTEXT = 3,
	WSIM_BACKEND_QUICK = 4,
	WSIM_BACKEND_HYBRID = 5,
};
#define WSIM_BACKEND_COUNT 6

typedef struct wsim_config {
	int backend;       /* enum wsim_backend */
	int simcpus;       /* threads running at once; 0: WEFT_SIM_CPUS, else 1 */
	size_t stack_size; /* per behavior thread; 0: WEFT_SIM_STACK_SIZE, else
	                      64 KiB (at least 16 KiB) */
} wsim_config_t;

/* Fill *cfg with what wsim_run(NULL, ...) would use (environment applied).
 * EINVAL if the environment holds a bad value. */
WSIM_API int wsim_config_init(wsim_config_t *cfg);

/* "posix", "lite", ...: the backend's name, NULL for an unknown one. */
WSIM_API const char *wsim_backend_name(int backend);
/* The backend called `name`, or -1. */
WSIM_API int wsim_backend_by_name(const char *name);
/* Most threads the backend runs at once (1 for the sequential ones). */
WSIM_API int wsim_backend_max_simcpus(int backend);

/* Run fn(arg) as the root behavior of a new simulation, starting at time 0,
 * and return when it has returned (0) or when every thread is blocked for
 * good (EDEADLK: the blocked threads are discarded without returning).
 * EINVAL: a bad cfg (unknown backend, simcpus < 1 or above the backend's
 * maximum, stack too small) or fn NULL. EBUSY: a simulation is running in
 * this process. EAGAIN/ENOMEM: a thread could not be made. */
WSIM_API int wsim_run(const wsim_config_t *cfg, void (*fn)(void *arg), void *arg);

/* Counters of the last (or running) simulation. */
typedef struct wsim_stats {
	wsim_time_t end_time;  /* simulated time when it ended */
	uint64_t delta_cycles; /* delta cycles that woke a thread */
	uint64_t timed_cycles; /* advances of simulated time */
	uint64_t threads;      /* behavior threads made, the root included */
	uint64_t dispatches;   /* times a thread was moved into RUN */
} wsim_stats_t;
WSIM_API int wsim_stats(wsim_stats_t *st);

/* Simulated time now (0 outside a simulation). */
WSIM_API wsim_time_t wsim_now(void);

/* par: run the n behaviors as child threads and return when all of them
 * have returned. n == 0 returns at once. EINVAL: n < 0, b NULL with n > 0,
 * or a NULL fn. EAGAIN/ENOMEM: a child could not be made (none ran). */
typedef struct wsim_behavior {
	void (*fn)(void *arg);
	void *arg;
} wsim_behavior_t;
WSIM_API int wsim_par(int n, const wsim_behavior_t *b);

/* Events. Zero-filled (WSIM_EVENT_INIT) is a valid event. An event must
 * outlive the threads waiting on it. */
typedef struct wsim_event {
	void *waiters_[2]; /* private */
	void *next_;       /* private: notified-list link */
	int notified_;     /* private */
} wsim_event_t;
#define WSIM_EVENT_INIT      \
	{                    \
		{0, 0}, 0, 0 \
	}
WSIM_API int wsim_event_init(wsim_event_t *e);

/* Mark e notified for the current delta cycle. */
WSIM_API int wsim_notify(wsim_event_t *e);
/* Block until e is notified (at the end of a delta cycle). */
WSIM_API int wsim_wait(wsim_event_t *e);
/* Block until one of the n events is notified; *which (if not NULL) gets
 * the index of the first one in es[] that was. EINVAL: n < 1 or a NULL
 * entry. */
WSIM_API int wsim_wait_any(int n, wsim_event_t *const es[], int *which);
/* Block for d units of simulated time (d == 0: until the next timed cycle
 * at the current time, after every pending delta cycle). */
WSIM_API int wsim_waitfor(wsim_time_t d);

/* Channels (SpecC's standard channel library). Zero-filled is valid for the
 * two handshakes; a queue needs wsim_queue_init. */

/* c_handshake: send() never blocks and is remembered until a receive()
 * consumes it (one at a time); receive() waits for a send. */
typedef struct wsim_handshake {
	wsim_event_t e;
	int flag_;
} wsim_handshake_t;
WSIM_API int wsim_handshake_send(wsim_handshake_t *c);
WSIM_API int wsim_handshake_receive(wsim_handshake_t *c);

/* c_double_handshake: send() blocks until a receiver has taken the data
 * (size bytes copied from d); receive() blocks until a sender offers some.
 * EINVAL: the sizes of a send and its receive differ (the receiver gets
 * nothing, the sender is released with EINVAL as well). */
typedef struct wsim_double_handshake {
	wsim_event_t req_, ack_;
	const void *data_;
	size_t size_;
	int valid_, result_;
} wsim_double_handshake_t;
WSIM_API int wsim_dhs_send(wsim_double_handshake_t *c, const void *d, size_t size);
WSIM_API int wsim_dhs_receive(wsim_double_handshake_t *c, void *d, size_t size);

/* A typed double handshake, SpecC's DEFINE_C_TYPED_DOUBLE_HANDSHAKE:
 * WSIM_DEFINE_TYPED_DOUBLE_HANDSHAKE(int, int) defines wsim_dhs_int_t with
 * wsim_dhs_int_send(c, v) and wsim_dhs_int_receive(c, &v). */
#define WSIM_DEFINE_TYPED_DOUBLE_HANDSHAKE(name, type)                               \
	typedef struct {                                                             \
		wsim_double_handshake_t ch;                                          \
	} wsim_dhs_##name##_t;                                                       \
	static inline int wsim_dhs_##name##_send(wsim_dhs_##name##_t *c, type v)     \
	{                                                                            \
		return wsim_dhs_send(&c->ch, &v, sizeof v);                          \
	}                                                                            \
	static inline int wsim_dhs_##name##_receive(wsim_dhs_##name##_t *c, type *v) \
	{                                                                            \
		return wsim_dhs_receive(&c->ch, v, sizeof *v);                       \
	}

/* c_queue: a bounded FIFO of fixed-size elements; send() blocks while it is
 * full, receive() while it is empty. init: EINVAL for cap or elem_size 0,
 * ENOMEM. destroy: EBUSY while threads wait on it. */
typedef struct wsim_queue {
	wsim_event_t not_full_, not_empty_;
	unsigned char *buf_;
	size_t elem_, cap_, head_, n_;
} wsim_queue_t;
WSIM_API int wsim_queue_init(wsim_queue_t *q, size_t cap, size_t elem_size);
WSIM_API int wsim_queue_destroy(wsim_queue_t *q);
WSIM_API int wsim_queue_send(wsim_queue_t *q, const void *d);
WSIM_API int wsim_queue_receive(wsim_queue_t *q, void *d);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_SIM_H */
