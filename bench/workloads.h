/*
 * bench/workloads.h - the workload corpus beside the frame loop: what
 * users emit, written once for ringbench (through the producer API,
 * ringbench_workloads.c) and codecbench (records laid out as in a ring,
 * on a synthetic clock, codecbench_workloads.c).
 *
 *   renderer  a tinyrenderer-shaped software rasteriser: two tile
 *             threads; every triangle a zone with a pixel-count argument
 *             (a third of them back-facing: no pixel, a zone and its
 *             argument alone), every shaded pixel a zone of one name in
 *             a category; per frame a tile zone, buffers allocated and
 *             freed at heap-like addresses, a frame mark and a counter.
 *   interp    an interpreter with every call traced (Lua's hook shape):
 *             one thread, call trees up to 40 deep over 400 function
 *             names on a fixed call graph, a fifth of the calls C
 *             functions with no callee.
 *   jobs      a job system: a scheduler thread that dispatches jobs
 *             (a zone and a flow begin per job) and workers that run
 *             them (the flow's end, a short zone of one of 24 kinds,
 *             sometimes a nested one and a counter).
 *
 * The includer defines, before including this file:
 *   WL_REC(type, id, flags, payload, len)   one record of the thread
 *   WL_WORK(ticks)                           the program's own work
 * and gets, per shape, wl_<shape>_unit(&state, thread, n): the thread's
 * @n-th unit of work, returning the records it emitted.  A unit is a few
 * to a few hundred records, so a pacer between units keeps a rate.
 *
 * Names: every shape's ids are WL_NAME_BASE + the offsets below, which
 * the includer interns (ringbench) or writes (codecbench) as
 * wl_name_text() spells them.
 */
#ifndef KATRA_BENCH_WORKLOADS_H
#define KATRA_BENCH_WORKLOADS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <katra/record.h>

#if !defined(WL_REC) || !defined(WL_WORK)
#error "define WL_REC and WL_WORK before including bench/workloads.h"
#endif

/* The names every shape uses, in one table: index = id - 1 where the
 * includer's names are numbered from 1. */
enum {
	WL_FRAME = 1, WL_TILE, WL_TRIANGLE, WL_PIXELS, WL_SHADE, WL_FRAME_MS, WL_POOL,
	WL_DISPATCH, WL_HANDOFF, WL_QUEUE, WL_JOB0,           /* 24 job kinds */
	WL_FN0 = WL_JOB0 + 24,                               /* 400 functions */
	WL_NAMES = WL_FN0 + 400 - 1
};

#define WL_JOBS 24u
#define WL_FNS 400u

/* The spelling of name @id (1..WL_NAMES) into @s. */
static inline int wl_name_text(uint32_t id, char *s, size_t cap)
{
	static const char *const fixed[] = { "frame", "render_tile", "triangle", "pixels",
					     "shade_pixel", "frame_ms", "framebuffers",
					     "dispatch", "job_handoff", "queue_depth" };
	if (id >= 1 && id < WL_JOB0)
		return snprintf(s, cap, "%s", fixed[id - 1]);
	if (id < WL_FN0)
		return snprintf(s, cap, "job_kind_%u", id - WL_JOB0);
	return snprintf(s, cap, "lua_fn_%u", id - WL_FN0);
}

/* A thread's state: its random stream and what each shape keeps. */
struct wl_state {
	uint64_t rng;
	uint64_t frame;
	uint64_t heap;          /* the next heap-like address */
	uint64_t bufs[4];       /* renderer: the frame's live buffers */
	uint32_t stack[48];     /* interp: the open calls */
};

static inline void wl_state_init(struct wl_state *s, int thread)
{
	memset(s, 0, sizeof(*s));
	s->rng = 0x9E3779B97F4A7C15u * (uint64_t)(thread + 1);
	s->heap = UINT64_C(0x5581a2c00000) + (uint64_t)thread * UINT64_C(0x10000000);
}

static inline uint64_t wl_rnd(struct wl_state *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return s->rng;
}

static inline void wl_u64(uint8_t type, uint32_t id, uint8_t flags, uint64_t v)
{
	WL_REC(type, id, flags, &v, 8);
}

/* ---- renderer ------------------------------------------------------------ */

/* Triangles per frame per tile thread: a 2,500-triangle model, half each. */
#define WL_TRIANGLES 1250u

/* A malloc-like address for @size bytes: 16-aligned, sizes rounded up,
 * freed blocks not reused in order, as a real heap's are not. */
static inline uint64_t wl_malloc(struct wl_state *s, uint64_t size)
{
	uint64_t p = s->heap;
	s->heap += ((size + 31) & ~(uint64_t)15) + (wl_rnd(s) % 4) * 16;
	return p;
}

/* A frame's start or end on a tile thread: the tile zone, the frame's
 * buffers (depth, colour, two vertex buffers) and, on thread 0, the
 * frame mark and the frame time. */
static inline unsigned wl_frame_edge(struct wl_state *s, int thread, int start)
{
	static const uint64_t sizes[4] = { 800 * 400 * 4, 800 * 400 * 4, 2500 * 36, 2500 * 48 };
	uint64_t pl[2];
	unsigned n = 0;
	if (!start) {
		for (int i = 0; i < 4; i++, n++)
			wl_u64(KT_EV_FREE, WL_POOL, 0, s->bufs[i]);
		WL_REC(KT_EV_ZONE_END, WL_TILE, 0, NULL, 0);
		n++;
		if (thread == 0) {
			wl_u64(KT_EV_FRAME, WL_FRAME, 0, s->frame);
			double ms = 14.0 + (double)(wl_rnd(s) % 4000) / 1000.0;
			WL_REC(KT_EV_COUNTER_F64, WL_FRAME_MS, 0, &ms, 8);
			n += 2;
		}
		s->frame++;
		return n;
	}
	WL_REC(KT_EV_ZONE_BEGIN, WL_TILE, 0, NULL, 0);
	for (int i = 0; i < 4; i++) {
		s->bufs[i] = wl_malloc(s, sizes[i]);
		pl[0] = s->bufs[i];
		pl[1] = sizes[i];
		WL_REC(KT_EV_ALLOC, WL_POOL, 0, pl, 16);
	}
	return 5;
}

/* Pixels a triangle covers: a third back-facing (0), the rest mostly
 * small, a few large (the model's near faces). */
static inline uint64_t wl_pixels(struct wl_state *s)
{
	uint64_t x = wl_rnd(s);
	if (x % 3 == 0)
		return 0;
	uint64_t r = (x >> 8) % 100;
	return r < 70 ? 1 + (x >> 16) % 12 : r < 95 ? 12 + (x >> 16) % 40 : 50 + (x >> 16) % 300;
}

/* Unit @n of a tile thread: one triangle (and the frame's edges). */
static inline unsigned wl_renderer_unit(struct wl_state *s, int thread, uint64_t n)
{
	unsigned ev = 0;
	uint64_t t = n % WL_TRIANGLES;
	if (t == 0)
		ev += wl_frame_edge(s, thread, 1);
	uint64_t px = wl_pixels(s);
	WL_REC(KT_EV_ZONE_BEGIN, WL_TRIANGLE, 0, NULL, 0);
	wl_u64(KT_EV_ARG_U64, WL_PIXELS, 0, px);
	WL_WORK(60); /* the bounding box, the barycentric set-up */
	for (uint64_t i = 0; i < px; i++) {
		uint64_t x = wl_rnd(s);
		WL_REC(KT_EV_ZONE_BEGIN, WL_SHADE, 0, NULL, 0);
		WL_WORK(60 + x % 160); /* the fragment shader: texture, normal map */
		WL_REC(KT_EV_ZONE_END, WL_SHADE, 0, NULL, 0);
		WL_WORK(8 + (x >> 8) % 64); /* the box's pixels outside the triangle */
	}
	WL_REC(KT_EV_ZONE_END, WL_TRIANGLE, 0, NULL, 0);
	ev += 3 + 2 * (unsigned)px;
	if (t == WL_TRIANGLES - 1)
		ev += wl_frame_edge(s, thread, 0);
	return ev;
}

/* ---- interp -------------------------------------------------------------- */

/* Function @f's @i-th callee on the fixed call graph: a few hot helpers
 * called from everywhere, the rest near @f, and itself now and then
 * (recursion). */
static inline uint32_t wl_callee(uint32_t f, uint64_t i)
{
	uint64_t h = ((uint64_t)f * 0x9E3779B97F4A7C15u + i * 0xBF58476D1CE4E5B9u) >> 40;
	if (h % 8 == 0)
		return (uint32_t)(h >> 8) % 12;  /* string/table helpers */
	if (h % 8 == 1)
		return f;
	return (f + 1 + (uint32_t)(h >> 8) % 24) % WL_FNS;
}

/* Unit @n: one call tree from the main loop's dispatcher, depth-first
 * on an explicit stack, at most 300 calls. */
static inline unsigned wl_interp_unit(struct wl_state *s, int thread, uint64_t n)
{
	(void)thread;
	unsigned depth = 0, ev = 0, calls = 0;
	uint32_t root = 12 + (uint32_t)(n % 64);
	uint64_t sites[48];
	s->stack[depth] = root;
	sites[depth++] = 0;
	WL_REC(KT_EV_ZONE_BEGIN, WL_FN0 + root, 0, NULL, 0);
	ev++;
	while (depth) {
		uint32_t f = s->stack[depth - 1];
		uint64_t x = wl_rnd(s);
		/* Another call from here, or the return: deeper frames call
		 * less, C functions (a fifth of the names) never. */
		int call = f % 5 != 4 && depth < 40 && calls < 300 && x % 16 < 10 - depth / 5;
		WL_WORK(12 + (x >> 8) % 40);
		if (call) {
			uint32_t g = wl_callee(f, sites[depth - 1]++ % 6);
			s->stack[depth] = g;
			sites[depth++] = 0;
			WL_REC(KT_EV_ZONE_BEGIN, WL_FN0 + g, 0, NULL, 0);
			calls++;
		} else {
			depth--;
			WL_REC(KT_EV_ZONE_END, WL_FN0 + f, 0, NULL, 0);
		}
		ev++;
	}
	return ev;
}

/* ---- jobs ---------------------------------------------------------------- */

/* Unit @n of thread @thread: on thread 0 a dispatch of 4 jobs, on the
 * others one job.  Job ids are the scheduler's count, so a worker's
 * flows end out of order with the other workers' (@workers of them). */
static inline unsigned wl_jobs_unit(struct wl_state *s, int thread, uint64_t n, int workers)
{
	if (thread == 0) {
		WL_REC(KT_EV_ZONE_BEGIN, WL_DISPATCH, 0, NULL, 0);
		for (uint64_t j = 0; j < 4; j++) {
			WL_WORK(30);
			wl_u64(KT_EV_FLOW, WL_HANDOFF, KT_FLOW_BEGIN, 4 * n + j);
		}
		int64_t depth = (int64_t)(wl_rnd(s) % 64);
		WL_REC(KT_EV_COUNTER_I64, WL_QUEUE, 0, &depth, 8);
		WL_REC(KT_EV_ZONE_END, WL_DISPATCH, 0, NULL, 0);
		return 7;
	}
	uint64_t x = wl_rnd(s);
	uint64_t job = n * (uint64_t)workers + (uint64_t)(thread - 1);
	uint32_t kind = WL_JOB0 + (uint32_t)(x % 7 ? x % 6 : (x >> 8) % WL_JOBS);
	unsigned ev = 3;
	wl_u64(KT_EV_FLOW, WL_HANDOFF, KT_FLOW_END, job);
	WL_REC(KT_EV_ZONE_BEGIN, kind, 0, NULL, 0);
	WL_WORK(80 + (x >> 16) % 400);
	if ((x >> 32) % 4 == 0) {
		uint32_t sub = WL_JOB0 + (uint32_t)(x >> 40) % WL_JOBS;
		WL_REC(KT_EV_ZONE_BEGIN, sub, 0, NULL, 0);
		WL_WORK(50 + (x >> 48) % 100);
		WL_REC(KT_EV_ZONE_END, sub, 0, NULL, 0);
		ev += 2;
	}
	WL_REC(KT_EV_ZONE_END, kind, 0, NULL, 0);
	return ev;
}

#endif /* KATRA_BENCH_WORKLOADS_H */
