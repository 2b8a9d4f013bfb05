/*
 * test_stats.c - `katra stats` as a renderer's first week found it (issue
 * 25, item 4), exact values in text and --json: counters with count, min,
 * mean, max and last; zones' own values and texts on their zone, not a
 * "?" row; percentiles exact up to HIST_EXACT zones a name and marked,
 * with their bound, past it; a reused pointer once among a pool's
 * largest; a frame mark told from a zone of the same name; a snapshot's
 * drop windows at most 100% of the span.
 */
#define _GNU_SOURCE
#include "cli.h"
#include <jansson.h>

/* The trace's clock (t_header): 3 ticks a ns, tick 1000000 at 123456000
 * ns; every time here is a multiple of 3 ticks, so every ns is exact. */
#define NS(n) ((uint64_t)(n) * 3)
#define T0 NS(1000000)

enum { LIT = 1, MS, FRAME_MARK, FRAME_ZONE, DRAW, FEW, PIX, FB, SNAP };
static const char *const names[] = { NULL, "lit", "ms", "frame", "frame", "draw", "few",
				     "pix", "fb", "snap" };

struct buf {
	uint8_t *b;
	size_t n, cap;
	uint64_t ts;
};

static void put(struct buf *b, uint64_t dt, uint32_t id, uint8_t type, const void *p, size_t len)
{
	if (b->cap - b->n < 64) {
		b->cap = b->cap ? b->cap * 2 : 4096;
		b->b = realloc(b->b, b->cap);
		cr_assert_not_null(b->b);
	}
	b->ts += dt;
	kt_event e = { .ts = b->ts, .name_id = id, .type = type, .payload_len = (uint32_t)len,
		       .payload = p };
	size_t k = kt_event_encode(b->b + b->n, b->cap - b->n, &e);
	cr_assert_gt(k, 0);
	b->n += k;
}

static void zone(struct buf *b, uint32_t id, uint64_t ns)
{
	put(b, NS(1), id, KT_EV_ZONE_BEGIN, NULL, 0);
	put(b, NS(ns), id, KT_EV_ZONE_END, NULL, 0);
}

/* Thread 1: counters lit 5, -3, 10 and ms 1.5, 0.5; three frame marks
 * and two 300 ns zones named "frame"; a zone "draw" with its value 7 and
 * a text; ten zones "few" of 10..100 ns; pool "fb" given 4096 bytes at
 * 0x1000 five times.  Thread 2: 5000 zones "pix" of 1000..5999 ns.
 * Thread 3: two instants 100 ns apart, after a drop window of 1 ms that
 * ends long before them, as a flight snapshot's does. */
static void thread1(struct buf *b)
{
	static const int64_t lit[] = { 5, -3, 10 };
	static const double ms[] = { 1.5, 0.5 };
	b->ts = T0;
	for (int i = 0; i < 3; i++)
		put(b, NS(1), LIT, KT_EV_COUNTER_I64, &lit[i], 8);
	for (int i = 0; i < 2; i++)
		put(b, NS(1), MS, KT_EV_COUNTER_F64, &ms[i], 8);
	for (uint64_t f = 0; f < 3; f++)
		put(b, NS(10), FRAME_MARK, KT_EV_FRAME, &f, 8);
	zone(b, FRAME_ZONE, 300);
	zone(b, FRAME_ZONE, 300);
	int64_t seven = 7;
	put(b, NS(1), DRAW, KT_EV_ZONE_BEGIN, NULL, 0);
	put(b, NS(1), 0, KT_EV_ARG_I64, &seven, 8);
	put(b, NS(1), 0, KT_EV_ARG_STR, "main pass", 9);
	put(b, NS(1), DRAW, KT_EV_ZONE_END, NULL, 0);
	for (int i = 1; i <= 10; i++)
		zone(b, FEW, 10 * (uint64_t)i);
	for (int i = 0; i < 5; i++) {
		uint64_t al[2] = { 0x1000, 4096 }, fr = 0x1000;
		put(b, NS(1), FB, KT_EV_ALLOC, al, 16);
		put(b, NS(1), FB, KT_EV_FREE, &fr, 8);
	}
}

static void stats_file(const char *path)
{
	kt_header h;
	kt_writer *w;
	t_header(&h);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(kt_writer_open_fd(fd, &h, &w), 0);
	for (uint32_t i = 1; i <= SNAP; i++)
		cr_assert_eq(kt_writer_name(w, i, names[i], strlen(names[i])), 0);
	cr_assert_eq(kt_writer_thread(w, 1, 1001, "main"), 0);
	cr_assert_eq(kt_writer_thread(w, 2, 1002, "tile"), 0);
	cr_assert_eq(kt_writer_thread(w, 3, 1003, "quiet"), 0);
	struct buf b = { 0 };
	thread1(&b);
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_NONE, 1, b.b, b.n), 0);
	b.n = 0;
	b.ts = T0;
	for (int i = 0; i < 5000; i++)
		zone(&b, PIX, 1000 + (uint64_t)i);
	cr_assert_eq(kt_writer_chunk(w, 2, KT_CODEC_NONE, 1, b.b, b.n), 0);
	b.n = 0;
	b.ts = T0 + NS(9000000);
	put(&b, 0, SNAP, KT_EV_INSTANT, NULL, 0);
	put(&b, NS(100), SNAP, KT_EV_INSTANT, NULL, 0);
	cr_assert_eq(kt_writer_chunk(w, 3, KT_CODEC_NONE, 1, b.b, b.n), 0);
	cr_assert_eq(kt_writer_drop(w, 3, 40, T0, T0 + NS(1000000)), 0);
	free(b.b);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
	close(fd);
}

static void stats_of(const char *tag, int json, struct proc *p)
{
	char path[128];
	snprintf(path, sizeof(path), "/tmp/katra-stats-%s-%d.katra", tag, (int)getpid());
	stats_file(path);
	const char *args[] = { "stats", path, json ? "--json" : NULL, NULL };
	run_katra(p, args);
	cr_assert_eq(p->status, 0, "%s", p->err);
	unlink(path);
}

static void has_line(const struct proc *p, const char *line)
{
	cr_assert_not_null(strstr(p->out, line), "no line\n%s\nin\n%s", line, p->out);
}

/* The text, line by line.  Before: counters had a count only; the zone's
 * value and text were a "?" row of 2; "frame" twice, alike but for the
 * zone columns; few's p50 and p99 were 50 and 91 (a bucket's middle) and
 * pix's looked exact; the pool listed "4096 @0x1000" five times; the
 * quiet thread's drop windows were 1000000.0% of its span. */
Test(stats, text_gives_each_fix_exactly)
{
	static struct proc p;
	stats_of("text", 0, &p);
	char line[256];
	snprintf(line, sizeof(line), "\n%-24s %10d %14d %14s %14d %14d\n", "lit", 3, -3, "4", 10, 10);
	has_line(&p, line);
	snprintf(line, sizeof(line), "\n%-24s %10d %14s %14s %14s %14s\n", "ms", 2, "0.5", "1", "1.5",
		 "0.5");
	has_line(&p, line);
	snprintf(line, sizeof(line), "\n%-24s %10d %14d %14s %14d %14d %10d\n", "draw", 1, 7, "7", 7,
		 7, 1);
	has_line(&p, line);
	cr_assert_null(strstr(p.out, "\n? "), "%s", p.out);
	cr_assert_null(strstr(p.out, "(no name)"), "%s", p.out);
	snprintf(line, sizeof(line), "\n%-24s %10d\n", "frame (frame mark)", 3);
	has_line(&p, line);
	snprintf(line, sizeof(line), "\n%-24s %10d %10d %10s %10s %10d %12d %12d\n", "frame", 2, 300,
		 "300", "300", 300, 600, 600);
	has_line(&p, line);
	snprintf(line, sizeof(line), "\n%-24s %10d %10d %10s %10s %10d %12d %12d\n", "few", 10, 10,
		 "50", "90", 100, 550, 550);
	has_line(&p, line);
	snprintf(line, sizeof(line), "\n%-24s %10d %10d %10s %10s %10d %12d %12d\n", "pix", 5000,
		 1000, "~3488", "~5952", 5999, 17497500, 17497500);
	has_line(&p, line);
	has_line(&p, "\n~: a percentile from buckets (a name with over 4096 zones), within 1.6% "
		     "of the value of its rank; the others are exact\n");
	has_line(&p, "\n  largest: 4096 @0x1000 x5\n");
	snprintf(line, sizeof(line), "\n%-8u %-20s %12d %10d %14d %10s\n", 3u, "quiet", 1, 40,
		 1000000, "11.1");
	has_line(&p, line);
}

static json_t *find(json_t *a, const char *key, const char *name, int nth)
{
	size_t i;
	json_t *o;
	json_array_foreach(a, i, o)
		if (!strcmp(json_string_value(json_object_get(o, key)), name) && nth-- == 0)
			return o;
	cr_assert_fail("no %s %s", key, name);
	return NULL;
}

static json_int_t jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	cr_assert(json_is_integer(v), "%s", k);
	return json_integer_value(v);
}

static double jreal(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	cr_assert(json_is_number(v), "%s", k);
	return json_number_value(v);
}

/* The same in --json. */
Test(stats, json_gives_each_fix_exactly)
{
	static struct proc p;
	stats_of("json", 1, &p);
	json_t *o = json_loadb(p.out, p.out_len, 0, NULL);
	cr_assert_not_null(o, "%s", p.out);
	json_t *c = json_object_get(o, "counters");
	json_t *lit = find(c, "name", "lit", 0), *ms = find(c, "name", "ms", 0);
	static const char *const keys[] = { "count", "min", "mean", "max", "last" };
	static const double want[2][5] = { { 3, -3, 4, 10, 10 }, { 2, 0.5, 1, 1.5, 0.5 } };
	for (int k = 0; k < 5; k++) {
		cr_assert_eq(jreal(lit, keys[k]), want[0][k], "lit %s", keys[k]);
		cr_assert_eq(jreal(ms, keys[k]), want[1][k], "ms %s", keys[k]);
		/* An integer counter's values stay integers; the mean is real. */
		cr_assert_eq(json_is_integer(json_object_get(lit, keys[k])), k != 2, "%s", keys[k]);
	}
	json_t *draw = find(json_object_get(o, "zone_values"), "name", "draw", 0);
	cr_assert_eq(jint(draw, "count"), 1);
	cr_assert_eq(jint(draw, "last"), 7);
	cr_assert_eq(jint(draw, "texts"), 1);
	json_t *nm = json_object_get(o, "names");
	size_t i;
	json_t *row;
	json_array_foreach(nm, i, row)
		cr_assert(json_is_string(json_object_get(row, "name")), "a row with no name");
	cr_assert_eq(jint(find(nm, "name", "frame", 0), "frame_marks"), 3);
	cr_assert_null(json_object_get(find(nm, "name", "frame", 0), "zone"));
	cr_assert_null(json_object_get(find(nm, "name", "frame", 1), "frame_marks"));
	json_t *few = json_object_get(find(nm, "name", "few", 0), "zone");
	cr_assert_eq(jint(few, "p50_ns"), 50);
	cr_assert_eq(jint(few, "p99_ns"), 90);
	cr_assert(json_is_true(json_object_get(few, "pct_exact")));
	cr_assert_eq(jreal(few, "pct_max_error"), 0.0);
	json_t *pix = json_object_get(find(nm, "name", "pix", 0), "zone");
	cr_assert_eq(jint(pix, "p50_ns"), 3488);
	cr_assert_eq(jint(pix, "p99_ns"), 5952);
	cr_assert(json_is_false(json_object_get(pix, "pct_exact")));
	cr_assert_eq(jreal(pix, "pct_max_error"), 1.0 / 64);
	json_t *fb = find(json_object_get(o, "memory"), "name", "fb", 0);
	json_t *top = json_object_get(fb, "largest");
	cr_assert_eq(json_array_size(top), 1);
	cr_assert_eq(jint(json_array_get(top, 0), "size"), 4096);
	cr_assert_eq(jint(json_array_get(top, 0), "allocations"), 5);
	json_t *quiet = find(json_object_get(o, "threads"), "name", "quiet", 0);
	cr_assert_eq(jint(quiet, "drop_ns"), 1000000);
	cr_assert_eq(jint(quiet, "drop_span_ns"), 9000100);
	cr_assert_eq(jint(quiet, "span_ns"), 100);
	json_decref(o);
}
