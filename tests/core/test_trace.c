/* Scheduler event tracing (src/trace/): run real workloads with a trace
 * into a fresh directory under /tmp and read the CSV back with the small
 * parser below (the JSON is only checked for its first and last bytes; a
 * full check of it is tools/weft-trace's job).
 *
 * Every trace read back goes through check_trace, which asserts what must
 * hold of any trace: the metadata lines and the header; rows in time order;
 * per worker, run and stop alternating (one ULT at a time), every stop
 * naming the ULT that ran and followed at once by the worker's next run or
 * idle; per ULT, never running on two workers at once, a run's arg1 the
 * worker it ran on last, a migrate row exactly where that worker changes,
 * create before the first run, nothing after a stop with detail exit;
 * unparks only of ULTs that are stopped, each followed by a run of that ULT;
 * steals taken by a worker in its loop and run by it next; sleep and wake
 * alternating while the worker is in its loop; creators and wakers being
 * what runs on the worker; one end row per worker and one for worker -1,
 * last; the root ULT "main" running first on worker 0. For a trace written
 * at weft_shutdown also: every created ULT exited, main still runs on
 * worker 0, no worker asleep, every unpark answered by a run.
 *
 * Covered beyond that: the files (B.json, B.csv, no B.raw) and the JSON's
 * first and last bytes; create/name/run/exit rows of named (8 and 31
 * characters, a comma), unnamed, bound, detached and weft_exit-ing ULTs and
 * of ULTs created by ULTs and by a foreign thread; each stop detail - yield,
 * join, park (with the waker in the unpark row), handoff, sleep
 * (weft_sleep_ns and weft_nanosleep), cond, mutex and rwlock (with the lock
 * rows: the lock's address and a wait > 0); with migration off, no migrate
 * rows; per worker, the counts of run+idle, park-like stops, steals, sleeps,
 * creates and exits against weft_worker_stats; the path's "%p" and
 * ".json"/".csv" handling; an unmakeable path (ENOENT, ENOTDIR) leaving the
 * runtime off and a later weft_init working; WEFT_TRACE, and
 * weft_config_t.trace overriding it ("" turns it off); and a trace finished
 * by exit() with a ULT still parked (complete=0), in a child process.
 *
 * Every test initialises the runtime itself and removes its directory when
 * it passes (a failing test leaves it for a look). */
#include "harness.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CSV_HEADER "time_ns,worker,event,ult,name,arg1,arg2,detail"

/* ---- files and directories ---------------------------------------------- */

static void make_dir(char dir[64])
{
	snprintf(dir, 64, "/tmp/weft-trace-XXXXXX");
	WT_TRUE(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char path[512];
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

static int files_in(const char *dir)
{
	DIR *d = opendir(dir);
	WT_TRUE(d != NULL, "opendir %s: %s", dir, strerror(errno));
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* The whole file, NUL-terminated, or NULL. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	assert_non_null(buf);
	for (;;) {
		if (cap - n < 65536) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

/* ---- the CSV ------------------------------------------------------------ */

struct row {
	uint64_t t;
	int worker;
	char ev[12];
	uint64_t ult;
	char name[WEFT_NAME_MAX];
	int64_t a1, a2;
	char detail[12];
	int line;
};

#define MAX_META 32

struct trace {
	char *csv, *json;
	size_t json_len;
	struct row *rows;
	size_t n;
	int nmeta;
	char key[MAX_META][24];
	char val[MAX_META][160];
};

static const char *const events[] = {"run",    "stop",    "idle",   "sleep", "wake",
				     "create", "name",    "unpark", "steal", "migrate",
				     "lock",   "dropped", "end"};
static const char *const stop_details[] = {"yield",  "exit",    "join",      "mutex", "cond",
					   "rwlock", "sem",     "barrier",   "once",  "sleep",
					   "park",   "handoff", "preempted", "other"};
/* Stops of a ULT that parked (WF_AFTER_PARK): all but yield, exit, join. */
static const char *const park_details[] = {"mutex", "cond",  "rwlock", "sem",     "barrier",
					   "once",  "sleep", "park",   "handoff", "other"};

static int in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return 1;
	return 0;
}
#define IN(s, list) in_list(s, list, sizeof list / sizeof list[0])

static int is(const struct row *r, const char *ev)
{
	return strcmp(r->ev, ev) == 0;
}

static void copy_field(char *dst, size_t n, const char *src, int line, const char *what)
{
	if (strlen(src) >= n)
		fail_msg("CSV line %d: %s \"%s\" is too long", line, what, src);
	strcpy(dst, src);
}

static uint64_t parse_u64(const char *s, int line, const char *what)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || errno || *s == '-')
		fail_msg("CSV line %d: %s \"%s\" is not a number", line, what, s);
	return v;
}

static int64_t parse_i64(const char *s, int line, const char *what)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || errno)
		fail_msg("CSV line %d: %s \"%s\" is not a number", line, what, s);
	return v;
}

static void parse_row(struct trace *t, char *s, int line)
{
	char *f[8];
	int nf = 0;
	f[nf++] = s;
	for (char *p = s; *p; p++) {
		if (*p == ',') {
			if (nf == 8)
				fail_msg("CSV line %d has more than 8 fields: %s", line, s);
			*p = '\0';
			f[nf++] = p + 1;
		}
	}
	if (nf != 8)
		fail_msg("CSV line %d has %d fields, expected 8", line, nf);
	struct row *r = &t->rows[t->n++];
	memset(r, 0, sizeof *r);
	r->line = line;
	r->t = parse_u64(f[0], line, "time_ns");
	r->worker = (int)parse_i64(f[1], line, "worker");
	copy_field(r->ev, sizeof r->ev, f[2], line, "event");
	r->ult = parse_u64(f[3], line, "ult");
	copy_field(r->name, sizeof r->name, f[4], line, "name");
	r->a1 = parse_i64(f[5], line, "arg1");
	r->a2 = parse_i64(f[6], line, "arg2");
	copy_field(r->detail, sizeof r->detail, f[7], line, "detail");
}

static void parse_csv(struct trace *t)
{
	size_t lines = 1;
	for (const char *p = t->csv; *p; p++)
		lines += *p == '\n';
	t->rows = calloc(lines, sizeof *t->rows);
	assert_non_null(t->rows);
	int header = 0, line = 0;
	for (char *p = t->csv; *p;) {
		char *nl = strchr(p, '\n');
		WT_TRUE(nl != NULL, "CSV line %d does not end with a newline", line + 1);
		*nl = '\0';
		line++;
		if (p[0] == '#') {
			WT_TRUE(!header, "CSV line %d: a comment after the header", line);
			/* "# key=value", key in [a-z_]; other comments are prose. */
			char *k = p + 2, *e = k;
			while (*e && ((*e >= 'a' && *e <= 'z') || *e == '_'))
				e++;
			if (p[1] == ' ' && e > k && *e == '=') {
				WT_TRUE(t->nmeta < MAX_META, "too many metadata lines");
				*e = '\0';
				copy_field(t->key[t->nmeta], sizeof t->key[0], k, line, "key");
				copy_field(t->val[t->nmeta], sizeof t->val[0], e + 1, line,
					   "value");
				t->nmeta++;
			}
		} else if (!header) {
			WT_EQ_STR(p, CSV_HEADER);
			header = 1;
		} else {
			parse_row(t, p, line);
		}
		p = nl + 1;
	}
	WT_TRUE(header, "the CSV has no header line");
}

static const char *meta(const struct trace *t, const char *key)
{
	for (int i = 0; i < t->nmeta; i++)
		if (strcmp(t->key[i], key) == 0)
			return t->val[i];
	fail_msg("the CSV has no \"# %s=\" line", key);
	return NULL;
}

static long long meta_num(const struct trace *t, const char *key)
{
	return parse_i64(meta(t, key), 0, key);
}

static void free_trace(struct trace *t)
{
	free(t->csv);
	free(t->json);
	free(t->rows);
	memset(t, 0, sizeof *t);
}

/* Read base.json and base.csv (which must exist, base.raw must not). */
static void load_trace(struct trace *t, const char *base)
{
	char path[256];
	memset(t, 0, sizeof *t);
	snprintf(path, sizeof path, "%s.raw", base);
	WT_TRUE(!exists(path), "%s is still there", path);
	snprintf(path, sizeof path, "%s.json", base);
	t->json = slurp(path, &t->json_len);
	WT_TRUE(t->json != NULL, "cannot read %s: %s", path, strerror(errno));
	const char *start = "{\"displayTimeUnit\"";
	WT_TRUE(strncmp(t->json, start, strlen(start)) == 0, "%s starts with \"%.40s\"", path,
		t->json);
	size_t n = t->json_len;
	while (n > 0 && (t->json[n - 1] == '\n' || t->json[n - 1] == ' '))
		n--;
	WT_TRUE(n >= 2 && t->json[n - 2] == ']' && t->json[n - 1] == '}',
		"%s does not end with ]}: ...\"%s\"", path,
		t->json + (t->json_len > 40 ? t->json_len - 40 : 0));
	snprintf(path, sizeof path, "%s.csv", base);
	t->csv = slurp(path, NULL);
	WT_TRUE(t->csv != NULL, "cannot read %s: %s", path, strerror(errno));
	parse_csv(t);
}

/* ---- what holds of every trace ------------------------------------------ */

struct ult_state {
	uint64_t id;
	int running_on;  /* worker, or -1 */
	int last_worker; /* -1: never ran */
	int runs, exited, created, awaiting_run;
	uint64_t create_t, first_run_t;
};

struct ults {
	struct ult_state *v;
	size_t cap, n;
};

static struct ult_state *ult_get(struct ults *m, uint64_t id)
{
	if (!m->v) {
		m->cap = 1u << 16;
		m->v = calloc(m->cap, sizeof *m->v);
		assert_non_null(m->v);
	}
	size_t j = (size_t)(id * 0x9e3779b97f4a7c15ull >> 40) & (m->cap - 1);
	while (m->v[j].id && m->v[j].id != id)
		j = (j + 1) & (m->cap - 1);
	if (!m->v[j].id) {
		WT_CMP(m->n, <, m->cap / 2);
		m->v[j].id = id;
		m->v[j].running_on = -1;
		m->v[j].last_worker = -1;
		m->n++;
	}
	return &m->v[j];
}

struct expect {
	int workers;
	int complete;
	long long pid;
	weft_t main_id;
};

#define MAX_WORKERS 64

/* The next row after i on worker w, or NULL. */
static const struct row *next_on(const struct trace *t, size_t i, int w)
{
	for (size_t k = i + 1; k < t->n; k++)
		if (t->rows[k].worker == w)
			return &t->rows[k];
	return NULL;
}

/* The sched the runtime resolves from the environment. */
static const char *sched_name(void)
{
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	return c.sched == WEFT_SCHED_SHARE ? "share" : "steal";
}

#define ROW_FAIL(r, fmt, ...)                                                                    \
	fail_msg("CSV line %d (%" PRIu64 ",%d,%s,%" PRIu64 ",%s,%" PRId64 ",%" PRId64            \
		 ",%s): " fmt,                                                                   \
		 (r)->line, (r)->t, (r)->worker, (r)->ev, (r)->ult, (r)->name, (r)->a1, (r)->a2, \
		 (r)->detail, ##__VA_ARGS__)
#define ROW_CHECK(r, cond, fmt, ...)                                            \
	do {                                                                    \
		if (!(cond))                                                    \
			ROW_FAIL(r, "%s is false: " fmt, #cond, ##__VA_ARGS__); \
	} while (0)

static void check_metadata(const struct trace *t, const struct expect *x, const char *sched)
{
	WT_TRUE(strlen(meta(t, "version")) > 0, "empty version");
	WT_EQ_STR(meta(t, "program"), program_invocation_short_name);
	WT_EQ(meta_num(t, "pid"), x->pid);
	WT_EQ(meta_num(t, "workers"), x->workers);
	WT_EQ_STR(meta(t, "sched"), sched);
	const char *clock = meta(t, "clock");
	WT_TRUE(strcmp(clock, "tsc") == 0 || strcmp(clock, "monotonic") == 0, "clock=%s", clock);
	WT_EQ(meta_num(t, "dropped"), 0);
	WT_EQ(meta_num(t, "complete"), x->complete);
	WT_CMP(meta_num(t, "duration_ns"), >, 0);
	const char *c = x->complete ? "\"complete\":true" : "\"complete\":false";
	WT_TRUE(strstr(t->json, c) != NULL, "the JSON's otherData lacks %s", c);
}

static void check_trace(const struct trace *t, const struct expect *x)
{
	int nw = x->workers;
	WT_CMP(nw, <=, MAX_WORKERS);
	check_metadata(t, x, sched_name());
	WT_CMP(t->n, >, 0);

	struct ults us = {0};
	uint64_t cur[MAX_WORKERS] = {0}, last_stopped[MAX_WORKERS] = {0};
	int asleep[MAX_WORKERS] = {0}, ends[MAX_WORKERS + 1] = {0};
	size_t first_end = t->n;
	uint64_t max_t = 0;
	int main_ran = 0;

	for (size_t i = 0; i < t->n; i++) {
		const struct row *r = &t->rows[i];
		const struct row *prev = i ? &t->rows[i - 1] : NULL;
		const struct row *next = i + 1 < t->n ? &t->rows[i + 1] : NULL;
		int w = r->worker;
		ROW_CHECK(r, IN(r->ev, events), "unknown event");
		ROW_CHECK(r, w >= -1 && w < nw, "no such worker");
		ROW_CHECK(r, !prev || prev->t <= r->t, "time goes back (previous row: line %d)",
			  prev ? prev->line : 0);
		ROW_CHECK(r, !is(r, "dropped"), "records were dropped");
		if (i >= first_end) {
			ROW_CHECK(r, is(r, "end"), "a row after the first end row");
		}
		if (r->t > max_t)
			max_t = r->t;
		if (is(r, "stop"))
			ROW_CHECK(r, IN(r->detail, stop_details), "unknown stop detail");
		else if (is(r, "lock"))
			ROW_CHECK(r,
				  strcmp(r->detail, "mutex") == 0 ||
					  strcmp(r->detail, "rwlock") == 0,
				  "bad lock detail");
		else
			ROW_CHECK(r, r->detail[0] == '\0', "detail on a row that has none");
		if (w < 0) {
			ROW_CHECK(r,
				  is(r, "name") || is(r, "create") || is(r, "unpark") ||
					  is(r, "lock") || is(r, "end"),
				  "an event a thread that is not a worker cannot have");
		}

		if (is(r, "end")) {
			if (first_end == t->n)
				first_end = i;
			ROW_CHECK(r, ends[w + 1] == 0, "a second end row for this worker");
			ends[w + 1] = 1;
			continue;
		}
		if (is(r, "name")) {
			ROW_CHECK(r, r->ult != 0 && r->name[0], "a name row without ULT or name");
			continue;
		}
		if (is(r, "create")) {
			struct ult_state *u = ult_get(&us, r->ult);
			ROW_CHECK(r, r->ult != 0, "create of ULT 0");
			ROW_CHECK(r, !u->created && u->runs == 0, "created twice, or after it ran");
			ROW_CHECK(r, r->a2 >= -1 && r->a2 < nw, "bound to no such worker");
			if (w >= 0)
				ROW_CHECK(r, r->a1 == (int64_t)cur[w] && cur[w] != 0,
					  "the creator is not what runs on the worker (%" PRIu64
					  ")",
					  cur[w]);
			else
				ROW_CHECK(r, r->a1 == 0, "a foreign creator with a ULT id");
			u->created = 1;
			u->create_t = r->t;
			continue;
		}
		if (is(r, "lock")) {
			ROW_CHECK(r, r->a1 != 0 && r->a2 >= 0, "bad lock address or wait");
			if (w >= 0)
				ROW_CHECK(r, r->ult == cur[w] && r->ult != 0,
					  "the locker is not what runs on the worker (%" PRIu64 ")",
					  cur[w]);
			else
				ROW_CHECK(r, r->ult == 0, "a foreign locker with a ULT id");
			continue;
		}
		if (is(r, "unpark")) {
			struct ult_state *u = ult_get(&us, r->ult);
			ROW_CHECK(r, u->runs > 0 && !u->exited,
				  "unpark of a ULT that never ran or exited");
			if (u->running_on >= 0) {
				/* Only a tie in time may put the waker's row first:
				 * the ULT's stop must come next, at the same time. */
				const struct row *s = NULL;
				for (size_t k = i + 1; k < t->n && !s; k++)
					if (t->rows[k].ult == r->ult &&
					    (is(&t->rows[k], "stop") || is(&t->rows[k], "run")))
						s = &t->rows[k];
				ROW_CHECK(r, s && is(s, "stop") && s->t == r->t,
					  "unpark of a ULT running on worker %d", u->running_on);
			}
			if (w >= 0)
				ROW_CHECK(r,
					  r->a1 == (int64_t)cur[w] ||
						  r->a1 == (int64_t)last_stopped[w],
					  "the waker is neither what runs on the worker (%" PRIu64
					  ") nor what just left it (%" PRIu64 ")",
					  cur[w], last_stopped[w]);
			else
				ROW_CHECK(r, r->a1 == 0, "a foreign waker with a ULT id");
			u->awaiting_run = 1;
			continue;
		}
		/* The rest are per-worker events. */
		if (is(r, "run")) {
			struct ult_state *u = ult_get(&us, r->ult);
			ROW_CHECK(r, r->ult != 0, "run of ULT 0");
			ROW_CHECK(r, cur[w] == 0, "%" PRIu64 " still runs on this worker", cur[w]);
			ROW_CHECK(r, u->running_on < 0, "it runs on worker %d already",
				  u->running_on);
			ROW_CHECK(r, !u->exited, "it ran after it exited");
			ROW_CHECK(r, r->a1 == u->last_worker,
				  "arg1 should be %d, where it ran last", u->last_worker);
			int migrated = r->a1 >= 0 && r->a1 != w;
			int has_migrate_row = prev && is(prev, "migrate") && prev->ult == r->ult &&
					      prev->worker == w && prev->t == r->t;
			ROW_CHECK(r, migrated == has_migrate_row,
				  "a migrate row must come right before exactly the runs that "
				  "change workers");
			if (has_migrate_row)
				ROW_CHECK(prev, prev->a1 == r->a1 && prev->a2 == w,
					  "migrate from/to do not match the run");
			if (r->ult == x->main_id) {
				if (!main_ran)
					ROW_CHECK(r, w == 0 && r->a1 == -1,
						  "main's first run is not on worker 0");
				main_ran = 1;
			} else {
				ROW_CHECK(r, u->created, "run of a ULT with no create row");
			}
			ROW_CHECK(r, main_ran, "a run before main's first");
			if (u->runs++ == 0)
				u->first_run_t = r->t;
			u->running_on = w;
			u->last_worker = w;
			u->awaiting_run = 0;
			cur[w] = r->ult;
		} else if (is(r, "stop")) {
			struct ult_state *u = ult_get(&us, r->ult);
			ROW_CHECK(r, r->ult != 0 && cur[w] == r->ult,
				  "the stop does not name the running ULT (%" PRIu64 ")", cur[w]);
			ROW_CHECK(r, u->running_on == w, "it does not run here");
			ROW_CHECK(
				r,
				next && next->worker == w && next->t == r->t &&
					(is(next, "run") || is(next, "idle") ||
					 is(next, "migrate")),
				"a stop must be followed at once by the worker's next run or idle");
			if (strcmp(r->detail, "yield") == 0 || strcmp(r->detail, "exit") == 0 ||
			    strcmp(r->detail, "park") == 0 || strcmp(r->detail, "sleep") == 0)
				ROW_CHECK(r, r->a1 == 0, "this stop waits on no object");
			if (strcmp(r->detail, "exit") == 0)
				u->exited = 1;
			u->running_on = -1;
			cur[w] = 0;
			last_stopped[w] = r->ult;
		} else if (is(r, "idle")) {
			ROW_CHECK(r,
				  cur[w] == 0 && prev && is(prev, "stop") && prev->worker == w &&
					  prev->t == r->t,
				  "idle must follow the stop of the ULT that left the worker");
		} else if (is(r, "migrate")) {
			ROW_CHECK(r,
				  next && is(next, "run") && next->ult == r->ult &&
					  next->worker == w,
				  "a migrate row not followed by the run");
			ROW_CHECK(r, r->a1 >= 0 && r->a1 < nw && r->a1 != w && r->a2 == w,
				  "bad migrate from/to");
		} else if (is(r, "sleep")) {
			ROW_CHECK(r, cur[w] == 0 && !asleep[w], "sleep while running or asleep");
			asleep[w] = 1;
		} else if (is(r, "wake")) {
			ROW_CHECK(r, cur[w] == 0 && asleep[w], "wake without sleep");
			asleep[w] = 0;
		} else if (is(r, "steal")) {
			ROW_CHECK(r, cur[w] == 0, "a steal while a ULT runs on the worker");
			ROW_CHECK(r, r->a1 >= 0 && r->a1 < nw && r->a1 != w, "bad victim");
			const struct row *n = next_on(t, i, w);
			if (n && is(n, "migrate"))
				n = next_on(t, (size_t)(n - t->rows), w);
			ROW_CHECK(r, n && is(n, "run") && n->ult == r->ult,
				  "the stolen ULT is not what the worker runs next");
		}
	}

	WT_TRUE(main_ran, "main (%" PRIu64 ") never ran", x->main_id);
	for (int w = -1; w < nw; w++)
		WT_TRUE(ends[w + 1], "no end row for worker %d", w);
	WT_EQ(t->n - first_end, (size_t)nw + 1);
	WT_EQU(t->rows[t->n - 1].t, max_t);
	for (size_t j = 0; j < us.cap; j++) {
		const struct ult_state *u = &us.v[j];
		if (!u->id || u->id == x->main_id)
			continue;
		WT_TRUE(u->created, "ULT %" PRIu64 " has no create row", u->id);
		if (u->runs)
			WT_CMPU(u->create_t, <=, u->first_run_t);
		if (x->complete) {
			WT_TRUE(u->runs > 0, "ULT %" PRIu64 " never ran", u->id);
			WT_TRUE(u->exited, "ULT %" PRIu64 " has no stop with detail exit", u->id);
		}
		if (x->complete)
			WT_TRUE(!u->awaiting_run, "ULT %" PRIu64 " was unparked and never ran",
				u->id);
	}
	if (x->complete) {
		WT_EQU(cur[0], x->main_id);
		for (int w = 0; w < nw; w++) {
			if (w > 0)
				WT_EQU(cur[w], 0);
			WT_TRUE(!asleep[w], "worker %d ends asleep", w);
		}
	}
	free(us.v);
}

/* ---- queries ------------------------------------------------------------- */

/* Rows with event ev (NULL: any) of ULT u (0: any) and detail d (NULL:
 * any), on worker w (-2: any). */
static int count(const struct trace *t, const char *ev, uint64_t u, const char *d, int w)
{
	int n = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct row *r = &t->rows[i];
		n += (!ev || is(r, ev)) && (!u || r->ult == u) &&
		     (!d || strcmp(r->detail, d) == 0) && (w == -2 || r->worker == w);
	}
	return n;
}

static const struct row *find(const struct trace *t, const char *ev, uint64_t u, const char *d)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct row *r = &t->rows[i];
		if (is(r, ev) && (!u || r->ult == u) && (!d || strcmp(r->detail, d) == 0))
			return r;
	}
	fail_msg("no %s row for ULT %" PRIu64 " with detail %s", ev, u, d ? d : "(any)");
	return NULL;
}

/* ---- a traced session ---------------------------------------------------- */

struct session {
	char dir[64];
	char base[128];
	struct expect x;
	struct trace t;
};

static void start_traced(struct session *s, int workers, int migrate)
{
	unsetenv("WEFT_TRACE");
	make_dir(s->dir);
	snprintf(s->base, sizeof s->base, "%s/t", s->dir);
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = workers;
	c.trace = s->base;
	if (migrate)
		c.migrate = migrate;
	WT_OK(weft_init(&c));
	WT_EQ(weft_num_workers(), workers);
	s->x = (struct expect){workers, 1, getpid(), weft_self()};
}

/* Shut down, read the trace back and check it. */
static void finish_traced(struct session *s)
{
	wt_fini();
	load_trace(&s->t, s->base);
	check_trace(&s->t, &s->x);
}

static void end_session(struct session *s)
{
	free_trace(&s->t);
	remove_dir(s->dir);
}

/* ---- workloads ------------------------------------------------------------ */

static void *return_arg(void *arg)
{
	return arg;
}

static void busy_wait_ns(uint64_t ns)
{
	uint64_t end = wt_now_ns() + ns;
	while (wt_now_ns() < end)
		;
}

static uint64_t parks_of(int worker)
{
	weft_worker_stats_t s;
	WT_OK(weft_worker_stats(worker, &s));
	return s.parks;
}

/* Wait until a ULT blocks on `worker` (parks goes past `before`). The ULT
 * must be the only one that can park there meanwhile - the caller included:
 * an unbound caller may run on any worker, so it must not park (sleep, wait
 * on a lock) while it waits. */
static void wait_parked(int worker, uint64_t before)
{
	WT_WAIT(parks_of(worker) > before, 10);
}

static weft_t spawn_named(const char *name, int worker, void *(*fn)(void *), void *arg)
{
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	if (name)
		WT_OK(weft_attr_setname(&a, name));
	WT_OK(weft_attr_setworker(&a, worker));
	weft_t t = wt_spawn(&a, fn, arg);
	WT_OK(weft_attr_destroy(&a));
	return t;
}

/* ---- files, metadata, the root ULT ----------------------------------------- */

static void test_trace_files_and_metadata(void **state)
{
	struct session s;
	start_traced(&s, 2, 0);
	char raw[160];
	snprintf(raw, sizeof raw, "%s.raw", s.base);
	WT_TRUE(exists(raw), "%s does not exist while tracing", raw);
	for (int i = 0; i < 4; i++)
		wt_join(wt_spawn(NULL, return_arg, NULL));
	finish_traced(&s);
	/* Exactly B.json and B.csv are left. */
	WT_EQ(files_in(s.dir), 2);
	/* The root ULT: named (on worker -1, before anything else runs) and
	 * running on worker 0 from the start. */
	const struct row *first_run = find(&s.t, "run", 0, NULL);
	WT_EQU(first_run->ult, s.x.main_id);
	WT_EQ(first_run->worker, 0);
	WT_EQ(first_run->a1, -1);
	WT_EQ_STR(first_run->name, "main");
	const struct row *name = find(&s.t, "name", s.x.main_id, NULL);
	WT_EQ_STR(name->name, "main");
	WT_EQ(name->worker, -1);
	WT_EQ(count(&s.t, "create", 0, NULL, -2), 4);
	WT_EQ(count(&s.t, "stop", 0, "exit", -2), 4);
	end_session(&s);
}

/* ---- ULT lifecycles and names ------------------------------------------------ */

static void *exit_explicitly(void *arg)
{
	weft_exit(arg);
}

static void *create_grandchild(void *arg)
{
	weft_t *child = arg;
	*child = spawn_named("grandchild", -1, return_arg, NULL);
	wt_join(*child);
	return NULL;
}

struct detached_done {
	atomic_int done;
};

static void *detached_body(void *arg)
{
	struct detached_done *d = arg;
	atomic_store(&d->done, 1);
	return NULL;
}

static void test_trace_ult_lifecycle_and_names(void **state)
{
	struct session s;
	start_traced(&s, 2, 0);
	static const char *const names[] = {
		"alpha", "12345678", /* exactly one 8-byte record, then an empty one */
		"abcdefghijklmnopqrstuvwxyz01234", /* 31: the longest */
		"with,comma",                      /* a CSV separator: replaced */
	};
	static const char *const shown[] = {"alpha", "12345678", "abcdefghijklmnopqrstuvwxyz01234",
					    "with_comma"};
	enum { NN = sizeof names / sizeof names[0] };
	weft_t named[NN];
	for (int i = 0; i < NN; i++)
		named[i] = spawn_named(names[i], -1, return_arg, NULL);
	weft_t unnamed = wt_spawn(NULL, return_arg, NULL);
	weft_t bound = spawn_named("bound", 1, return_arg, NULL);
	weft_t exiter = spawn_named("exiter", -1, exit_explicitly, (void *)7);
	weft_t grandchild = WEFT_NULL;
	weft_t parent = spawn_named("parent", 1, create_grandchild, &grandchild);
	struct detached_done dd = {0};
	weft_attr_t a;
	WT_OK(weft_attr_init(&a));
	WT_OK(weft_attr_setdetached(&a, 1));
	WT_OK(weft_attr_setname(&a, "detached"));
	weft_t detached = wt_spawn(&a, detached_body, &dd);
	WT_OK(weft_attr_destroy(&a));
	for (int i = 0; i < NN; i++)
		wt_join(named[i]);
	wt_join(unnamed);
	wt_join(bound);
	WT_EQ_PTR(wt_join(exiter), (void *)7);
	wt_join(parent);
	WT_WAIT(atomic_load(&dd.done), 10);
	finish_traced(&s); /* wt_fini waits for the detached one to be gone */

	struct trace *t = &s.t;
	for (int i = 0; i < NN; i++) {
		const struct row *c = find(t, "create", named[i], NULL);
		WT_EQ_STR(c->name, shown[i]);
		WT_EQU(c->a1, s.x.main_id);
		WT_EQ(c->a2, -1);
		WT_EQ(count(t, "name", named[i], NULL, -2), 1);
		WT_EQ_STR(find(t, "name", named[i], NULL)->name, shown[i]);
		WT_EQ_STR(find(t, "run", named[i], NULL)->name, shown[i]);
		WT_EQ_STR(find(t, "stop", named[i], "exit")->name, shown[i]);
	}
	WT_EQ(count(t, "name", unnamed, NULL, -2), 0);
	WT_EQ_STR(find(t, "run", unnamed, NULL)->name, "");
	WT_EQ(find(t, "create", bound, NULL)->a2, 1);
	WT_EQ(count(t, "run", bound, NULL, 0), 0); /* bound: runs on worker 1 only */
	WT_CMP(count(t, "run", bound, NULL, 1), >=, 1);
	WT_EQ(count(t, "stop", exiter, "exit", -2), 1);
	WT_CMPU(grandchild, !=, WEFT_NULL);
	WT_EQU(find(t, "create", grandchild, NULL)->a1, parent);
	WT_EQ(find(t, "create", grandchild, NULL)->worker, 1); /* the parent's worker */
	WT_EQ(count(t, "stop", detached, "exit", -2), 1);
	/* Each of them: one create, at least one run, exactly one exit. */
	weft_t all[] = {unnamed, bound, exiter, parent, grandchild, detached};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
		WT_EQ(count(t, "create", all[i], NULL, -2), 1);
		WT_CMP(count(t, "run", all[i], NULL, -2), >=, 1);
		WT_EQ(count(t, "stop", all[i], "exit", -2), 1);
	}
	end_session(&s);
}

/* A foreign thread creates a ULT and unparks it: its rows are on worker -1
 * with no creator or waker. */
struct foreign_ctx {
	weft_t t;
	atomic_int parked_seen;
};

static void *park_once_ult(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)weft_park();
}

static void *foreign_create(void *arg)
{
	struct foreign_ctx *f = arg;
	weft_attr_t a;
	weft_attr_init(&a);
	weft_attr_setworker(&a, 1);
	int e = weft_create(&f->t, &a, park_once_ult, NULL);
	return (void *)(intptr_t)e;
}

static void *foreign_unpark(void *arg)
{
	struct foreign_ctx *f = arg;
	return (void *)(intptr_t)weft_unpark(f->t);
}

static void test_trace_foreign_thread_rows(void **state)
{
	struct session s;
	start_traced(&s, 2, 0);
	struct foreign_ctx f = {0};
	struct wt_pthread p;
	uint64_t before = parks_of(1);
	wt_pthread_start(&p, foreign_create, &f);
	WT_OK((intptr_t)wt_pthread_join(&p));
	wait_parked(1, before);
	wt_pthread_start(&p, foreign_unpark, &f);
	WT_OK((intptr_t)wt_pthread_join(&p));
	WT_OK((intptr_t)wt_join(f.t));
	finish_traced(&s);
	const struct row *c = find(&s.t, "create", f.t, NULL);
	WT_EQ(c->worker, -1);
	WT_EQ(c->a1, 0);
	WT_EQ(c->a2, 1);
	WT_EQ(count(&s.t, "stop", f.t, "park", 1), 1);
	/* The unpark found the ULT parked (then the row is on worker -1, no
	 * waker) or came before the park was committed (then there is none). */
	WT_CMP(count(&s.t, "unpark", f.t, NULL, -2), <=, 1);
	if (count(&s.t, "unpark", f.t, NULL, -2)) {
		const struct row *u = find(&s.t, "unpark", f.t, NULL);
		WT_EQ(u->worker, -1);
		WT_EQ(u->a1, 0);
	}
	end_session(&s);
}

/* ---- stop details -------------------------------------------------------------- */

struct yielders {
	atomic_int go;
	int n;
};

static void *yield_n(void *arg)
{
	struct yielders *y = arg;
	while (!atomic_load(&y->go))
		weft_yield();
	for (int i = 0; i < y->n; i++)
		weft_yield();
	return NULL;
}

static void test_trace_stop_yield(void **state)
{
	struct session s;
	start_traced(&s, 2, 0);
	struct yielders y = {0, 20};
	/* Both on worker 1: each yield finds the other ready. */
	weft_t a = spawn_named("yield-a", 1, yield_n, &y);
	weft_t b = spawn_named("yield-b", 1, yield_n, &y);
	atomic_store(&y.go, 1);
	wt_join(a);
	wt_join(b);
	finish_traced(&s);
	WT_CMP(count(&s.t, "stop", a, "yield", 1), >=, 10);
	WT_CMP(count(&s.t, "stop", b, "yield", 1), >=, 10);
	WT_EQ(count(&s.t, "stop", a, NULL, 0), 0);
	end_session(&s);
}

static void test_trace_stop_join(void **state)
{
	struct session s;
	start_traced(&s, 2, 0);
	/* Bound to main's own worker, the target cannot run before main
	 * blocks in the join. */
	int me = weft_worker_id();
	weft_t t = spawn_named("join-target", me, return_arg, NULL);
	wt_join(t);
	finish_traced(&s);
	const struct row *stop = find(&s.t, "stop", s.x.main_id, "join");
	WT_EQ(stop->worker, me);
	WT_EQU(stop->a1, t); /* the joined ULT's id */
	/* The target ran next on that worker and, exiting, woke main. */
	const struct row *u = find(&s.t, "unpark", s.x.main_id, NULL);
	WT_EQU(u->a1, t);
	end_session(&s);
}

struct parker {
	atomic_int done;
};

static void *park_until_done(void *arg)
{
	struct parker *p = arg;
	while (!atomic_load(&p->done))
		weft_park();
	return NULL;
}

static void test_trace_stop_park_and_unpark(void **state)
{
	struct session s;
	start_traced(&s, 2, 0);
	struct parker p = {0};
	uint64_t before = parks_of(1);
	weft_t t = spawn_named("parker", 1, park_until_done, &p);
	/* Several rounds, with a pause before each unpark: an unpark that
	 * comes before the park is committed leaves a token and no unpark
	 * row, but not every time. The pause is not a sleep, which would
	 * park main (wait_parked). */
	for (int i = 0; i < 5; i++) {
		wait_parked(1, before);
		before = parks_of(1);
		busy_wait_ns(2000000);
		WT_OK(weft_unpark(t));
	}
	wait_parked(1, before);
	atomic_store(&p.done, 1);
	WT_OK(weft_unpark(t));
	wt_join(t);
	finish_traced(&s);
	WT_CMP(count(&s.t, "stop", t, "park", 1), >=, 6);
	int unparks = count(&s.t, "unpark", t, NULL, -2);
	WT_CMP(unparks, >=, 1);
	for (size_t i = 0; i < s.t.n; i++) {
		const struct row *r = &s.t.rows[i];
		if (is(r, "unpark") && r->ult == t)
			WT_EQU(r->a1, s.x.main_id); /* the waker */
	}
	end_session(&s);
}

struct handoff_pair {
	atomic_int go;
	weft_t a, b;
	uint64_t parks_before;
};

static void *handoff_b(void *arg)
{
	struct handoff_pair *h = arg;
	while (!atomic_load(&h->go))
		weft_park();
	weft_unpark(h->a);
	return NULL;
}

static void *handoff_a(void *arg)
{
	struct handoff_pair *h = arg;
	h->a = weft_self(); /* before b can read it; the creator's copy may come late */
	/* Same worker as b: when a runs again after b parked, the park is
	 * committed (by a's own after-switch step). */
	wait_parked(1, h->parks_before);
	atomic_store(&h->go, 1);
	WT_OK(weft_park_handoff(h->b));
	return NULL;
}

static void test_trace_stop_handoff(void **state)
{
	struct session s;
	start_traced(&s, 2, 0);
	struct handoff_pair h = {0};
	h.parks_before = parks_of(1);
	h.b = spawn_named("handoff-b", 1, handoff_b, &h);
	weft_t a = spawn_named("handoff-a", 1, handoff_a, &h);
	wt_join(a);
	WT_EQU(h.a, a);
	wt_join(h.b);
	finish_traced(&s);
	const struct row *stop = find(&s.t, "stop", h.a, "handoff");
	WT_EQ(stop->worker, 1);
	WT_EQ(stop->a1, 0); /* the target may be gone by then: not named */
	WT_CMP(count(&s.t, "stop", h.b, "park", 1), >=, 1);
	/* a made b runnable, and b a. */
	WT_EQU(find(&s.t, "unpark", h.b, NULL)->a1, h.a);
	WT_EQU(find(&s.t, "unpark", h.a, NULL)->a1, h.b);
	end_session(&s);
}

/* Sleep on worker 1 (alone there) until one sleep really blocked: a sleep
 * whose deadline passed before it could wait (a preempted worker) does not
 * stop the ULT. */
static void *sleep_until_blocked(void *arg)
{
	int nano = arg != NULL;
	for (int i = 0; i < 100; i++) {
		uint64_t before = parks_of(1);
		if (nano) {
			struct timespec ts = {0, 2000000};
			WT_OK(weft_nanosleep(&ts, NULL));
		} else {
			WT_OK(weft_sleep_ns(2000000));
		}
		if (parks_of(1) > before)
			return NULL;
	}
	fail_msg("100 sleeps and none blocked");
	return NULL;
}

static void test_trace_stop_sleep(void **state)
{
	struct session s;
	start_traced(&s, 2, 0);
	weft_t a = spawn_named("sleeper", 1, sleep_until_blocked, NULL);
	wt_join(a);
	weft_t b = spawn_named("nanosleeper", 1, sleep_until_blocked, (void *)1);
	wt_join(b);
	finish_traced(&s);
	WT_CMP(count(&s.t, "stop", a, "sleep", 1), >=, 1);
	WT_CMP(count(&s.t, "stop", b, "sleep", 1), >=, 1);
	end_session(&s);
}

struct condwait {
	weft_mutex_t m;
	weft_cond_t c;
	int pred;
};

static void *cond_waiter(void *arg)
{
	struct condwait *cw = arg;
	WT_OK(weft_mutex_lock(&cw->m));
	while (!cw->pred)
		WT_OK(weft_cond_wait(&cw->c, &cw->m));
	WT_OK(weft_mutex_unlock(&cw->m));
	return NULL;
}

static void test_trace_stop_cond(void **state)
{
	struct session s;
	start_traced(&s, 2, 0);
	struct condwait cw = {0};
	WT_OK(weft_mutex_init(&cw.m, NULL));
	WT_OK(weft_cond_init(&cw.c, NULL));
	uint64_t before = parks_of(1);
	weft_t t = spawn_named("cond-waiter", 1, cond_waiter, &cw);
	wait_parked(1, before);
	WT_OK(weft_mutex_lock(&cw.m));
	cw.pred = 1;
	WT_OK(weft_cond_signal(&cw.c));
	WT_OK(weft_mutex_unlock(&cw.m));
	wt_join(t);
	WT_OK(weft_cond_destroy(&cw.c));
	WT_OK(weft_mutex_destroy(&cw.m));
	finish_traced(&s);
	const struct row *stop = find(&s.t, "stop", t, "cond");
	WT_EQ(stop->a1, (int64_t)(intptr_t)&cw.c);
	end_session(&s);
}

struct contention {
	weft_mutex_t m;
	atomic_int held;
	atomic_int go;
	uint64_t parks_before; /* worker 1's, before the waiter starts */
	int rounds;
};

/* Holds m, sleeping, until the waiter on worker 1 has blocked on it. */
static void *mutex_holder(void *arg)
{
	struct contention *c = arg;
	WT_OK(weft_mutex_lock(&c->m));
	atomic_store(&c->held, 1);
	while (parks_of(1) <= c->parks_before)
		weft_sleep_ns(1000000);
	WT_OK(weft_mutex_unlock(&c->m));
	return NULL;
}

static void *mutex_waiter(void *arg)
{
	struct contention *c = arg;
	while (!atomic_load(&c->held))
		weft_yield(); /* not a sleep: the holder counts worker 1's parks */
	WT_OK(weft_mutex_lock(&c->m));
	WT_OK(weft_mutex_unlock(&c->m));
	return NULL;
}

/* More contention, from both workers, holding it across a short sleep. */
static void *mutex_hammer(void *arg)
{
	struct contention *c = arg;
	while (!atomic_load(&c->go))
		weft_yield();
	for (int i = 0; i < c->rounds; i++) {
		WT_OK(weft_mutex_lock(&c->m));
		weft_sleep_ns(500000);
		WT_OK(weft_mutex_unlock(&c->m));
	}
	return NULL;
}

static void test_trace_mutex_contention(void **state)
{
	struct session s;
	start_traced(&s, 2, 0);
	struct contention c = {.rounds = 3};
	WT_OK(weft_mutex_init(&c.m, NULL));
	c.parks_before = parks_of(1);
	weft_t holder = spawn_named("holder", 0, mutex_holder, &c);
	weft_t waiter = spawn_named("waiter", 1, mutex_waiter, &c);
	wt_join(holder);
	wt_join(waiter);
	weft_t h[4];
	for (int i = 0; i < 4; i++)
		h[i] = spawn_named("hammer", i % 2, mutex_hammer, &c);
	atomic_store(&c.go, 1);
	for (int i = 0; i < 4; i++)
		wt_join(h[i]);
	WT_OK(weft_mutex_destroy(&c.m));
	finish_traced(&s);

	int64_t addr = (int64_t)(intptr_t)&c.m;
	const struct row *stop = find(&s.t, "stop", waiter, "mutex");
	WT_EQ(stop->a1, addr);
	WT_EQ(stop->worker, 1);
	const struct row *lock = find(&s.t, "lock", waiter, "mutex");
	WT_EQ(lock->a1, addr);
	WT_CMP(lock->a2, >, 0);
	WT_EQ(lock->worker, 1);
	/* Every mutex row names this mutex; every lock row waited. */
	for (size_t i = 0; i < s.t.n; i++) {
		const struct row *r = &s.t.rows[i];
		if ((is(r, "stop") || is(r, "lock")) && strcmp(r->detail, "mutex") == 0)
			WT_EQ(r->a1, addr);
		if (is(r, "lock"))
			WT_CMP(r->a2, >, 0);
	}
	WT_CMP(count(&s.t, "lock", 0, "mutex", -2), >=, 1);
	WT_EQ(count(&s.t, "lock", 0, "rwlock", -2), 0);
	end_session(&s);
}

static void *rw_reader(void *arg)
{
	weft_rwlock_t *l = arg;
	WT_OK(weft_rwlock_rdlock(l));
	WT_OK(weft_rwlock_unlock(l));
	return NULL;
}

static void test_trace_rwlock_contention(void **state)
{
	struct session s;
	start_traced(&s, 2, 0);
	weft_rwlock_t l;
	WT_OK(weft_rwlock_init(&l, NULL));
	WT_OK(weft_rwlock_wrlock(&l));
	uint64_t before = parks_of(1);
	weft_t r = spawn_named("reader", 1, rw_reader, &l);
	wait_parked(1, before);
	weft_sleep_ns(1000000);
	WT_OK(weft_rwlock_unlock(&l));
	wt_join(r);
	WT_OK(weft_rwlock_destroy(&l));
	finish_traced(&s);
	const struct row *stop = find(&s.t, "stop", r, "rwlock");
	/* It waits on a word inside the lock. */
	WT_CMPU(stop->a1, >=, (uintptr_t)&l);
	WT_CMPU(stop->a1, <, (uintptr_t)(&l + 1));
	const struct row *lock = find(&s.t, "lock", r, "rwlock");
	WT_EQ(lock->a1, (int64_t)(intptr_t)&l);
	WT_CMP(lock->a2, >=, 1000000); /* main held it 1 ms after it blocked */
	WT_EQ(lock->worker, 1);
	WT_EQ(count(&s.t, "lock", 0, "mutex", -2), 0);
	end_session(&s);
}

/* ---- migration ---------------------------------------------------------------- */

static void *yield_and_sleep(void *arg)
{
	(void)arg;
	for (int i = 0; i < 10; i++) {
		weft_yield();
		weft_sleep_ns(200000);
	}
	return NULL;
}

static void test_trace_no_migration_when_staying(void **state)
{
	struct session s;
	start_traced(&s, 2, -1); /* migrate = -1: a ULT stays on its first worker */
	weft_t t[8];
	for (int i = 0; i < 8; i++)
		t[i] = wt_spawn(NULL, yield_and_sleep, NULL);
	for (int i = 0; i < 8; i++)
		wt_join(t[i]);
	finish_traced(&s);
	WT_EQ(count(&s.t, "migrate", 0, NULL, -2), 0);
	for (size_t i = 0; i < s.t.n; i++) {
		const struct row *r = &s.t.rows[i];
		if (is(r, "run"))
			WT_TRUE(r->a1 == -1 || r->a1 == r->worker, "line %d: ran on %d, now on %d",
				r->line, (int)r->a1, r->worker);
	}
	end_session(&s);
}

/* ---- the counts against weft_worker_stats ------------------------------------- */

static void *spin_100us(void *arg)
{
	uint64_t end = wt_now_ns() + 100000;
	while (wt_now_ns() < end)
		;
	return arg;
}

static void *create_five(void *arg)
{
	weft_t t[5];
	for (int i = 0; i < 5; i++)
		t[i] = wt_spawn(NULL, return_arg, NULL);
	for (int i = 0; i < 5; i++)
		wt_join(t[i]);
	return arg;
}

static void *foreign_create_join(void *arg)
{
	weft_t t;
	int e = weft_create(&t, NULL, return_arg, NULL);
	if (!e)
		e = weft_join(t, NULL);
	return (void *)(intptr_t)e;
}

/* Per worker, counted in the trace before row `end`. */
struct counts {
	long switches; /* run + idle rows, less exits and main's first run */
	long parks, steals, sleeps, created, exited, other;
};

static void count_rows(const struct trace *t, size_t end, int w, struct counts *c)
{
	memset(c, 0, sizeof *c);
	long runs_idles = 0;
	for (size_t i = 0; i < end; i++) {
		const struct row *r = &t->rows[i];
		if (r->worker != w)
			continue;
		runs_idles += is(r, "run") || is(r, "idle");
		c->steals += is(r, "steal");
		c->sleeps += is(r, "sleep");
		c->created += is(r, "create");
		if (is(r, "stop")) {
			c->exited += strcmp(r->detail, "exit") == 0;
			c->parks += IN(r->detail, park_details);
			c->other += strcmp(r->detail, "other") == 0;
		}
	}
	/* Every switch is a SWITCH record and so a run or idle row, but the
	 * root's first run on worker 0 (recorded as tracing starts) is no
	 * switch. */
	c->switches = runs_idles - (w == 0);
}

#define CHECK_BETWEEN(w, field, lo, mid, hi)                                                       \
	do {                                                                                       \
		if (!((long long)(lo) <= (long long)(mid) && (long long)(mid) <= (long long)(hi))) \
			fail_msg("worker %d: %s: the trace counts %lld, weft_worker_stats %lld "   \
				 "before the marker and %lld after",                               \
				 w, #field, (long long)(mid), (long long)(lo), (long long)(hi));   \
	} while (0)

static void test_trace_counts_match_worker_stats(void **state)
{
	struct session s;
	start_traced(&s, 2, 0);
	/* A mix: yields, parks, sleeps, mutex waits, creates from worker 1, a
	 * foreign creator, and bursts that idle workers may steal from. */
	struct yielders y = {0, 20};
	struct parker p = {0};
	struct contention c = {.rounds = 2};
	WT_OK(weft_mutex_init(&c.m, NULL));
	weft_t t[16];
	int n = 0;
	t[n++] = spawn_named("y1", 1, yield_n, &y);
	t[n++] = spawn_named("y2", 1, yield_n, &y);
	t[n++] = spawn_named("y3", -1, yield_n, &y);
	uint64_t before = parks_of(1);
	weft_t parker = spawn_named("parker", 1, park_until_done, &p);
	wait_parked(1, before);
	atomic_store(&p.done, 1);
	WT_OK(weft_unpark(parker));
	t[n++] = parker;
	for (int i = 0; i < 4; i++)
		t[n++] = spawn_named("hammer", i % 2 ? 1 : -1, mutex_hammer, &c);
	t[n++] = spawn_named("creator", 1, create_five, NULL);
	atomic_store(&y.go, 1);
	atomic_store(&c.go, 1);
	for (int round = 0; round < 4; round++) {
		weft_t b[16];
		for (int i = 0; i < 16; i++)
			b[i] = wt_spawn(NULL, spin_100us, NULL);
		for (int i = 0; i < 16; i++)
			wt_join(b[i]);
	}
	struct wt_pthread fp;
	wt_pthread_start(&fp, foreign_create_join, NULL);
	WT_OK((intptr_t)wt_pthread_join(&fp));
	for (int i = 0; i < n; i++)
		wt_join(t[i]);
	WT_OK(weft_mutex_destroy(&c.m));

	/* Let the workers settle (spin out, fall asleep) without switching
	 * here, then take the counters on both sides of a marker: the
	 * marker's create row splits the trace at that moment. */
	busy_wait_ns(30000000);
	int nw = weft_num_workers();
	weft_worker_stats_t s1[MAX_WORKERS], s2[MAX_WORKERS];
	for (int w = 0; w < nw; w++)
		WT_OK(weft_worker_stats(w, &s1[w]));
	weft_t marker = spawn_named("marker", weft_worker_id(), return_arg, NULL);
	for (int w = 0; w < nw; w++)
		WT_OK(weft_worker_stats(w, &s2[w]));
	wt_join(marker);
	finish_traced(&s);

	size_t end = 0;
	while (!(is(&s.t.rows[end], "create") && s.t.rows[end].ult == marker))
		end++;
	for (int w = 0; w < nw; w++) {
		struct counts k;
		count_rows(&s.t, end, w, &k);
		CHECK_BETWEEN(w, switches, s1[w].switches, k.switches, s2[w].switches);
		CHECK_BETWEEN(w, parks, s1[w].parks, k.parks, s2[w].parks);
		CHECK_BETWEEN(w, steals, s1[w].steals, k.steals, s2[w].steals);
		CHECK_BETWEEN(w, sleeps, s1[w].sleeps, k.sleeps, s2[w].sleeps);
		CHECK_BETWEEN(w, created, s1[w].created, k.created, s2[w].created);
		CHECK_BETWEEN(w, exited, s1[w].exited, k.exited, s2[w].exited);
		WT_EQ(k.other, 0);
	}
	/* The foreign thread's ULT: created on worker -1, counted nowhere. */
	WT_EQ(count(&s.t, "create", 0, NULL, -1), 1);
	end_session(&s);
}

/* ---- the path ------------------------------------------------------------------ */

static void traced_init_shutdown(const char *path)
{
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = 2;
	c.trace = path;
	WT_OK(weft_init(&c));
	wt_join(wt_spawn(NULL, return_arg, NULL));
	WT_OK(weft_shutdown());
}

static void check_files(const char *base, int complete)
{
	struct trace t;
	load_trace(&t, base);
	struct expect x = {2, complete, getpid(), 0};
	check_metadata(&t, &x, sched_name());
	free_trace(&t);
}

static void test_trace_path_pid_and_suffix(void **state)
{
	unsetenv("WEFT_TRACE");
	char dir[64], path[160], base[160];
	make_dir(dir);
	/* "%p" becomes the pid (each time), ".json" is dropped. */
	snprintf(path, sizeof path, "%s/t-%%p-%%p.json", dir);
	traced_init_shutdown(path);
	snprintf(base, sizeof base, "%s/t-%d-%d", dir, (int)getpid(), (int)getpid());
	check_files(base, 1);
	WT_EQ(files_in(dir), 2);
	/* ".csv" is dropped too; a second run in the same process works. */
	snprintf(path, sizeof path, "%s/u.csv", dir);
	traced_init_shutdown(path);
	snprintf(base, sizeof base, "%s/u", dir);
	check_files(base, 1);
	WT_EQ(files_in(dir), 4);
	/* Any other suffix stays; the same path again overwrites. */
	snprintf(path, sizeof path, "%s/v.trace", dir);
	traced_init_shutdown(path);
	traced_init_shutdown(path);
	check_files(path, 1);
	WT_EQ(files_in(dir), 6);
	remove_dir(dir);
}

/* WEFT_TRACE_FORMAT, and a path ending in .wft, choose the files written. */
static void test_trace_formats(void **state)
{
	unsetenv("WEFT_TRACE");
	char dir[64], path[160], file[200];
	make_dir(dir);
	/* A path ending in .wft: weft's own format only, self-describing. */
	snprintf(path, sizeof path, "%s/w.wft", dir);
	traced_init_shutdown(path);
	WT_EQ(files_in(dir), 1);
	size_t n;
	char *b = slurp(path, &n);
	WT_TRUE(b != NULL, "%s: %s", path, strerror(errno));
	WT_CMP(n, >, 16);
	WT_TRUE(memcmp(b, "WEFT-TRC", 8) == 0, "no file magic in %s", path);
	/* The meta chunk is last, as key=value lines. */
	char want[64];
	snprintf(want, sizeof want, "\npid=%d\nworkers=2\n", (int)getpid());
	WT_TRUE(memmem(b, n, want, strlen(want)) != NULL, "no %s in the meta chunk", want);
	WT_TRUE(n > 11 && memcmp(b + n - 11, "complete=1\n", 11) == 0,
		"the file does not end with the meta chunk");
	free(b);

	/* WEFT_TRACE_FORMAT picks, whatever the path: CSV alone ... */
	WT_OK(setenv("WEFT_TRACE_FORMAT", "csv", 1));
	snprintf(path, sizeof path, "%s/c", dir);
	traced_init_shutdown(path);
	WT_EQ(files_in(dir), 2);
	snprintf(file, sizeof file, "%s.csv", path);
	WT_TRUE(exists(file), "no %s", file);
	/* ... JSON and .wft ... */
	WT_OK(setenv("WEFT_TRACE_FORMAT", "wft,json", 1));
	snprintf(path, sizeof path, "%s/j.json", dir);
	traced_init_shutdown(path);
	WT_EQ(files_in(dir), 4);
	snprintf(file, sizeof file, "%s/j.wft", dir);
	WT_TRUE(exists(file), "no %s", file);
	snprintf(file, sizeof file, "%s/j.json", dir);
	WT_TRUE(exists(file), "no %s", file);
	/* ... and all three, the CSV's rows as the JSON/CSV default writes them. */
	WT_OK(setenv("WEFT_TRACE_FORMAT", "json,csv,wft", 1));
	snprintf(path, sizeof path, "%s/a", dir);
	traced_init_shutdown(path);
	WT_EQ(files_in(dir), 7);
	check_files(path, 1);
	/* A path ending in .pftrace or .perfetto-trace: Perfetto's format,
	 * written when the runtime stops (a Trace: packets, field 1). */
	unsetenv("WEFT_TRACE_FORMAT");
	snprintf(path, sizeof path, "%s/p.perfetto-trace", dir);
	traced_init_shutdown(path);
	WT_EQ(files_in(dir), 8);
	snprintf(file, sizeof file, "%s/p.pftrace", dir);
	b = slurp(file, &n);
	WT_TRUE(b != NULL, "%s: %s", file, strerror(errno));
	WT_CMP(n, >, 100);
	WT_EQ(b[0], 0x0a);
	free(b);

	/* A list naming anything else is EINVAL, from weft_config_init and
	 * weft_init alike; nothing is written. */
	const char *bad[] = {"perfetto", "json,", ",csv", "json,,csv", "JSON", "wft json"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		WT_OK(setenv("WEFT_TRACE_FORMAT", bad[i], 1));
		weft_config_t c;
		WT_ERR(weft_config_init(&c), EINVAL);
		WT_ERR(weft_init(NULL), EINVAL);
		WT_EQ(wt_running(), 0);
	}
	WT_EQ(files_in(dir), 8);
	/* Empty is the default. */
	WT_OK(setenv("WEFT_TRACE_FORMAT", "", 1));
	snprintf(path, sizeof path, "%s/d", dir);
	traced_init_shutdown(path);
	WT_EQ(files_in(dir), 10);
	check_files(path, 1);
	unsetenv("WEFT_TRACE_FORMAT");
	remove_dir(dir);
}

static void test_trace_unmakeable_path(void **state)
{
	unsetenv("WEFT_TRACE");
	char dir[64], path[160];
	make_dir(dir);
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = 2;
	snprintf(path, sizeof path, "%s/no/such/dir/t", dir);
	c.trace = path;
	WT_ERR(weft_init(&c), ENOENT);
	WT_EQ(wt_running(), 0);
	WT_EQU(weft_self(), WEFT_NULL);
	WT_ERR(weft_shutdown(), EINVAL);
	/* A regular file where a directory should be. */
	snprintf(path, sizeof path, "%s/file", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(path, sizeof path, "%s/file/t", dir);
	c.trace = path;
	WT_ERR(weft_init(&c), ENOTDIR);
	WT_EQ(wt_running(), 0);
	WT_EQ(files_in(dir), 1); /* nothing left behind */
	/* Without a trace it starts; with a good one too. */
	c.trace = "";
	WT_OK(weft_init(&c));
	WT_EQ(weft_num_workers(), 2);
	wt_join(wt_spawn(NULL, return_arg, NULL));
	WT_OK(weft_shutdown());
	WT_EQ(files_in(dir), 1);
	snprintf(path, sizeof path, "%s/ok", dir);
	traced_init_shutdown(path);
	check_files(path, 1);
	remove_dir(dir);
}

static void test_trace_env_var(void **state)
{
	char dir[64], path[160], base[160];
	make_dir(dir);
	snprintf(path, sizeof path, "%s/env-%%p", dir);
	WT_OK(setenv("WEFT_TRACE", path, 1));
	/* weft_init(NULL) reads it. */
	WT_OK(weft_init(NULL));
	weft_t main_id = weft_self();
	int nw = weft_num_workers();
	wt_join(wt_spawn(NULL, return_arg, NULL));
	WT_OK(weft_shutdown());
	snprintf(base, sizeof base, "%s/env-%d", dir, (int)getpid());
	struct trace t;
	load_trace(&t, base);
	struct expect x = {nw, 1, getpid(), main_id};
	check_trace(&t, &x);
	free_trace(&t);
	WT_EQ(files_in(dir), 2);
	/* weft_config_t.trace wins over it; "" turns tracing off. */
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	WT_EQ_STR(c.trace, path);
	c.workers = 2;
	c.trace = "";
	WT_OK(weft_init(&c));
	WT_OK(weft_shutdown());
	WT_EQ(files_in(dir), 2);
	snprintf(path, sizeof path, "%s/cfg", dir);
	traced_init_shutdown(path);
	check_files(path, 1);
	WT_EQ(files_in(dir), 4);
	unsetenv("WEFT_TRACE");
	remove_dir(dir);
}

/* ---- a trace finished by exit() ------------------------------------------------ */

struct exit_ctx {
	char base[160];
	weft_t main_id, parked;
	int workers;
};

/* In a child process: trace, leave a ULT parked, call exit(). */
static void exit_with_ult_parked(void *arg)
{
	struct exit_ctx *e = arg;
	weft_config_t c;
	WT_OK(weft_config_init(&c));
	c.workers = e->workers;
	c.trace = e->base;
	WT_OK(weft_init(&c));
	wt_join(wt_spawn(NULL, return_arg, NULL));
	uint64_t before = parks_of(1);
	struct parker p = {0};
	spawn_named("parked", 1, park_until_done, &p);
	wait_parked(1, before);
	/* The park is counted before its switch is traced: a ULT that runs on
	 * worker 1 after it proves the switch (and its stop row) happened. */
	wt_join(spawn_named("after", 1, return_arg, NULL));
	exit(0);
}

static void test_trace_written_at_exit(void **state)
{
	unsetenv("WEFT_TRACE");
	struct exit_ctx e = {.workers = 2};
	char dir[64];
	make_dir(dir);
	snprintf(e.base, sizeof e.base, "%s/exit", dir);
	struct wt_child res;
	wt_run_child(exit_with_ult_parked, &e, 60, &res);
	char how[96];
	WT_TRUE(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0,
		"the child %s; its stderr:\n%s", wt_describe_status(res.status, how, sizeof how),
		res.err);
	wt_child_free(&res);

	struct trace t;
	load_trace(&t, e.base);
	WT_EQ(files_in(dir), 2);
	/* The child's pid and ids are its own: take them from the trace. */
	const struct row *first = find(&t, "run", 0, NULL);
	struct expect x = {e.workers, 0, meta_num(&t, "pid"), first->ult};
	WT_CMP(x.pid, !=, getpid());
	check_trace(&t, &x);
	WT_EQ_STR(first->name, "main");
	/* The parked ULT: created, ran, stopped parking, never exited. */
	const struct row *c = NULL;
	for (size_t i = 0; i < t.n && !c; i++)
		if (is(&t.rows[i], "create") && strcmp(t.rows[i].name, "parked") == 0)
			c = &t.rows[i];
	WT_TRUE(c != NULL, "no create row of the parked ULT");
	WT_CMP(count(&t, "run", c->ult, NULL, 1), >=, 1);
	WT_CMP(count(&t, "stop", c->ult, "park", 1), >=, 1);
	WT_EQ(count(&t, "stop", c->ult, "exit", -2), 0);
	/* The last row of it is that stop. */
	const struct row *last = NULL;
	for (size_t i = 0; i < t.n; i++)
		if (t.rows[i].ult == c->ult && (is(&t.rows[i], "run") || is(&t.rows[i], "stop")))
			last = &t.rows[i];
	WT_EQ_STR(last->ev, "stop");
	WT_EQ_STR(last->detail, "park");
	free_trace(&t);
	remove_dir(dir);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trace_files_and_metadata),
		cmocka_unit_test(test_trace_ult_lifecycle_and_names),
		cmocka_unit_test(test_trace_foreign_thread_rows),
		cmocka_unit_test(test_trace_stop_yield),
		cmocka_unit_test(test_trace_stop_join),
		cmocka_unit_test(test_trace_stop_park_and_unpark),
		cmocka_unit_test(test_trace_stop_handoff),
		cmocka_unit_test(test_trace_stop_sleep),
		cmocka_unit_test(test_trace_stop_cond),
		cmocka_unit_test(test_trace_mutex_contention),
		cmocka_unit_test(test_trace_rwlock_contention),
		cmocka_unit_test(test_trace_no_migration_when_staying),
		cmocka_unit_test(test_trace_counts_match_worker_stats),
		cmocka_unit_test(test_trace_path_pid_and_suffix),
		cmocka_unit_test(test_trace_formats),
		cmocka_unit_test(test_trace_unmakeable_path),
		cmocka_unit_test(test_trace_env_var),
		cmocka_unit_test(test_trace_written_at_exit),
	};
	return WT_RUN(argc, argv, tests);
}
