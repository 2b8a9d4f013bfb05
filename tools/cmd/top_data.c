/*
 * top_data.c - the live page of a process, found, mapped and read
 * (flush/live.h), and a window of it: the difference of two copies, as
 * `katra top` shows it and `--once --json` prints it.
 *
 * The page is another process's memory: a copy is bounded by
 * kt__live_copy() (counts clamped, names cut), and names are escaped
 * where they are shown (tools/pipeline/text.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/cmd/cli.h"
#include "tools/pipeline/text.h"
#include "tools/cmd/top.h"

const char *const top_sort_names[TOP_SORTS] = { "self", "total", "count", "p99", "name" };
const char *const top_window_names[3] = { "1 s", "10 s", "all" };

static int not_live(long pid)
{
	fprintf(stderr,
		"katra top: process %ld has no live katra session (not traced, or no "
		"KATRA_LIVE=1)\n",
		pid);
	return EXIT_BAD;
}

int top_open(long pid, struct top_source *src)
{
	char proc[64];
	struct stat sb;
	memset(src, 0, sizeof(*src));
	src->pid = pid;
	snprintf(proc, sizeof(proc), "/proc/%ld", pid);
	if (stat(proc, &sb) < 0) {
		fprintf(stderr, "katra top: no process %ld\n", pid);
		return EXIT_BAD;
	}
	if (sb.st_uid != geteuid()) {
		fprintf(stderr, "katra top: process %ld belongs to another user: refused\n", pid);
		return EXIT_BAD;
	}
	int fd = kt__live_find(pid);
	if (fd == -EACCES || fd == -EPERM) {
		fprintf(stderr, "katra top: process %ld: its descriptors cannot be read: refused\n",
			pid);
		return EXIT_BAD;
	}
	if (fd < 0)
		return not_live(pid);
	src->len = sizeof(struct kt__live_page);
	void *m = mmap(NULL, src->len, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return not_live(pid);
	src->map = m;
	static struct kt__live_page probe;
	if (top_read(src, &probe) || probe.pid != (uint32_t)pid) {
		top_close(src);
		return not_live(pid);
	}
	return 0;
}

void top_close(struct top_source *src)
{
	if (src->map)
		munmap((void *)src->map, src->len);
	src->map = NULL;
}

int top_read(const struct top_source *src, struct kt__live_page *out)
{
	return kt__live_copy(out, src->map, src->len);
}

uint64_t top_ns(const struct kt__live_page *p, uint64_t ticks)
{
	return (uint64_t)((unsigned __int128)ticks * 1000000000u / p->clock.tick_hz);
}

/* The @q quantile of the histogram @now less @then (NULL: none), in ns. */
static uint64_t pct(const struct kt__live_page *p, const uint32_t *now, const uint32_t *then,
		    uint64_t n, double q)
{
	if (!n)
		return 0;
	/* The rank katra stats takes (tools/pipeline/hist.c). */
	uint64_t want = (uint64_t)(q * (double)(n - 1)) + 1, seen = 0;
	for (unsigned b = 0; b < KT__LIVE_BUCKETS; b++) {
		seen += (uint32_t)(now[b] - (then ? then[b] : 0));
		if (seen >= want)
			return top_ns(p, kt__live_bucket_mid(b));
	}
	return 0;
}

static const struct kt__live_zone *zone_then(const struct kt__live_page *then, uint32_t id)
{
	for (uint32_t i = 0; then && i < then->nzones; i++)
		if (then->zones[i].id == id)
			return &then->zones[i];
	return NULL;
}

static enum top_sort sort_key;

static int zone_cmp(const void *a, const void *b)
{
	const struct top_zone *x = a, *y = b;
	uint64_t u = 0, w = 0;
	switch (sort_key) {
	case TOP_SORT_NAME:
		return strcmp(x->name, y->name);
	case TOP_SORT_TOTAL: u = x->total_ns, w = y->total_ns; break;
	case TOP_SORT_COUNT: u = x->count, w = y->count; break;
	case TOP_SORT_P99: u = x->p99_ns, w = y->p99_ns; break;
	default: u = x->self_ns, w = y->self_ns; break;
	}
	if (u != w)
		return u < w ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void window_zones(const struct kt__live_page *now, const struct kt__live_page *then,
			 const char *filter, struct top_view *v)
{
	v->nzones = 0;
	for (uint32_t i = 0; i < now->nzones; i++) {
		const struct kt__live_zone *z = &now->zones[i], *o = zone_then(then, z->id);
		uint64_t count = z->count - (o ? o->count : 0);
		if (!count || (filter && filter[0] && !strstr(z->name, filter)))
			continue;
		struct top_zone *r = &v->zones[v->nzones++];
		r->name = z->name;
		r->count = count;
		r->total_ns = top_ns(now, z->total - (o ? o->total : 0));
		r->self_ns = top_ns(now, z->self - (o ? o->self : 0));
		r->p50_ns = pct(now, z->hist, o ? o->hist : NULL, count, 0.5);
		r->p99_ns = pct(now, z->hist, o ? o->hist : NULL, count, 0.99);
		r->max_ns = o ? pct(now, z->hist, o->hist, count, 1.0) : top_ns(now, z->max);
	}
}

static void window_threads(const struct kt__live_page *now, const struct kt__live_page *then,
			   struct top_view *v)
{
	v->nthreads = now->nthreads;
	for (uint32_t i = 0; i < now->nthreads; i++) {
		const struct kt__live_thread *t = &now->threads[i], *o = NULL;
		for (uint32_t j = 0; then && j < then->nthreads && !o; j++)
			if (then->threads[j].id == t->id)
				o = &then->threads[j];
		struct top_thread *r = &v->threads[i];
		r->t = t;
		r->events = t->events - (o ? o->events : 0);
		r->dropped = t->dropped - (o ? o->dropped : 0);
		r->waited_ns = t->waited_ns - (o ? o->waited_ns : 0);
		r->fill = t->ring_bytes ? (double)t->fill / (double)t->ring_bytes : 0;
	}
}

void top_window(const struct kt__live_page *now, const struct kt__live_page *then,
		const char *filter, enum top_sort sort, struct top_view *v)
{
	uint64_t since = then ? then->published_ns : now->clock.mono_ns;
	v->now = now;
	v->all = !then;
	v->secs = now->published_ns > since ? (double)(now->published_ns - since) / 1e9 : 0;
#define D(f) (now->f - (then ? then->f : 0))
	v->events = D(events);
	v->dropped = D(dropped);
	v->bytes = D(bytes);
	v->cpu_ns = D(flusher_cpu_ns);
	v->untimed = D(untimed);
	v->other_zones = D(other_zones);
	v->skipped = D(skipped);
	v->frames = D(frame_count);
	v->frame_total_ns = top_ns(now, D(frame_total));
#undef D
	const uint32_t *fh = then ? then->frame_hist : NULL;
	v->frame_p50_ns = pct(now, now->frame_hist, fh, v->frames, 0.5);
	v->frame_p99_ns = pct(now, now->frame_hist, fh, v->frames, 0.99);
	v->frame_max_ns = then ? pct(now, now->frame_hist, fh, v->frames, 1.0)
			       : top_ns(now, now->frame_max);
	window_zones(now, then, filter, v);
	window_threads(now, then, v);
	sort_key = sort;
	qsort(v->zones, v->nzones, sizeof(v->zones[0]), zone_cmp);
}

static json_t *zone_json(const struct top_zone *z)
{
	return json_pack("{s:o,s:I,s:I,s:I,s:I,s:I,s:I}", "name",
			 text_json_string(z->name, strlen(z->name)), "count", (json_int_t)z->count,
			 "total_ns", (json_int_t)z->total_ns, "self_ns", (json_int_t)z->self_ns,
			 "p50_ns", (json_int_t)z->p50_ns, "p99_ns", (json_int_t)z->p99_ns,
			 "max_ns", (json_int_t)z->max_ns);
}

static json_t *thread_json(const struct top_thread *t)
{
	return json_pack("{s:I,s:I,s:o,s:I,s:I,s:I,s:I,s:I}", "id", (json_int_t)t->t->id,
			 "os_tid", (json_int_t)t->t->os_tid, "name",
			 text_json_string(t->t->name, strlen(t->t->name)), "events",
			 (json_int_t)t->events, "dropped", (json_int_t)t->dropped, "waited_ns",
			 (json_int_t)t->waited_ns, "ring_fill", (json_int_t)t->t->fill, "ring_bytes",
			 (json_int_t)t->t->ring_bytes);
}

static json_t *counters_json(const struct kt__live_page *p)
{
	json_t *a = json_array();
	for (uint32_t i = 0; a && i < p->ncounters; i++) {
		const struct kt__live_counter *c = &p->counters[i];
		json_t *val = c->is_float ? json_real(c->f) : json_integer((json_int_t)c->i);
		json_array_append_new(a, json_pack("{s:o,s:o}", "name",
						   text_json_string(c->name, strlen(c->name)),
						   "value", val));
	}
	return a;
}

json_t *top_json(const struct top_view *v, long pid)
{
	json_t *zones = json_array(), *threads = json_array();
	for (size_t i = 0; zones && i < v->nzones; i++)
		json_array_append_new(zones, zone_json(&v->zones[i]));
	for (size_t i = 0; threads && i < v->nthreads; i++)
		json_array_append_new(threads, thread_json(&v->threads[i]));
	json_t *frames = json_pack("{s:I,s:I,s:I,s:I,s:I}", "count", (json_int_t)v->frames,
				   "total_ns", (json_int_t)v->frame_total_ns, "p50_ns",
				   (json_int_t)v->frame_p50_ns, "p99_ns", (json_int_t)v->frame_p99_ns,
				   "max_ns", (json_int_t)v->frame_max_ns);
	return json_pack("{s:I,s:b,s:b,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:o,s:o,s:o}", "pid",
			 (json_int_t)pid, "ended", (int)v->now->ended, "since_start", v->all,
			 "window_s", v->secs, "events", (json_int_t)v->events, "dropped",
			 (json_int_t)v->dropped, "bytes", (json_int_t)v->bytes, "flusher_cpu_ns",
			 (json_int_t)v->cpu_ns, "zones_untimed", (json_int_t)v->untimed,
			 "zone_ends_past_table", (json_int_t)v->other_zones, "events_not_walked",
			 (json_int_t)v->skipped, "frames", frames,
			 "zones", zones, "threads", threads, "counters", counters_json(v->now));
}
