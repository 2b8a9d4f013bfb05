/*
 * The examples/ program (examples/particles.cpp) as a user runs it: a few
 * hundred frames of a main thread, a worker pool and a render thread,
 * traced, then read back through the public reader.  Every figure it
 * records is fixed by its frame count and the frame where the physics
 * category goes off, so each is checked exactly.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <katra/reader.h>
#include "example.h"

#define FRAMES 120
#define OFF_FROM 80 /* physics off from this frame on */
#define JOBS 8
#define PER_JOB 2500 /* particles per job: 20000 / JOBS */
#define MAX_IDS 64
#define KT_W 160 /* the framebuffer, one allocated per frame */
#define KT_H 90

/* What the trace holds, by name. */
struct seen {
	char names[MAX_IDS][32];
	const char *thread_names[8];
	char threads[8][32];
	unsigned nthreads;
	struct {
		char file[64], function[32];
		uint32_t line;
	} loc[MAX_IDS];
	uint64_t begins[MAX_IDS];   /* zone begins per name id */
	uint64_t frames, frame_sum; /* frame marks and their numbers' sum */
	uint64_t firsts, first_sum, counts, count_sum;
	uint64_t raster_values, lit_counters;
	uint64_t ms_counters; /* KT_COUNTER("frame ms", a double): f64 */
	uint64_t allocs, frees, alloc_bytes, live, peak;
	uint64_t records;
	/* The "gpu" track: its entry, each frame's "present" begin (ns),
	 * and what its records say, per frame in the order they came. */
	kt_track_def gpu;
	kt_track_pair pairs[KT_MAX_TRACK_PAIRS];
	uint64_t present_ns[FRAMES + 1];
	unsigned npresent;
	struct gpu_frame {
		uint64_t no, begin_ns, end_ns, emitted_ns, track_begin, track_end;
		uint64_t pass_ticks[3]; /* each pass's length on the track's clock */
		unsigned passes, depth;
	} gf[FRAMES];
	unsigned ngf, bad_nesting;
};

static uint32_t id_of(const struct seen *s, const char *name)
{
	for (uint32_t i = 1; i < MAX_IDS; i++)
		if (!strcmp(s->names[i], name))
			return i;
	cr_assert_fail("no name %s in the trace", name);
	return 0;
}

/* The names, threads and source locations of the file. */
static void read_tables(kt_reader *r, struct seen *s)
{
	kt_trace_frame f;
	int rc;
	while ((rc = kt_reader_next_frame(r, &f)) == 1) {
		if (f.kind == KT_FRAME_NAME && f.u.name.id < MAX_IDS)
			snprintf(s->names[f.u.name.id], sizeof(s->names[0]), "%s", f.u.name.str);
		if (f.kind == KT_FRAME_THREAD && s->nthreads < 8)
			snprintf(s->threads[s->nthreads++], sizeof(s->threads[0]), "%s",
				 f.u.thread.name);
		const kt_track_def *d = kt_trace_frame_get_track(&f);
		if (d && !s->gpu.id) {
			s->gpu = *d;
			memcpy(s->pairs, d->pairs, d->pair_count * sizeof(*d->pairs));
			s->gpu.pairs = s->pairs;
		}
		const kt_srcloc *l = kt_trace_frame_get_srcloc(&f);
		if (l && l->id < MAX_IDS) {
			snprintf(s->loc[l->id].file, sizeof(s->loc[0].file), "%s", l->file);
			snprintf(s->loc[l->id].function, sizeof(s->loc[0].function), "%s",
				 l->function);
			s->loc[l->id].line = l->line;
		}
	}
	cr_assert_eq(rc, 0);
	cr_assert_eq(kt_reader_rewind(r), 0);
}

static int64_t i64_of(const kt_event *e)
{
	int64_t v;
	memcpy(&v, e->payload, 8);
	return v;
}

/* A thread's open zones, innermost last: an argument is its innermost
 * open zone's (none at depth 0). */
struct open_zones {
	uint32_t id[16];
	unsigned depth;
};

/* @track_ts on the gpu track as CLOCK_MONOTONIC ns. */
static uint64_t gpu_ns(kt_reader *r, const struct seen *s, uint64_t track_ts)
{
	uint64_t ticks;
	cr_assert_eq(kt_track_to_ticks(&s->gpu, kt_reader_get_header(r)->clock.tick_hz, track_ts,
				       &ticks), 0);
	return kt_reader_get_time_ns(r, ticks);
}

/* A record of the gpu track: a frame's number starts it, then its zone
 * around three passes. */
static void count_gpu(kt_reader *r, struct seen *s, const kt_event *e)
{
	kt_track_event te;
	cr_assert(kt_event_get_track(e, &te));
	cr_assert_eq(te.track, s->gpu.id, "one track, and it has an entry");
	struct gpu_frame *g = s->ngf ? &s->gf[s->ngf - 1] : NULL;
	int is_frame = e->name_id == id_of(s, "gpu frame");
	if (e->type == KT_EV_TRACK_COUNTER_I64) {
		cr_assert_lt(s->ngf, FRAMES);
		g = &s->gf[s->ngf++];
		g->no = (uint64_t)te.value_i64;
		g->track_begin = te.track_ts;
		return;
	}
	cr_assert_not_null(g, "a gpu zone before its frame's number");
	if (e->type == KT_EV_TRACK_BEGIN) {
		s->bad_nesting += is_frame ? g->depth != 0 || te.track_ts != g->track_begin
					   : g->depth != 1;
		if (is_frame)
			g->begin_ns = gpu_ns(r, s, te.track_ts);
		else if (g->passes < 3)
			g->pass_ticks[g->passes] = te.track_ts;
		g->depth++;
	} else {
		g->depth--;
		s->bad_nesting += g->depth != (is_frame ? 0u : 1u);
		if (is_frame) {
			g->end_ns = gpu_ns(r, s, te.track_ts);
			g->emitted_ns = kt_reader_get_time_ns(r, e->ts);
			g->track_end = te.track_ts;
		} else if (g->passes < 3) {
			g->pass_ticks[g->passes] = te.track_ts - g->pass_ticks[g->passes];
			g->passes++;
		}
	}
}

/* One event of a thread whose open zones are @z. */
static void count_event(struct seen *s, const kt_event *e, struct open_zones *z)
{
	uint32_t integrate = id_of(s, "integrate"), raster = id_of(s, "raster");
	uint32_t inner = z->depth ? z->id[z->depth - 1] : 0;
	s->records++;
	if (e->type == KT_EV_ZONE_BEGIN && e->name_id < MAX_IDS) {
		s->begins[e->name_id]++;
		cr_assert_lt(z->depth, 16u);
		z->id[z->depth++] = e->name_id;
	} else if (e->type == KT_EV_ZONE_END) {
		cr_assert_gt(z->depth, 0u, "an end without a begin");
		cr_assert_eq(z->id[--z->depth], e->name_id, "zones nest");
	} else if (e->type == KT_EV_FRAME && e->name_id == id_of(s, "frame")) {
		s->frames++;
		s->frame_sum += (uint64_t)i64_of(e);
	} else if (e->type == KT_EV_ARG_I64 &&
		   (e->name_id == id_of(s, "first") || e->name_id == id_of(s, "count"))) {
		/* Switched off, a job's zone takes its arguments with it. */
		cr_assert_eq(inner, integrate, "a job's argument outside its zone");
		if (e->name_id == id_of(s, "first"))
			s->firsts++, s->first_sum += (uint64_t)i64_of(e);
		if (e->name_id == id_of(s, "count"))
			s->counts++, s->count_sum += (uint64_t)i64_of(e);
	} else if (e->type == KT_EV_ARG_I64 && e->name_id == 0 && inner == raster) {
		s->raster_values++;
	} else if (e->type == KT_EV_COUNTER_I64 && e->name_id == id_of(s, "lit pixels")) {
		s->lit_counters++;
	} else if (e->type == KT_EV_COUNTER_F64 && e->name_id == id_of(s, "frame ms")) {
		s->ms_counters++;
	} else if (e->type == KT_EV_ALLOC && e->name_id == id_of(s, "framebuffers")) {
		uint64_t size;
		memcpy(&size, e->payload + 8, 8);
		s->allocs++, s->alloc_bytes += size, s->live += size;
		s->peak = s->live > s->peak ? s->live : s->peak;
	} else if (e->type == KT_EV_FREE && e->name_id == id_of(s, "framebuffers")) {
		s->frees++, s->live -= KT_W * KT_H;
	}
}

static void read_example(const char *path, struct seen *s)
{
	kt_reader *r;
	kt_reader_error err;
	cr_assert_eq(kt_reader_open(path, &err, &r), 0, "%s", err.message);
	read_tables(r, s);
	cr_assert_eq(s->gpu.clock_hz, 19200000, "the gpu track's entry");
	static struct open_zones open[16];
	uint32_t present = id_of(s, "present");
	kt_event e;
	int rc;
	while ((rc = kt_reader_next(r, &e)) == 1) {
		cr_assert_lt(e.thread_id, 16u);
		if (e.type >= KT_EV_TRACK_BEGIN && e.type <= KT_EV_TRACK_COUNTER_F64) {
			count_gpu(r, s, &e);
			continue;
		}
		if (e.type == KT_EV_ZONE_BEGIN && e.name_id == present && s->npresent <= FRAMES)
			s->present_ns[s->npresent++] = kt_reader_get_time_ns(r, e.ts);
		count_event(s, &e, &open[e.thread_id]);
	}
	cr_assert_eq(rc, 0);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert(st.complete);
	kt_reader_close(r);
}

static int has_thread(const struct seen *s, const char *name)
{
	for (unsigned i = 0; i < s->nthreads; i++)
		if (!strcmp(s->threads[i], name))
			return 1;
	return 0;
}

static void check_loc(const struct seen *s, const char *zone, const char *function)
{
	uint32_t id = id_of(s, zone);
	cr_assert_str_eq(s->loc[id].file, "examples/particles.cpp", "%s", zone);
	cr_assert_str_eq(s->loc[id].function, function, "%s", zone);
	cr_assert_gt(s->loc[id].line, 0u, "%s", zone);
}

Test(example, particles_records_what_its_frames_did)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/katra-example-%d.katra", (int)getpid());
	unlink(path);
	t_run_example(path, FRAMES, OFF_FROM);
	static struct seen s;
	read_example(path, &s);
	unlink(path);

	cr_assert_eq(s.nthreads, 4u);
	cr_assert(has_thread(&s, "main") && has_thread(&s, "render"));
	cr_assert(has_thread(&s, "worker 0") && has_thread(&s, "worker 1"));
	/* One frame mark per frame, numbered 0..FRAMES-1. */
	cr_assert_eq(s.frames, FRAMES);
	cr_assert_eq(s.frame_sum, (uint64_t)FRAMES * (FRAMES - 1) / 2);
	cr_assert_eq(s.begins[id_of(&s, "update")], FRAMES);
	cr_assert_eq(s.begins[id_of(&s, "present")], FRAMES);
	cr_assert_eq(s.begins[id_of(&s, "raster")], FRAMES);
	cr_assert_eq(s.begins[id_of(&s, "loop")], FRAMES);
	cr_assert_eq(s.begins[id_of(&s, "clear")], FRAMES);
	cr_assert_eq(s.begins[id_of(&s, "plot")], FRAMES);
	/* The physics category honoured: jobs traced only before OFF_FROM. */
	cr_assert_eq(s.begins[id_of(&s, "integrate")], (uint64_t)OFF_FROM * JOBS);
	/* Every traced job's arguments attached: first 0, 2500, ... 17500. */
	cr_assert_eq(s.firsts, (uint64_t)OFF_FROM * JOBS);
	cr_assert_eq(s.first_sum, (uint64_t)OFF_FROM * PER_JOB * JOBS * (JOBS - 1) / 2);
	cr_assert_eq(s.counts, (uint64_t)OFF_FROM * JOBS);
	cr_assert_eq(s.count_sum, (uint64_t)OFF_FROM * JOBS * PER_JOB);
	/* A value on every raster zone, and the counter beside it. */
	cr_assert_eq(s.raster_values, FRAMES);
	cr_assert_eq(s.lit_counters, FRAMES);
	cr_assert_eq(s.ms_counters, FRAMES, "C++'s KT_COUNTER of a double");
	/* Memory balance: a framebuffer per frame, each freed. */
	cr_assert_eq(s.allocs, FRAMES);
	cr_assert_eq(s.frees, FRAMES);
	cr_assert_eq(s.alloc_bytes, (uint64_t)FRAMES * KT_W * KT_H);
	cr_assert_eq(s.live, 0);
	cr_assert_eq(s.peak, (uint64_t)KT_W * KT_H);
	check_loc(&s, "update", "frames");
	check_loc(&s, "integrate", "integrate");
	check_loc(&s, "raster", "raster");
	check_loc(&s, "present", "submit");
}

/*
 * The simulated GPU queue's track (its own 19.2 MHz clock, results a frame
 * or more late, in batches): every frame once, in order, as a "gpu frame"
 * zone around three passes of exactly their lengths on the GPU's clock;
 * converted to katra's clock, each lies after its own frame's submission
 * (the "present" zone that handed the frame over began before it) and
 * before the batch that reported it, and follows the frame before.
 */
Test(example, gpu_track_zones_land_in_their_frames)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/katra-example-gpu-%d.katra", (int)getpid());
	unlink(path);
	t_run_example(path, FRAMES, OFF_FROM);
	static struct seen s;
	read_example(path, &s);
	unlink(path);
	cr_assert_geq(s.gpu.pair_count, (unsigned)(1 + FRAMES / 16), "calibrated as it ran");
	cr_assert_eq(s.npresent, FRAMES);
	cr_assert_eq(s.ngf, FRAMES);
	cr_assert_eq(s.bad_nesting, 0);
	for (unsigned f = 0; f < FRAMES; f++) {
		const struct gpu_frame *g = &s.gf[f];
		cr_assert_eq(g->no, f, "frames in order");
		cr_assert_eq(g->passes, 3, "frame %u", f);
		cr_assert_eq(g->depth, 0, "frame %u", f);
		cr_assert_eq(g->pass_ticks[0], 1920, "shadow, frame %u", f);
		cr_assert_eq(g->pass_ticks[1], 3840, "opaque, frame %u", f);
		cr_assert_eq(g->pass_ticks[2], 960, "post, frame %u", f);
		cr_assert_eq(g->track_end - g->track_begin, 6720);
		cr_assert_gt(g->begin_ns, s.present_ns[f], "frame %u ran after its submission", f);
		cr_assert_lt(g->end_ns, g->emitted_ns, "frame %u reported after it ended", f);
		if (f)
			cr_assert_geq(g->begin_ns, s.gf[f - 1].end_ns, "frame %u after the last", f);
	}
}
