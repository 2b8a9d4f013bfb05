/*
 * The workload corpus (bench/workloads.h) for ringbench: each record
 * through kt_emit(), as the API's inline emits make it, each name a
 * kt_name() id, the renderer's per-pixel zone a site in the category
 * "shading" (what KT_ZONE_C interns).  The program's own work between
 * records is a short spin, so the timestamps are spaced as a real
 * program's are.
 */
#include <string.h>

#include <katra/katra.h>
#include "bench/ringbench_workloads.h"

static uint32_t wl_ids[1 + 434];

int rb_workload_untraced;

/* Untraced, a branch that goes one way the whole run is all that is left
 * of an emit. */
#define WL_REC(type, id, flags, payload, len)                                  \
	do {                                                                   \
		if (!rb_workload_untraced)                                      \
			kt_emit(type, wl_ids[id], flags, payload, len);         \
	} while (0)
#define WL_WORK(ticks) wl_spin(ticks)

static inline void wl_spin(uint64_t ticks)
{
	/* About a tick an iteration; the asm keeps the loop. */
	for (uint64_t i = 0; i < ticks / 2; i++)
		__asm__ volatile("" ::: "memory");
}

#include "bench/workloads.h"

_Static_assert(WL_NAMES + 1 <= sizeof(wl_ids) / sizeof(wl_ids[0]), "wl_ids too small");

static _Thread_local struct wl_state st;

static void setup(void)
{
	static kt_site shade = { "shade_pixel", __FILE__, "shade", "shading", __LINE__, 0,
				 &kt__flag_on };
	char s[32];
	for (uint32_t id = 1; id <= WL_NAMES; id++) {
		wl_name_text(id, s, sizeof(s));
		wl_ids[id] = kt_name(s);
	}
	wl_ids[WL_SHADE] = kt_site_id(&shade);
}

static unsigned renderer(int thread, int threads, uint64_t n)
{
	(void)threads;
	if (n == 0)
		wl_state_init(&st, thread);
	return wl_renderer_unit(&st, thread % 2, n);
}

static unsigned interp(int thread, int threads, uint64_t n)
{
	(void)threads;
	if (n == 0)
		wl_state_init(&st, thread);
	return wl_interp_unit(&st, thread, n);
}

static unsigned jobs(int thread, int threads, uint64_t n)
{
	if (n == 0)
		wl_state_init(&st, thread);
	/* The scheduler dispatches 4 jobs a unit: its pace is the
	 * workers' over 4, so it runs one unit in threads - 1. */
	return wl_jobs_unit(&st, thread, n, threads > 1 ? threads - 1 : 1);
}

static const char *tile_name(int thread)
{
	return thread % 2 ? "tile_1" : "tile_0";
}

static const char *interp_name(int thread)
{
	(void)thread;
	return "lua";
}

static const char *jobs_name(int thread)
{
	return thread ? "worker" : "scheduler";
}

static const struct rb_workload table[] = {
	{ "renderer", "ringbench renderer", 2, setup, tile_name, renderer },
	{ "interp", "ringbench interp", 1, setup, interp_name, interp },
	{ "jobs", "ringbench jobs", 6, setup, jobs_name, jobs },
};

const struct rb_workload *rb_workload_find(const char *name)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (!strcmp(table[i].name, name))
			return &table[i];
	return NULL;
}
