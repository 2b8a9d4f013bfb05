/*
 * perfetto_sched.c - scheduler records as sched_switch events;
 * perfetto_sched.h says how.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/export/perfetto_pb.h"
#include "tools/export/perfetto_sched.h"
#include "tools/pipeline/text.h"

#define CLOCK_REALTIME_ID 1
#define CLOCK_MONO_ID 3

static char idle[] = "swapper";

/* One packet's parts. */
struct psched {
	Perfetto__Protos__TracePacket pk;
	Perfetto__Protos__FtraceEventBundle bundle;
	Perfetto__Protos__FtraceEvent ev, *evp;
	Perfetto__Protos__SchedSwitchFtraceEvent sw;
	char *comm; /* the thread's name, well-formed UTF-8 */
};

void pf_put_packet(struct xout *o, const Perfetto__Protos__TracePacket *pk)
{
	size_t n = perfetto__protos__trace_packet__get_packed_size(pk);
	uint8_t *d = xout_room(o, n + 11);
	if (!d)
		return;
	*d++ = 1 << 3 | 2;
	d = put_varint(d, n);
	perfetto__protos__trace_packet__pack(pk, d);
	xout_commit(o, d + n);
}

size_t psched_clocks(const kt_header *h, uint32_t ids[3], uint64_t vals[3])
{
	size_t n = 0;
	ids[n] = CLOCK_MONO_ID;
	vals[n++] = h->start_mono_ns;
	if (h->flags & KT_HDR_SCHED) {
		ids[n] = PSCHED_CLOCK_BOOTTIME;
		vals[n++] = h->start_mono_ns;
	}
	if (h->start_wall_ns) {
		ids[n] = CLOCK_REALTIME_ID;
		vals[n++] = h->start_wall_ns;
	}
	return n;
}

/* The packet for @ev in @x: 1, 0 for a record with none, or -ENOMEM. */
static int psched_fill(struct psched *x, const struct tables *t, const kt_event *ev, uint64_t ns)
{
	kt_value v;
	memset(x, 0, sizeof(*x));
	if (!kt_event_get_value(ev, &v) || !v.thread ||
	    (ev->flags != KT_SCHED_BLOCKED && ev->flags != KT_SCHED_PREEMPTED &&
	     ev->flags != KT_SCHED_IN))
		return 0;
	size_t n = 0;
	const char *name = tables_thread(t, v.thread, &n);
	if (!(x->comm = text_utf8(name ? name : "", name ? n : 0, NULL)))
		return -ENOMEM;
	int32_t tid = (int32_t)export_os_tid(t, v.thread);
	perfetto__protos__sched_switch_ftrace_event__init(&x->sw);
	x->sw.has_prev_pid = x->sw.has_next_pid = x->sw.has_prev_state = 1;
	x->sw.has_prev_prio = x->sw.has_next_prio = 1;
	x->sw.prev_prio = x->sw.next_prio = 120; /* a normal task's */
	if (ev->flags == KT_SCHED_IN) {
		x->sw.prev_comm = idle;
		x->sw.next_comm = x->comm;
		x->sw.next_pid = tid;
	} else {
		x->sw.prev_comm = x->comm;
		x->sw.prev_pid = tid;
		x->sw.prev_state = ev->flags == KT_SCHED_BLOCKED ? 1 : 0;
		x->sw.next_comm = idle;
	}
	perfetto__protos__ftrace_event__init(&x->ev);
	x->ev.has_timestamp = x->ev.has_pid = 1;
	x->ev.timestamp = ns;
	x->ev.pid = (uint32_t)(ev->flags == KT_SCHED_IN ? 0 : tid);
	x->ev.event_case = PERFETTO__PROTOS__FTRACE_EVENT__EVENT_SCHED_SWITCH;
	x->ev.sched_switch = &x->sw;
	x->evp = &x->ev;
	perfetto__protos__ftrace_event_bundle__init(&x->bundle);
	x->bundle.has_cpu = 1;
	x->bundle.cpu = v.cpu;
	x->bundle.n_event = 1;
	x->bundle.event = &x->evp;
	perfetto__protos__trace_packet__init(&x->pk);
	x->pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_FTRACE_EVENTS;
	x->pk.ftrace_events = &x->bundle;
	return 1;
}

int psched_put(struct xout *o, const struct tables *t, const kt_event *ev, uint64_t ns)
{
	struct psched x;
	int rc = psched_fill(&x, t, ev, ns);
	if (rc > 0)
		pf_put_packet(o, &x.pk);
	free(x.comm);
	return rc < 0 ? rc : o->failed ? -EIO : 0;
}
