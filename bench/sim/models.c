/* The models of models.h. */
#include "models.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>
#include <weft/sim.h>

const char *const model_names[] = {"prodcons", "fibo20", "tfmul", "mw4", "mw40",
				   "mw400",    "jc40",   "jc400", NULL};

static long scaled(long base, double size)
{
	long n = (long)(base * size + 0.5);
	return n > 0 ? n : 1;
}

/* ---- Producer-Consumer (seed 001, listing A.1) ---------------------------- */

WSIM_DEFINE_TYPED_DOUBLE_HANDSHAKE(char, int8_t)
WSIM_DEFINE_TYPED_DOUBLE_HANDSHAKE(short, int16_t)
WSIM_DEFINE_TYPED_DOUBLE_HANDSHAKE(int, int32_t)
WSIM_DEFINE_TYPED_DOUBLE_HANDSHAKE(llong, int64_t)

#define DATA 42

struct prodcons {
	long n;
	wsim_dhs_char_t cc;
	wsim_dhs_short_t cs;
	wsim_dhs_int_t ci;
	wsim_dhs_llong_t cl;
	wsim_handshake_t cend;
	uint64_t checksum;
	int err;
};

#define CHECK(pc, call)                 \
	do {                            \
		int r_ = (call);        \
		if (r_ && !(pc)->err)   \
			(pc)->err = r_; \
	} while (0)

static void producer(void *arg)
{
	struct prodcons *pc = arg;
	int8_t c = DATA;
	int16_t s = DATA;
	int32_t i = DATA;
	int64_t l = DATA;
	for (long n = 0; n < pc->n; n++) {
		CHECK(pc, wsim_waitfor(10));
		CHECK(pc, wsim_dhs_char_send(&pc->cc, c));
		c = (int8_t)(uint8_t)(c + 1);
		CHECK(pc, wsim_waitfor(10));
		CHECK(pc, wsim_dhs_short_send(&pc->cs, s));
		s = (int16_t)(uint16_t)(s + 1);
		CHECK(pc, wsim_waitfor(10));
		CHECK(pc, wsim_dhs_int_send(&pc->ci, i));
		i = (int32_t)((uint32_t)i + 1);
		CHECK(pc, wsim_waitfor(10));
		CHECK(pc, wsim_dhs_llong_send(&pc->cl, l));
		l = (int64_t)((uint64_t)l + 1);
	}
}

static void consumer(void *arg)
{
	struct prodcons *pc = arg;
	uint64_t h = FNV_OFFSET;
	int8_t c;
	int16_t s;
	int32_t i;
	int64_t l;
	for (long n = 0; n < pc->n; n++) {
		CHECK(pc, wsim_dhs_char_receive(&pc->cc, &c));
		h = fnv_u64(h, (uint64_t)(int64_t)c);
		CHECK(pc, wsim_dhs_short_receive(&pc->cs, &s));
		h = fnv_u64(h, (uint64_t)(int64_t)s);
		CHECK(pc, wsim_dhs_int_receive(&pc->ci, &i));
		h = fnv_u64(h, (uint64_t)(int64_t)i);
		CHECK(pc, wsim_dhs_llong_receive(&pc->cl, &l));
		h = fnv_u64(h, (uint64_t)l);
	}
	pc->checksum = h;
	CHECK(pc, wsim_handshake_send(&pc->cend));
}

static void monitor(void *arg)
{
	struct prodcons *pc = arg;
	CHECK(pc, wsim_handshake_receive(&pc->cend));
}

static void prodcons_main(void *arg)
{
	struct prodcons *pc = arg;
	wsim_behavior_t dut[3] = {{producer, pc}, {consumer, pc}, {monitor, pc}};
	CHECK(pc, wsim_par(3, dut));
}

/* ---- Fibo20 (seed 000, listing 2) ------------------------------------------ */

#define FIBONUM 25

static unsigned long long fibo(unsigned long long n)
{
	return n <= 1 ? n : fibo(n - 1) + fibo(n - 2);
}

struct fibo_b {
	unsigned long long result;
};

static void fibo_main(void *arg)
{
	struct fibo_b *f = arg;
	f->result = fibo(FIBONUM);
}

struct fibo20 {
	long loops;
	struct fibo_b f[20];
	uint64_t sum;
	int err;
};

static void fibo20_main(void *arg)
{
	struct fibo20 *m = arg;
	wsim_behavior_t b[20];
	for (int k = 0; k < 20; k++)
		b[k] = (wsim_behavior_t){fibo_main, &m->f[k]};
	for (long i = 0; i < m->loops; i++) {
		CHECK(m, wsim_par(20, b));
		for (int k = 0; k < 20; k++)
			m->sum += m->f[k].result;
	}
}

/* ---- TFMUL (seed 001, listing A.2) ------------------------------------------ */

#define MAXLOOP 1000

struct fmul {
	int i;
	double f;
	uint64_t *runs; /* per instance: no sharing between parallel behaviors */
};

static void fmul_main(void *arg)
{
	struct fmul *m = arg;
	while (m->i < MAXLOOP) {
		m->f *= 1.1;
		m->i++;
	}
	(*m->runs)++;
}

struct tfmul {
	long rounds;
	struct fmul fm[10];
	uint64_t runs[10];
	int err;
};

static void tfmul_par(struct tfmul *t, int k)
{
	wsim_behavior_t b[10];
	for (int j = 0; j < k; j++)
		b[j] = (wsim_behavior_t){fmul_main, &t->fm[j]};
	CHECK(t, wsim_par(k, b));
}

static void tfmul_main(void *arg)
{
	struct tfmul *t = arg;
	char *p47, *p53, *p73, *p89;
	for (long i = 0; i < t->rounds; i++) {
		tfmul_par(t, 1);
		p47 = malloc(47);
		tfmul_par(t, 7);
		p73 = malloc(73);
		free(p47);
		tfmul_par(t, 9);
		p53 = malloc(53);
		free(p73);
		tfmul_par(t, 3);
		p89 = malloc(89);
		free(p53);
		tfmul_par(t, 8);
		p73 = malloc(73);
		free(p89);
		tfmul_par(t, 4);
		p47 = malloc(47);
		free(p73);
		tfmul_par(t, 2);
		p89 = malloc(89);
		free(p47);
		tfmul_par(t, 5);
		p53 = malloc(53);
		free(p89);
		tfmul_par(t, 6);
		p73 = malloc(73);
		free(p53);
		tfmul_par(t, 10);
		p89 = malloc(89);
		free(p73);
		tfmul_par(t, 1);
		p47 = malloc(47);
		free(p89);
		tfmul_par(t, 7);
		p73 = malloc(73);
		free(p47);
		tfmul_par(t, 9);
		p53 = malloc(53);
		free(p73);
		tfmul_par(t, 3);
		p89 = malloc(89);
		free(p53);
		tfmul_par(t, 8);
		p73 = malloc(73);
		free(p89);
		tfmul_par(t, 4);
		p47 = malloc(47);
		free(p73);
		tfmul_par(t, 2);
		p89 = malloc(89);
		free(p47);
		tfmul_par(t, 5);
		p53 = malloc(53);
		free(p89);
		tfmul_par(t, 6);
		p73 = malloc(73);
		free(p53);
		free(p73);
	}
}

/* ---- master/worker and join chain (seed 003, listings E.1, F.1) ------------ */

#define MW_TOTAL_WORK 4000000ul

/* A minimal thread interface over the two libraries the models run on. */
struct tlib {
	int weft;
};

typedef union tid {
	pthread_t p;
	weft_t w;
} tid_t;

static int t_create(const struct tlib *l, tid_t *t, void *(*fn)(void *), void *arg)
{
	return l->weft ? weft_create(&t->w, NULL, fn, arg) : pthread_create(&t->p, NULL, fn, arg);
}

static int t_join(const struct tlib *l, tid_t t, void **ret)
{
	return l->weft ? weft_join(t.w, ret) : pthread_join(t.p, ret);
}

static void *fixed_work(void *arg)
{
	volatile unsigned long work = (unsigned long)(uintptr_t)arg;
	unsigned long done = 0;
	while (work) {
		work--;
		done++;
	}
	return (void *)(uintptr_t)done;
}

static int master_worker(const struct tlib *l, int n, long rounds, uint64_t *sum)
{
	tid_t *ts = calloc((size_t)n, sizeof *ts);
	if (!ts)
		return ENOMEM;
	int r = 0;
	for (long k = 0; k < rounds && !r; k++) {
		int made = 0;
		for (; made < n; made++)
			if ((r = t_create(l, &ts[made], fixed_work,
					  (void *)(uintptr_t)(MW_TOTAL_WORK / (unsigned long)n))))
				break;
		for (int x = 0; x < made; x++) {
			void *ret;
			int j = t_join(l, ts[x], &ret);
			if (j && !r)
				r = j;
			*sum += (uintptr_t)ret;
		}
	}
	free(ts);
	return r;
}

struct chain {
	const struct tlib *l;
	tid_t *ts;
	int x;
};

static void *recurse(void *arg)
{
	struct chain *c = arg;
	if (c->x == 0)
		return (void *)1;
	void *v;
	if (t_join(c->l, c->ts[c->x - 1], &v))
		return (void *)0;
	return (void *)((uintptr_t)v + 1);
}

static int join_chain(const struct tlib *l, int n, long rounds, uint64_t *sum)
{
	tid_t *ts = calloc((size_t)n, sizeof *ts);
	struct chain *cs = calloc((size_t)n, sizeof *cs);
	int r = ts && cs ? 0 : ENOMEM;
	for (long k = 0; k < rounds && !r; k++) {
		int made = 0;
		for (; made < n; made++) {
			cs[made] = (struct chain){l, ts, made};
			if ((r = t_create(l, &ts[made], recurse, &cs[made])))
				break;
		}
		if (r) {
			/* Thread `made` was not made: the chain above it cannot
			 * finish; join from the bottom, which does. */
			for (int x = 0; x < made; x++)
				t_join(l, ts[x], NULL);
			break;
		}
		void *v;
		r = t_join(l, ts[n - 1], &v);
		*sum += (uintptr_t)v;
	}
	free(ts);
	free(cs);
	return r;
}

/* ---- dispatch ------------------------------------------------------------------ */

int model_is_sim(const char *model)
{
	for (int i = 0; model_names[i]; i++)
		if (strcmp(model, model_names[i]) == 0)
			return i < 3;
	return -1;
}

static int run_sim(int backend, int simcpus, void (*fn)(void *), void *arg)
{
	wsim_config_t cfg;
	int r = wsim_config_init(&cfg);
	if (r)
		return r;
	cfg.backend = backend;
	cfg.simcpus = simcpus;
	return wsim_run(&cfg, fn, arg);
}

static int run_native(const char *model, int backend, int simcpus, double size, model_result_t *out)
{
	struct tlib l = {.weft = backend == WSIM_BACKEND_HYBRID};
	if (backend != WSIM_BACKEND_HYBRID && backend != WSIM_BACKEND_POSIX)
		return EINVAL;
	int own = 0;
	if (l.weft) {
		/* Start weft with simcpus workers, unless it runs already. */
		weft_config_t c;
		int r = weft_config_init(&c);
		if (r)
			return r;
		c.workers = simcpus;
		r = weft_init(&c);
		if (r && r != EBUSY)
			return r;
		own = r == 0;
	}
	uint64_t sum = 0;
	int r;
	if (model[0] == 'm')
		r = master_worker(&l, atoi(model + 2), scaled(10, size), &sum);
	else
		r = join_chain(&l, atoi(model + 2), scaled(50, size), &sum);
	if (own)
		weft_shutdown();
	out->checksum = fnv_u64(FNV_OFFSET, sum);
	out->sim_time = 0;
	return r;
}

int model_run(const char *model, int backend, int simcpus, double size, model_result_t *out)
{
	int kind = model_is_sim(model);
	if (kind < 0 || size <= 0)
		return EINVAL;
	if (kind == 0)
		return run_native(model, backend, simcpus, size, out);
	int r;
	if (strcmp(model, "prodcons") == 0) {
		struct prodcons *pc = calloc(1, sizeof *pc);
		if (!pc)
			return ENOMEM;
		pc->n = scaled(50000, size);
		r = run_sim(backend, simcpus, prodcons_main, pc);
		out->checksum = pc->checksum;
		if (!r)
			r = pc->err;
		free(pc);
	} else if (strcmp(model, "fibo20") == 0) {
		struct fibo20 *m = calloc(1, sizeof *m);
		if (!m)
			return ENOMEM;
		m->loops = scaled(50, size);
		r = run_sim(backend, simcpus, fibo20_main, m);
		out->checksum = fnv_u64(FNV_OFFSET, m->sum);
		if (!r)
			r = m->err;
		free(m);
	} else {
		struct tfmul *t = calloc(1, sizeof *t);
		if (!t)
			return ENOMEM;
		t->rounds = scaled(200, size);
		for (int k = 0; k < 10; k++)
			t->fm[k] = (struct fmul){0, 1.2, &t->runs[k]};
		r = run_sim(backend, simcpus, tfmul_main, t);
		uint64_t runs = 0;
		for (int k = 0; k < 10; k++)
			runs += t->runs[k];
		uint64_t h = fnv_u64(FNV_OFFSET, runs);
		for (int k = 0; k < 10; k++) {
			uint64_t bits;
			memcpy(&bits, &t->fm[k].f, sizeof bits);
			h = fnv_u64(h, bits);
		}
		out->checksum = h;
		if (!r)
			r = t->err;
		free(t);
	}
	wsim_stats_t st;
	wsim_stats(&st);
	out->sim_time = st.end_time;
	return r;
}
