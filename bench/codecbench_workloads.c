/*
 * The workload corpus (bench/workloads.h) for codecbench: records laid
 * out by the trace builder (codecbench.h) on a synthetic clock, so that
 * a kind's chunks are the same bytes in every run, whatever the machine's
 * load.  The clock advances by an emit's own cost (24 ticks, a few more
 * now and then, about 10 ns of a 2.4 GHz TSC) per record, plus the work
 * the workload says the program does between records.
 */
#include <katra/katra.h>
#include "bench/codecbench.h"

static _Thread_local struct builder *cur;

static inline void wl_rec(uint8_t type, uint32_t id, uint8_t flags, const void *p, size_t len)
{
	cur->clock += 24 + (rnd(cur) % 16 == 0 ? 8 + rnd(cur) % 32 : 0);
	emit(cur, type, id, flags, p, len);
}

#define WL_REC(type, id, flags, payload, len) wl_rec(type, id, flags, payload, len)
#define WL_WORK(ticks) (cur->clock += (ticks))

#include "bench/workloads.h"

/* Each kind's thread: units until the builder's target. */
#define WL_THREAD(kind, call)                                                           \
	static void *kind##_thread(void *arg)                                           \
	{                                                                               \
		struct builder *b = cur = arg;                                          \
		struct wl_state s;                                                      \
		int thread = (int)b->tid - 1;                                           \
		wl_state_init(&s, thread);                                              \
		for (uint64_t n = 0; b->events < b->target; n++)                        \
			call;                                                           \
		builder_flush(b);                                                       \
		return NULL;                                                            \
	}
WL_THREAD(renderer, wl_renderer_unit(&s, thread % 2, n))
WL_THREAD(interp, wl_interp_unit(&s, thread, n))
WL_THREAD(jobs, wl_jobs_unit(&s, thread, n, b->threads > 1 ? b->threads - 1 : 1))

void *(*cb_workload(const char *kind, int *threads))(void *)
{
	if (!strcmp(kind, "renderer"))
		return *threads = 2, renderer_thread;
	if (!strcmp(kind, "interp"))
		return *threads = 1, interp_thread;
	if (!strcmp(kind, "jobs"))
		return *threads = 6, jobs_thread;
	return NULL;
}

void cb_workload_names(kt_writer *w)
{
	char s[32];
	for (uint32_t id = 1; id <= WL_NAMES; id++) {
		int n = wl_name_text(id, s, sizeof(s));
		if (kt_writer_name(w, id, s, (size_t)n))
			die("writing a name", 0);
	}
}
