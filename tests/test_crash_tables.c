/*
 * What the crash files keep besides rings and names (SPEC §10.4-§10.6):
 * a child with crash files makes call sites, categories and tracks after
 * its last flush, is SIGKILLed, and `katra recover` must give the rebuilt
 * trace the sites' locations, the categories' states and the tracks with
 * their pairs exactly as a stopped session would have written them;
 * damaged tables are reported and the rest recovered.
 */
#include "crash_helpers.h"

#include <pthread.h>
#include <stdatomic.h>

#include <katra/katra.h>
#include <katra/reader.h>
#include <katra/track.h>
#include "format/format.h"
#include "recover/crash.h"
#include "ring/ring.h"

/* The dsp track's calibrations: more than a table holds, so it halves. */
#define DSP_PAIRS 1100u

/* ---- the child ---------------------------------------------------------- */

static void tables_child(_Atomic int *ready, const char *dir, const char *trace)
{
	alarm(60);
	kt_config cfg = { .ring_size = KT_RING_MIN };
	/* The flusher wakes at the half-ring mark or when told, not by time:
	 * after its first pass nothing below reaches the trace file. */
	kt_session_options o = { .crash_dir = dir, .flush_period_ns = UINT64_C(60000000000) };
	kt_session *s;
	/* audio: off before the session and through it. */
	if (kt_init(&cfg) || kt_category_enable("audio", 0) || kt_session_start(trace, &o, &s))
		_exit(10);
	while (!kt__ring_consumer_asleep())
		usleep(100);
	/* physics: named on during the session, then switched off. */
	if (kt_category_enable("physics", 1) || kt_category_enable("physics", 0))
		_exit(13);
	static kt_site draw = { .name = "draw", .file = "src/render.c", .function = "draw_frame",
				.category = "render", .line = 42 };
	static kt_site tick = { .name = "tick", .file = "src/main.c", .function = "main",
				.line = 7 };
	uint32_t d = kt_site_id(&draw), t = kt_site_id(&tick);
	kt_zone_begin(t);
	kt_zone_begin(d);
	kt_zone_end(d);
	kt_zone_end(t);
	int gpu = kt_track_create("gpu", 19200000), dsp = kt_track_create("dsp", 1000000);
	if (gpu != 1 || dsp != 2 || kt_track_calibrate(1, 1000000, 3000000) ||
	    kt_track_calibrate(1, 1019200, 6000300))
		_exit(11);
	uint32_t pass = kt_name("pass"), shade = kt_name("shade");
	kt_track_zone_begin(1, pass, 1001920);
	kt_track_zone_begin(1, shade, 1005000);
	kt_track_zone_end(1, shade, 1006000);
	kt_track_zone_end(1, pass, 1010000);
	for (uint64_t k = 0; k < DSP_PAIRS; k++)
		if (kt_track_calibrate(2, 1000 + 10 * k, 5000 + 7 * k))
			_exit(12);
	t_child_ready(ready);
}

struct dead {
	char *dir, *trace, *crash, *out;
	char msg[8192];
};

/* Run the child, kill it, and leave its crash directory. */
static void kill_child(struct dead *x)
{
	_Atomic int *ready = t_shared(sizeof(*ready));
	x->dir = scratch();
	x->trace = path_in(x->dir, "trace.katra");
	x->out = path_in(x->dir, "out.katra");
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		tables_child(ready, x->dir, x->trace);
	t_wait_ready(ready, pid);
	t_kill_child(pid);
	munmap((void *)ready, sizeof(*ready));
	x->crash = path_in(x->dir, "katra-%ld", (long)pid);
}

static int recover(struct dead *x)
{
	const char *args[] = { "recover", x->crash, "--out", x->out, NULL };
	return katra(x->msg, sizeof(x->msg), args);
}

static void dead_free(struct dead *x)
{
	free(x->trace);
	free(x->crash);
	free(x->out);
	rm_rf(x->dir);
}

/* ---- what the recovered trace holds ------------------------------------- */

struct got {
	char names[64][16];          /* by id, the ids a few */
	kt_srcloc loc[4];
	char loc_file[4][32], loc_fn[4][32];
	int nloc;
	kt_track_def track[4];
	kt_track_pair pairs[4][KT_MAX_TRACK_PAIRS];
	int ntrack;
	uint64_t tick_hz;
	uint32_t cat_id[8], cat_flags[8];
	int ncat;
	kt_event ev[16];             /* the zone events, payloads not kept */
	kt_track_event tev[16];
	int nev, ntev;
};

static void take_chunk(struct got *g, const kt_trace_frame *f)
{
	kt_chunk_iter it;
	kt_event ev;
	kt_chunk_iter_init(&it, f);
	while (kt_chunk_next(&it, &ev)) {
		if (ev.type == KT_EV_ZONE_BEGIN || ev.type == KT_EV_ZONE_END) {
			cr_assert_lt(g->nev, 16);
			g->ev[g->nev++] = ev;
		} else if (kt_event_get_track(&ev, &g->tev[g->ntev])) {
			cr_assert_lt(g->ntev, 16);
			g->ntev++;
		}
	}
}

static void take_frame(void *ctx, const kt_trace_frame *f)
{
	struct got *g = ctx;
	if (f->kind == KT_FRAME_NAME && f->u.name.id < 64) {
		cr_assert_lt(f->u.name.len, 16);
		memcpy(g->names[f->u.name.id], f->u.name.str, f->u.name.len);
	} else if (f->kind == KT_FRAME_SRCLOC) {
		cr_assert_lt(g->nloc, 4);
		const kt_srcloc *l = &f->u.srcloc;
		cr_assert(l->file_len < 32 && l->function_len < 32);
		memcpy(g->loc_file[g->nloc], l->file, l->file_len);
		memcpy(g->loc_fn[g->nloc], l->function, l->function_len);
		g->loc[g->nloc++] = *l;
	} else if (f->kind == KT_FRAME_TRACK) {
		cr_assert_lt(g->ntrack, 4);
		g->track[g->ntrack] = f->u.track;
		memcpy(g->pairs[g->ntrack], f->u.track.pairs,
		       f->u.track.pair_count * sizeof(kt_track_pair));
		g->track[g->ntrack].pairs = g->pairs[g->ntrack];
		g->ntrack++;
	} else if (f->kind == KT_FRAME_CATEGORY) {
		cr_assert_lt(g->ncat, 8);
		g->cat_id[g->ncat] = f->u.category.id;
		g->cat_flags[g->ncat++] = f->u.category.flags;
	} else if (f->kind == KT_FRAME_CHUNK) {
		take_chunk(g, f);
	}
}

static void read_got(const char *path, struct got *g)
{
	memset(g, 0, sizeof(*g));
	t_each_frame(path, take_frame, g);
	kt_reader *r;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	g->tick_hz = kt_reader_get_header(r)->clock.tick_hz;
	kt_reader_close(r);
}

static const kt_srcloc *loc_named(struct got *g, const char *name, int *i)
{
	for (*i = 0; *i < g->nloc; (*i)++)
		if (!strcmp(g->names[g->loc[*i].id], name))
			return &g->loc[*i];
	cr_assert_fail("no location for %s", name);
	return NULL;
}

/* The two sites, exactly, and the four zone events name them. */
static void check_sites(struct got *g)
{
	int i;
	cr_assert_eq(g->nloc, 2);
	const kt_srcloc *d = loc_named(g, "draw", &i);
	cr_assert_str_eq(g->loc_file[i], "src/render.c");
	cr_assert_str_eq(g->loc_fn[i], "draw_frame");
	cr_assert_eq(d->line, 42);
	cr_assert_str_eq(g->names[d->category], "render");
	const kt_srcloc *t = loc_named(g, "tick", &i);
	cr_assert_str_eq(g->loc_file[i], "src/main.c");
	cr_assert_str_eq(g->loc_fn[i], "main");
	cr_assert_eq(t->line, 7);
	cr_assert_eq(t->category, 0);
	cr_assert_eq(g->nev, 4);
	const uint32_t want[4] = { t->id, d->id, d->id, t->id };
	for (int k = 0; k < 4; k++)
		cr_assert_eq(g->ev[k].name_id, want[k], "event %d", k);
}

/* audio (off all along), physics (named on, then off) and render (on
 * since it was named), in the order they were named. */
static void check_categories(struct got *g)
{
	cr_assert_eq(g->ncat, 3);
	const char *name[3] = { "audio", "physics", "render" };
	const uint32_t flags[3] = { 0, KT_CATEGORY_ON_START,
				    KT_CATEGORY_ON_START | KT_CATEGORY_ON_STOP };
	for (int i = 0; i < 3; i++) {
		cr_assert_str_eq(g->names[g->cat_id[i]], name[i]);
		cr_assert_eq(g->cat_flags[i], flags[i], "%s: %u", name[i], g->cat_flags[i]);
	}
}

/* gpu: its two pairs, and its zones converted as SPEC §4.9 says; dsp:
 * the pairs a table that halved at its 1025th keeps, every one. */
static void check_tracks(struct got *g)
{
	cr_assert_eq(g->ntrack, 2);
	const kt_track_def *gpu = &g->track[0], *dsp = &g->track[1];
	cr_assert_eq(gpu->id, 1);
	cr_assert_str_eq(g->names[gpu->name_id], "gpu");
	cr_assert_eq(gpu->clock_hz, 19200000);
	cr_assert_eq(gpu->pair_count, 2);
	cr_assert(gpu->pairs[0].track_ts == 1000000 && gpu->pairs[0].ticks == 3000000);
	cr_assert(gpu->pairs[1].track_ts == 1019200 && gpu->pairs[1].ticks == 6000300);
	cr_assert_eq(g->ntev, 4);
	const uint64_t ticks[4] = { 3300030, 3781328, 3937593, 4562656 };
	for (int k = 0; k < 4; k++) {
		uint64_t t;
		cr_assert_eq(g->tev[k].track, 1);
		cr_assert_eq(kt_track_to_ticks(gpu, g->tick_hz, g->tev[k].track_ts, &t), 0);
		cr_assert_eq(t, ticks[k], "zone event %d: %llu", k, (unsigned long long)t);
	}
	cr_assert_eq(dsp->id, 2);
	cr_assert_str_eq(g->names[dsp->name_id], "dsp");
	cr_assert_eq(dsp->clock_hz, 1000000);
	cr_assert_eq(dsp->pair_count, 512 + (DSP_PAIRS - 1024));
	for (uint32_t i = 0; i < dsp->pair_count; i++) {
		uint64_t k = i < 512 ? 2 * i : 1024 + (i - 512);
		cr_assert(dsp->pairs[i].track_ts == 1000 + 10 * k &&
			  dsp->pairs[i].ticks == 5000 + 7 * k, "pair %u", i);
	}
}

Test(crash_tables, sites_and_tracks_survive_a_kill)
{
	struct dead x;
	kill_child(&x);
	cr_assert_eq(recover(&x), 0, "%s", x.msg);
	struct got *g = malloc(sizeof(*g));
	read_got(x.out, g);
	check_sites(g);
	check_categories(g);
	check_tracks(g);
	/* The tools see them as in any trace: dump locates the zones. */
	const char *dump[] = { "dump", x.out, NULL };
	cr_assert_eq(katra(x.msg, sizeof(x.msg), dump), 0, "%s", x.msg);
	cr_assert_not_null(strstr(x.msg, "@src/render.c:42"), "%s", x.msg);
	free(g);
	dead_free(&x);
}

/* ---- damaged or missing tables ------------------------------------------ */

static char *in_crash(struct dead *x, const char *name)
{
	return path_in(x->crash, "%s", name);
}

static void poke(const char *path, off_t off, const void *bytes, size_t n)
{
	int fd = open(path, O_WRONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, bytes, n, off), (ssize_t)n);
	close(fd);
}

static void append(const char *path, const void *bytes, size_t n)
{
	struct stat sb;
	cr_assert_eq(stat(path, &sb), 0);
	poke(path, sb.st_size, bytes, n);
}

/* A track whose state word names no buffer is refused, a sites log that
 * ends in a malformed entry keeps those before it, and a category with a
 * flag no katra writes is left out: each said, the rest recovered. */
Test(crash_tables, damaged_tables_are_reported_and_the_rest_recovered)
{
	struct dead x;
	kill_child(&x);
	char *tracks = in_crash(&x, "tracks"), *sites = in_crash(&x, "sites");
	uint8_t state[8];
	kt__put64(state, UINT64_C(2) << 32 | 5);
	poke(tracks, KT__TRK_SLOT + KT__TRK_O_STATE, state, 8);
	const uint8_t bad[12] = { 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0 };
	struct stat sb;
	cr_assert_eq(stat(sites, &sb), 0);
	append(sites, bad, sizeof(bad));
	char *cats = in_crash(&x, "categories");
	const uint8_t four[4] = { 4, 0, 0, 0 };
	poke(cats, 4, four, sizeof(four)); /* audio's flags */
	cr_assert_eq(recover(&x), 3, "%s", x.msg);
	cr_assert_not_null(strstr(x.msg, "/categories: offset 0: category "), "%s", x.msg);
	cr_assert_not_null(strstr(x.msg, " has flags 0x4: its state is missing"), "%s", x.msg);
	char want[256];
	snprintf(want, sizeof(want), "/tracks: offset %u: track slot 1: id 2, state 0x200000005: "
		 "not this slot's track: that track is missing", KT__TRK_SLOT);
	cr_assert_not_null(strstr(x.msg, want), "%s", x.msg);
	snprintf(want, sizeof(want), "/sites: offset %lld: malformed entry (kind 9, id 1, 0 "
		 "bytes): the entries after it are not read", (long long)sb.st_size);
	cr_assert_not_null(strstr(x.msg, want), "%s", x.msg);
	struct got *g = malloc(sizeof(*g));
	read_got(x.out, g);
	check_sites(g);
	cr_assert_eq(g->ncat, 2);
	cr_assert_str_eq(g->names[g->cat_id[0]], "physics");
	cr_assert_eq(g->ntrack, 1);
	cr_assert_eq(g->track[0].id, 1);
	cr_assert_eq(g->track[0].pair_count, 2);
	free(g);
	free(tracks);
	free(sites);
	free(cats);
	dead_free(&x);
}

/* Set or clear the control header's KT__CTL_F_TABLES, sealed again. */
static void header_tables(struct dead *x, int on)
{
	char *ctl = in_crash(x, "control");
	uint8_t h[KT__CTL_HEADER];
	int fd = open(ctl, O_RDWR);
	cr_assert_eq(pread(fd, h, sizeof(h), 0), (ssize_t)sizeof(h));
	uint32_t flags = kt__get32(h + KT__CTL_O_FLAGS);
	cr_assert_eq(flags, KT__CTL_F_TABLES);
	kt__put32(h + KT__CTL_O_FLAGS, on ? flags : flags & ~KT__CTL_F_TABLES);
	memset(h + KT__CTL_O_CHECKSUM, 0, 8);
	kt__put64(h + KT__CTL_O_CHECKSUM, kt__xxh3(h, sizeof(h)));
	cr_assert_eq(pwrite(fd, h, sizeof(h), 0), (ssize_t)sizeof(h));
	close(fd);
	free(ctl);
}

/* Without its sites and tracks files, a directory whose header says it
 * has them is partly recovered, and said to be; one whose header does not
 * (an older katra's) recovers whole without them, as it did. */
Test(crash_tables, missing_tables_are_a_problem_only_when_the_header_has_them)
{
	struct dead x;
	kill_child(&x);
	char *tracks = in_crash(&x, "tracks"), *sites = in_crash(&x, "sites");
	char *cats = in_crash(&x, "categories");
	cr_assert_eq(unlink(tracks), 0);
	cr_assert_eq(unlink(sites), 0);
	cr_assert_eq(unlink(cats), 0);
	header_tables(&x, 1);
	cr_assert_eq(recover(&x), 3, "%s", x.msg);
	cr_assert_not_null(strstr(x.msg, "/sites: No such file or directory: the call sites' "
				  "locations are missing"), "%s", x.msg);
	cr_assert_not_null(strstr(x.msg, "/tracks: No such file or directory: the tracks and "
				  "their clocks are missing"), "%s", x.msg);
	cr_assert_not_null(strstr(x.msg, "/categories: No such file or directory: the "
				  "categories' states are missing"), "%s", x.msg);
	header_tables(&x, 0);
	cr_assert_eq(recover(&x), 0, "%s", x.msg);
	struct got *g = malloc(sizeof(*g));
	read_got(x.out, g);
	cr_assert_eq(g->nloc, 0);
	cr_assert_eq(g->ntrack, 0);
	cr_assert_eq(g->ncat, 0);
	cr_assert_eq(g->nev, 4);
	cr_assert_eq(g->ntev, 4);
	free(g);
	free(tracks);
	free(sites);
	free(cats);
	dead_free(&x);
}

/* ---- the tables' bytes -------------------------------------------------- */

/* Slot @index holding track @id with @n pairs (k: track_ts 100 + k, ticks
 * 1000 + 3k) in buffer @buf. */
static void forge_track(uint8_t *p, uint32_t index, uint32_t id, unsigned buf, uint32_t n)
{
	memset(p, 0, KT__TRK_SLOT);
	kt__put32(p + KT__TRK_O_ID, id);
	kt__put32(p + KT__TRK_O_NAME, 7);
	kt__put64(p + KT__TRK_O_HZ, 1000);
	kt__put64(p + KT__TRK_O_STATE, (uint64_t)buf << 32 | n);
	uint8_t *q = p + KT__TRK_O_PAIRS + buf * KT__TRK_BUF;
	for (uint32_t k = 0; k < n && k < KT_MAX_TRACK_PAIRS; k++) {
		kt__put64(q + 16 * k, 100 + k);
		kt__put64(q + 16 * k + 8, 1000 + 3 * k);
	}
	(void)index;
}

Test(crash_tables, a_track_slot_is_read_only_when_every_field_is_in_range)
{
	static uint8_t p[KT__TRK_SLOT];
	static kt_track_pair pairs[KT_MAX_TRACK_PAIRS];
	kt_track_def t;
	char why[256] = "";
	memset(p, 0, sizeof(p));
	cr_assert_eq(kt__track_parse(p, sizeof(p), 3, &t, pairs, why, sizeof(why)), 1);
	forge_track(p, 3, 4, 1, 3);
	cr_assert_eq(kt__track_parse(p, sizeof(p), 3, &t, pairs, why, sizeof(why)), 0, "%s", why);
	cr_assert(t.id == 4 && t.name_id == 7 && t.clock_hz == 1000 && t.pair_count == 3);
	cr_assert(t.pairs == pairs && pairs[2].track_ts == 102 && pairs[2].ticks == 1006);
	/* The pairs end past the bytes given: nothing read beyond them. */
	cr_assert_eq(kt__track_parse(p, KT__TRK_O_PAIRS + KT__TRK_BUF + 47, 3, &t, pairs, why,
				     sizeof(why)), KT_EFRAME);
	cr_assert_str_eq(why, "track slot 3: 16463 bytes, its 3 pairs end at 16464");
	cr_assert_eq(kt__track_parse(p, 31, 3, &t, pairs, why, sizeof(why)), KT_EFRAME);
	cr_assert_str_eq(why, "track slot 3: 31 bytes, shorter than its entry");
	cr_assert_eq(kt__track_parse(p, sizeof(p), 2, &t, pairs, why, sizeof(why)), KT_EFRAME);
	cr_assert_str_eq(why, "track slot 2: id 4, state 0x100000003: not this slot's track");
	forge_track(p, 3, 4, 0, KT_MAX_TRACK_PAIRS + 1);
	cr_assert_eq(kt__track_parse(p, sizeof(p), 3, &t, pairs, why, sizeof(why)), KT_EFRAME);
	forge_track(p, 3, 4, 0, 3);
	kt__put64(p + KT__TRK_O_RESERVED, 1);
	cr_assert_eq(kt__track_parse(p, sizeof(p), 3, &t, pairs, why, sizeof(why)), KT_EFRAME);
	forge_track(p, 3, 4, 0, 3);
	kt__put64(p + KT__TRK_O_PAIRS + 16 + 8, 1000); /* pair 1's ticks: not after pair 0's */
	cr_assert_eq(kt__track_parse(p, sizeof(p), 3, &t, pairs, why, sizeof(why)), KT_EFRAME);
	forge_track(p, 3, 4, 0, 3);
	kt__put32(p + KT__TRK_O_NAME, 0);
	cr_assert_eq(kt__track_parse(p, sizeof(p), 3, &t, pairs, why, sizeof(why)), KT_EFRAME);
}

Test(crash_tables, a_site_entry_is_read_only_when_its_strings_fit)
{
	uint8_t p[64] = { 0 };
	kt__put32(p, 42);
	kt__put32(p + 4, 9);
	kt__put32(p + 8, 3);
	memcpy(p + 12, "a.cmain", 7);
	kt_srcloc loc;
	cr_assert_eq(kt__site_parse(p, 19, 5, &loc), 0);
	cr_assert(loc.id == 5 && loc.line == 42 && loc.category == 9);
	cr_assert(loc.file_len == 3 && !memcmp(loc.file, "a.c", 3));
	cr_assert(loc.function_len == 4 && !memcmp(loc.function, "main", 4));
	cr_assert_eq(kt__site_parse(p, 12, 5, &loc), -1);   /* the file ends past it */
	cr_assert_eq(kt__site_parse(p, 11, 5, &loc), -1);   /* shorter than the fixed part */
	cr_assert_eq(kt__site_parse(p, 19, 0, &loc), -1);   /* id 0 */
	p[14] = 0;
	cr_assert_eq(kt__site_parse(p, 19, 5, &loc), -1);   /* a zero byte in the file */
	p[14] = 'c';
	p[16] = 0;
	cr_assert_eq(kt__site_parse(p, 19, 5, &loc), -1);   /* and in the function */
	kt__put32(p + 8, UINT32_MAX);
	cr_assert_eq(kt__site_parse(p, 19, 5, &loc), -1);
}

/* ---- the live side's tracks file ---------------------------------------- */

static void read_slot(const char *path, uint32_t index, uint8_t *p)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, p, KT__TRK_SLOT, (off_t)index * KT__TRK_SLOT),
		     (ssize_t)KT__TRK_SLOT);
	close(fd);
}

/*
 * Pairs appended go into the buffer in use, its count last; a halved
 * table goes whole into the other buffer, and until the state word names
 * it the old one still holds the pairs it counts: a kill anywhere leaves
 * whole pairs.  The file holds a slot per track, reserved at once.
 */
Test(crash_tables, a_halved_table_goes_to_the_other_buffer_and_the_old_stays_whole)
{
	char *dir = scratch();
	struct kt__crash *c;
	cr_assert_eq(kt__crash_start(&c, dir, -1, 0), 0);
	const kt__backing *b = kt__crash_backing(c);
	char *tracks = path_in(kt__crash_dir(c), "tracks");
	static kt_track_pair pairs[KT_MAX_TRACK_PAIRS];
	kt_track_def t = { .id = 3, .name_id = 5, .clock_hz = 1000, .pairs = pairs };
	for (uint32_t n = 0; n <= KT_MAX_TRACK_PAIRS; n++) {
		if (n)
			pairs[n - 1] = (kt_track_pair){ 10 + n - 1, 20 + 2 * (n - 1) };
		t.pair_count = n;
		b->track(b, &t);
	}
	struct stat sb;
	cr_assert_eq(stat(tracks, &sb), 0);
	cr_assert_eq(sb.st_size, 3 * KT__TRK_SLOT);
	static uint8_t p[KT__TRK_SLOT];
	read_slot(tracks, 2, p);
	cr_assert_eq(kt__get64(p + KT__TRK_O_STATE), UINT64_C(1) << 32 | 1024);
	/* Halved, then the new pair: 0, 2, ..., 1022, then 1024. */
	for (uint32_t i = 0; i < 512; i++)
		pairs[i] = pairs[2 * i];
	pairs[512] = (kt_track_pair){ 10 + 1024, 20 + 2 * 1024 };
	t.pair_count = 513;
	b->track(b, &t);
	read_slot(tracks, 2, p);
	cr_assert_eq(kt__get64(p + KT__TRK_O_STATE), 513);
	const uint8_t *old = p + KT__TRK_O_PAIRS + KT__TRK_BUF, *now = p + KT__TRK_O_PAIRS;
	for (uint32_t k = 0; k < 1024; k++)
		cr_assert(kt__get64(old + 16 * k) == 10 + k &&
				  kt__get64(old + 16 * k + 8) == 20 + 2 * k, "old pair %u", k);
	for (uint32_t i = 0; i < 513; i++) {
		uint64_t k = i < 512 ? 2 * i : 1024;
		cr_assert(kt__get64(now + 16 * i) == 10 + k &&
				  kt__get64(now + 16 * i + 8) == 20 + 2 * k, "new pair %u", i);
	}
	static kt_track_pair got[KT_MAX_TRACK_PAIRS];
	char why[256];
	kt_track_def r;
	cr_assert_eq(kt__track_parse(p, sizeof(p), 2, &r, got, why, sizeof(why)), 0, "%s", why);
	cr_assert(r.id == 3 && r.name_id == 5 && r.clock_hz == 1000 && r.pair_count == 513);
	cr_assert(got[511].track_ts == 10 + 1022 && got[512].track_ts == 10 + 1024);
	kt__crash_finish(c);
	free(tracks);
	rm_rf(dir);
}

/* ---- cancellation ------------------------------------------------------- */

/*
 * A thread with a cancel pending calls into katra where the crash files
 * are written under a lock: the write is a cancellation point, and the
 * cancel must wait for the lock to go, or every later call would wait for
 * ever.  @before runs first, @thread (which must end cancelled) next, and
 * @after, which must return 0, last; all with crash files on.
 */
struct cancel_case {
	int (*before)(void);
	void *(*thread)(void *arg);
	int (*after)(void);
};

static void run_cancel_case(const struct cancel_case *c)
{
	char *dir = scratch(), *trace = path_in(dir, "cancel.katra");
	kt_session *s;
	kt_session_options o = { .crash_dir = dir };
	cr_assert_eq(kt_session_start(trace, &o, &s), 0, "%s", kt_session_get_start_error());
	cr_assert_eq(c->before(), 0);
	pthread_t th;
	void *ret;
	cr_assert_eq(pthread_create(&th, NULL, c->thread, NULL), 0);
	cr_assert_eq(pthread_join(th, &ret), 0);
	cr_assert_eq(ret, PTHREAD_CANCELED);
	cr_assert_eq(c->after(), 0);
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	free(trace);
	rm_rf(dir);
}

static int make_track(void)
{
	return kt_track_create("cancelled", 1000) == 1 ? 0 : -1;
}

static void *calibrate_cancelled(void *arg)
{
	(void)arg;
	pthread_cancel(pthread_self());
	kt_track_calibrate(1, 100, 200);
	pthread_testcancel();
	return NULL;
}

static int calibrate_again(void)
{
	return kt_track_calibrate(1, 101, 201);
}

Test(crash_tables, a_cancel_pending_in_calibrate_leaves_the_lock_free, .timeout = 30)
{
	run_cancel_case(&(struct cancel_case){ make_track, calibrate_cancelled, calibrate_again });
}

static int category_on(void)
{
	return kt_category_enable("cancelled", 1);
}

static void *disable_cancelled(void *arg)
{
	(void)arg;
	pthread_cancel(pthread_self());
	kt_category_enable("cancelled", 0);
	pthread_testcancel();
	return NULL;
}

/* The cancelled call took effect, and the lock is free. */
static int category_off_then_on(void)
{
	return kt_category_get_enabled("cancelled") == 0 ? kt_category_enable("cancelled", 1) : -1;
}

Test(crash_tables, a_cancel_pending_in_category_enable_leaves_the_lock_free, .timeout = 30)
{
	run_cancel_case(&(struct cancel_case){ category_on, disable_cancelled,
					       category_off_then_on });
}
