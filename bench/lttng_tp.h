/*
 * The LTTng-UST tracepoint ringbench's peer row emits: one integer, the
 * same zone-begin as katra's row.  Built only where lttng-ust is found.
 */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER katra_bench

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "bench/lttng_tp.h"

#if !defined(KATRA_BENCH_LTTNG_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define KATRA_BENCH_LTTNG_TP_H

#include <lttng/tracepoint.h>

TRACEPOINT_EVENT(katra_bench, zone_begin,
	TP_ARGS(unsigned int, id),
	TP_FIELDS(ctf_integer(unsigned int, id, id)))

#endif

#include <lttng/tracepoint-event.h>
