/*
 * export_perfetto.c - a trace as Perfetto protobuf; export_perfetto.h says
 * what is written.
 *
 * The packets written once per trace, thread, name or counter go through
 * the protobuf-c code generated from tools/export/perfetto_trace.proto.  The
 * packets written once per event are encoded here by hand, a few varints
 * into a stack buffer: protobuf-c's packer walks every field's descriptor
 * for each message, which at tens of millions of events was most of the
 * export's time.  The tests decode both kinds with protoc against the
 * same .proto.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/export/export_perfetto.h"
#include "tools/export/export_args.h"
#include "tools/export/perfetto_pack.h"
#include "tools/export/perfetto_pb.h"
#include "tools/export/perfetto_procs.h"
#include "tools/export/perfetto_sched.h"
#include "tools/export/perfetto_samples.h"
#include "tools/export/perfetto_slice.h"
#include "tools/export/perfetto_trace.pb-c.h"
#include "tools/pipeline/memstats.h"
#include "tools/pipeline/fmt_mid.h"
#include "tools/pipeline/tracks.h"
#include "tools/pipeline/pipe.h"
#include "tools/pipeline/text.h"

typedef Perfetto__Protos__TracePacket Packet;
typedef Perfetto__Protos__TrackDescriptor TrackDesc;

#define SEQ_GLOBAL 1
#define SEQ_CLEARED 1       /* SEQ_INCREMENTAL_STATE_CLEARED */
#define SEQ_NEEDS 2         /* SEQ_NEEDS_INCREMENTAL_STATE */
#define CLOCK_MONO_ID 3
#define CLOCK_SEQ_ID 64     /* a sequence's own clock: incremental ns */
#define PRIO_INFO 4

/* Names below SEEN_NAMES on threads below SEEN_THREADS are remembered
 * interned in a bitmap (512 KiB, zero pages until used), the rest in a hash. */
#define SEEN_NAMES 1024u
#define SEEN_THREADS 4096u

enum { TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };

/* Debug annotation names, interned on every sequence with these iids. */
enum { ANN_FRAME = 1, ANN_SUBTYPE, ANN_BYTES, ANN_CLOSED, ANN_COUNT };
static const char *const ann_names[ANN_COUNT] = { NULL, "frame", "subtype", "bytes", "closed" };

struct pf {
	struct xstate xs;
	struct xout out;
	kt_reader *r;
	const struct tables *t;
	struct idmap interned;  /* thread index << 32 | name -> 1 */
	uint64_t *seen;         /* bits, SEEN_NAMES per thread: interned without a hash */
	struct idmap counters;  /* name -> 1 once its track is described */
	struct idmap pools;     /* pool -> 1 once its memory track is described */
	struct memstats mem;    /* the pools' live bytes */
	struct tracks tracks;   /* zones of tracks with a clock of their own */
	struct idmap track_counters; /* TRACK_COUNTER_UUID -> 1 once described */
	uint64_t bodies;        /* log message bodies interned so far */
	struct pslices slices;  /* per thread: flows on their slices */
	int err;                /* -ENOMEM once out of memory */
	struct psamples *samples; /* or NULL: no stack entries */
};

/*
 * One TracePacket {timestamp (delta on clock 64), sequence, flags,
 * track_event} of thread @t at @ns.  A time before the sequence's last one
 * (a hostile file's) goes out as a delta of 0: Perfetto's deltas are
 * unsigned.  Every event needs the sequence's incremental state: its clock
 * and track are the sequence's defaults, and most name interned data.
 */
static void put_event_x(struct pf *p, struct xthread *t, uint64_t ns, const struct pb *te,
			const uint8_t *x, size_t xn)
{
	uint8_t head[32], *h = head;
	uint64_t delta = ns > t->last_out ? ns - t->last_out : 0;
	t->last_out += delta;
	*h++ = 8 << 3;
	h = put_varint(h, delta);
	*h++ = 10 << 3;
	h = put_varint(h, t->index + 2);
	*h++ = 13 << 3;
	*h++ = SEQ_NEEDS;
	*h++ = 11 << 3 | 2;
	h = put_varint(h, te->n + xn);
	size_t hn = (size_t)(h - head), n = hn + te->n + xn;
	uint8_t *o = xout_room(&p->out, n + 11);
	if (!o)
		return;
	*o++ = 1 << 3 | 2;
	o = put_varint(o, n);
	memcpy(o, head, hn);
	memcpy(o + hn, te->b, te->n);
	if (xn)
		memcpy(o + hn + te->n, x, xn);
	xout_commit(&p->out, o + n);
}

/* @t's slices (tools/export/perfetto_slice.h); NULL with p->err set when out of
 * memory. */
static struct pslice *slice_of(struct pf *p, struct xthread *t)
{
	struct pslice *s = pslice_of(&p->slices, t->index);
	if (!s)
		p->err = -ENOMEM;
	return s;
}

static void put_event(struct pf *p, struct xthread *t, uint64_t ns, const struct pb *te)
{
	put_event_x(p, t, ns, te, NULL, 0);
}

/* ---- packets through protobuf-c ---- */

static void put_packet(struct pf *p, const Packet *pk)
{
	pf_put_packet(&p->out, pk);
}

/* A packet of sequence @seq stamped @ns on the monotonic clock itself (not
 * a delta of the sequence's incremental clock). */
static Packet mono_packet(uint32_t seq, uint64_t ns)
{
	Packet pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	pk.has_trusted_packet_sequence_id = pk.has_timestamp = pk.has_timestamp_clock_id = 1;
	pk.trusted_packet_sequence_id = seq;
	pk.timestamp = ns;
	pk.timestamp_clock_id = CLOCK_MONO_ID;
	return pk;
}

/* @n bytes of @s as well-formed UTF-8, NUL-terminated (free() it); NULL
 * when out of memory (noted in p->err). */
static char *utf8(struct pf *p, const char *s, size_t n)
{
	char *u = text_utf8(s ? s : "", s ? n : 0, NULL);
	if (!u)
		p->err = -ENOMEM;
	return u;
}

static char *name_of(struct pf *p, uint32_t id)
{
	size_t n = 0;
	const char *s = id ? tables_name(p->t, id, &n) : NULL;
	return utf8(p, s ? s : "?", s ? n : 1);
}

static void put_track(struct pf *p, uint32_t seq, TrackDesc *td)
{
	Packet pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	pk.has_trusted_packet_sequence_id = 1;
	pk.trusted_packet_sequence_id = seq;
	pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
	pk.track_descriptor = td;
	put_packet(p, &pk);
}

/* Clocks at one instant: @n of them, ids and values. */
static void put_clocks(struct pf *p, uint32_t seq, uint64_t ns, const uint32_t *ids,
		       const uint64_t *vals, size_t n, int primary)
{
	Perfetto__Protos__ClockSnapshot__Clock c[3], *cp[3];
	Perfetto__Protos__ClockSnapshot cs = PERFETTO__PROTOS__CLOCK_SNAPSHOT__INIT;
	for (size_t i = 0; i < n; i++) {
		perfetto__protos__clock_snapshot__clock__init(&c[i]);
		c[i].has_clock_id = c[i].has_timestamp = 1;
		c[i].clock_id = ids[i];
		c[i].timestamp = vals[i];
		c[i].has_is_incremental = c[i].is_incremental = ids[i] == CLOCK_SEQ_ID;
		cp[i] = &c[i];
	}
	cs.n_clocks = n;
	cs.clocks = cp;
	cs.has_primary_trace_clock = primary;
	cs.primary_trace_clock = CLOCK_MONO_ID;
	Packet pk = mono_packet(seq, ns);
	pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT;
	pk.clock_snapshot = &cs;
	put_packet(p, &pk);
}

/* Sequence 1: the trace's clocks, its process and its Frames track. */
static void put_trace_start(struct pf *p)
{
	const kt_header *h = kt_reader_get_header(p->r);
	uint32_t ids[3]; /* with scheduler records, ftrace's clock too */
	uint64_t vals[3];
	Packet first = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	first.has_trusted_packet_sequence_id = first.has_sequence_flags = 1;
	first.has_first_packet_on_sequence = first.first_packet_on_sequence = 1;
	first.trusted_packet_sequence_id = SEQ_GLOBAL;
	first.sequence_flags = SEQ_CLEARED;
	Perfetto__Protos__ProcessDescriptor pd;
	TrackDesc td;
	const char *own = h->workload && *h->workload ? h->workload : "katra trace";
	for (size_t i = 0; i < (tables_multiprocess(p->t) ? p->t->nprocs : 1); i++) {
		if (perfetto_proc_desc(p->t, i, h->process_id, own, &td, &pd))
			p->err = -ENOMEM;
		first.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
		first.track_descriptor = &td;
		put_packet(p, &first); /* the first packet, then the others' */
		free(pd.process_name);
		first = (Packet)PERFETTO__PROTOS__TRACE_PACKET__INIT;
		first.has_trusted_packet_sequence_id = 1;
		first.trusted_packet_sequence_id = SEQ_GLOBAL;
	}
	put_clocks(p, SEQ_GLOBAL, h->start_mono_ns, ids, vals, psched_clocks(h, ids, vals), 1);
	TrackDesc fr = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	fr.has_uuid = fr.has_parent_uuid = 1;
	fr.uuid = FRAMES_UUID;
	fr.parent_uuid = PROCESS_UUID;
	fr.name = "Frames";
	put_track(p, SEQ_GLOBAL, &fr);
}

/* The debug annotation names every sequence may use, interned. */
static void fill_ann_names(Perfetto__Protos__InternedData *in,
			   Perfetto__Protos__DebugAnnotationName *dn,
			   Perfetto__Protos__DebugAnnotationName **dp)
{
	for (unsigned i = 1; i < ANN_COUNT; i++) {
		perfetto__protos__debug_annotation_name__init(&dn[i]);
		dn[i].has_iid = 1;
		dn[i].iid = i;
		dn[i].name = (char *)ann_names[i];
		dp[i - 1] = &dn[i];
	}
	in->n_debug_annotation_names = ANN_COUNT - 1;
	in->debug_annotation_names = dp;
}

/* Thread @t's first packets, at @ns: state cleared, defaults, its track,
 * the annotation names; then the snapshot that starts its clock. */
static void put_seq_start(struct pf *p, struct xthread *t, uint64_t ns)
{
	const kt_header *h = kt_reader_get_header(p->r);
	uint32_t seq = t->index + 2;
	Perfetto__Protos__TrackEventDefaults ted = PERFETTO__PROTOS__TRACK_EVENT_DEFAULTS__INIT;
	ted.has_track_uuid = 1;
	ted.track_uuid = THREAD_UUID(t->id);
	Perfetto__Protos__TracePacketDefaults def = PERFETTO__PROTOS__TRACE_PACKET_DEFAULTS__INIT;
	def.has_timestamp_clock_id = 1;
	def.timestamp_clock_id = CLOCK_SEQ_ID;
	def.track_event_defaults = &ted;
	Perfetto__Protos__InternedData in = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	Perfetto__Protos__DebugAnnotationName dn[ANN_COUNT], *dp[ANN_COUNT];
	fill_ann_names(&in, dn, dp);
	size_t len = 0;
	const char *tn = tables_thread(p->t, t->id, &len);
	Perfetto__Protos__ThreadDescriptor thd = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
	thd.has_pid = thd.has_tid = 1;
	thd.tid = (int32_t)export_os_tid(p->t, t->id);
	thd.thread_name = tn && len ? utf8(p, tn, len) : NULL;
	TrackDesc td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	td.has_uuid = td.has_parent_uuid = 1;
	td.uuid = THREAD_UUID(t->id);
	td.parent_uuid = perfetto_thread_parent(p->t, t->id, h->process_id, &thd.pid);
	td.thread = &thd;
	Packet pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	pk.has_trusted_packet_sequence_id = pk.has_sequence_flags = 1;
	pk.has_first_packet_on_sequence = pk.first_packet_on_sequence = 1;
	pk.trusted_packet_sequence_id = seq;
	pk.sequence_flags = SEQ_CLEARED;
	pk.trace_packet_defaults = &def;
	pk.interned_data = &in;
	pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
	pk.track_descriptor = &td;
	put_packet(p, &pk);
	free(thd.thread_name);
	uint32_t ids[2] = { CLOCK_MONO_ID, CLOCK_SEQ_ID };
	uint64_t vals[2] = { ns, ns };
	put_clocks(p, seq, ns, ids, vals, 2, 0);
	t->last_out = ns;
}

/* A packet of @t's sequence holding only interned data, ahead of the
 * event that uses it. */
static void put_interned(struct pf *p, struct xthread *t, Perfetto__Protos__InternedData *in)
{
	Packet pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	pk.has_trusted_packet_sequence_id = 1;
	pk.trusted_packet_sequence_id = t->index + 2;
	pk.has_sequence_flags = 1;
	pk.sequence_flags = SEQ_NEEDS; /* adds to the state the first packet cleared */
	pk.interned_data = in;
	put_packet(p, &pk);
}

/* The source location of name @id, when the file gives one, into @sl
 * (its strings malloc'd: free them); 0, or -1 when there is none or
 * memory ran out (p->err says which). */
static int source_location(struct pf *p, uint32_t id, Perfetto__Protos__SourceLocation *sl)
{
	const struct tloc *l = tables_loc(p->t, id);
	if (!l)
		return -1;
	sl->has_iid = sl->has_line_number = 1;
	sl->iid = id;
	sl->line_number = l->line;
	sl->file_name = utf8(p, tloc_file(p->t, l), l->file_len);
	sl->function_name = utf8(p, tloc_function(p->t, l), l->function_len);
	return sl->file_name && sl->function_name ? 0 : -1;
}

/* The iid of name @id on @t's sequence, interned (a packet before the
 * event) on first use, with its source location (iid @id too) when the
 * file gives one; 0 when past PERFETTO_INTERNED: write it inline. */
static uint64_t name_iid(struct pf *p, struct xthread *t, uint32_t id)
{
	uint64_t key = (uint64_t)t->index << 32 | id;
	uint64_t *bits = id < SEEN_NAMES && t->index < SEEN_THREADS
		? &p->seen[(size_t)t->index * (SEEN_NAMES / 64) + id / 64] : NULL;
	uint64_t bit = UINT64_C(1) << (id % 64);
	if (bits ? *bits & bit : idmap_find(&p->interned, key) != NULL)
		return id;
	int added;
	if (bits)
		*bits |= bit;
	else if (p->interned.len >= PERFETTO_INTERNED || !idmap_slot(&p->interned, key, 1, &added))
		return 0;
	Perfetto__Protos__EventName en = PERFETTO__PROTOS__EVENT_NAME__INIT, *ep = &en;
	en.has_iid = 1;
	en.iid = id;
	if (!(en.name = name_of(p, id)))
		return 0;
	Perfetto__Protos__InternedData in = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	in.n_event_names = 1;
	in.event_names = &ep;
	Perfetto__Protos__SourceLocation sl = PERFETTO__PROTOS__SOURCE_LOCATION__INIT, *sp = &sl;
	if (!source_location(p, id, &sl)) {
		in.n_source_locations = 1;
		in.source_locations = &sp;
	}
	put_interned(p, t, &in);
	free(en.name);
	free(sl.file_name);
	free(sl.function_name);
	return p->err ? 0 : id;
}

/* A TrackEvent of @type named by katra name @id (none when 0). */
static void te_start(struct pf *p, struct xthread *t, struct pb *te, unsigned type, uint32_t id)
{
	te->n = 0;
	pb_varint(te, 9, type);
	if (!id)
		return;
	uint64_t iid = name_iid(p, t, id);
	if (iid) {
		pb_varint(te, 10, iid);
		/* A zone's place in the source: interned with its name. */
		if (type == TYPE_BEGIN && tables_loc(p->t, id))
			pb_varint(te, 34, iid);
		return;
	}
	p->xs.res->fallback++;
	size_t n = 0;
	const char *s = tables_name(p->t, id, &n);
	char *u = utf8(p, s ? s : "?", s ? n : 1);
	if (u) { /* the buffer's room: a long name is cut, at a character's start */
		size_t k = strnlen(u, 97);
		if (k > 96)
			for (k = 96; k && ((unsigned char)u[k] & 0xC0) == 0x80; k--)
				;
		pb_bytes(te, 23, u, k);
	}
	free(u);
}

/* A memory pool's track name: "memory " and the pool's name ("default"
 * for 0).  Malloc'd, or NULL with p->err set. */
static char *pool_name(struct pf *p, uint32_t id)
{
	char *nm = id ? name_of(p, id) : strdup("default"), *out = NULL;
	size_t n = nm ? strlen(nm) + sizeof("memory ") : 0;
	if (nm && (out = malloc(n)))
		snprintf(out, n, "memory %s", nm);
	free(nm);
	if (!out)
		p->err = -ENOMEM;
	return out;
}

/* The counter track of name @id (or, @mem, of memory pool @id), described
 * on first use. */
static uint64_t counter_track(struct pf *p, struct xthread *t, uint32_t id, int mem)
{
	int added;
	uint64_t uuid = mem ? MEMORY_UUID(id) : COUNTER_UUID(id);
	uint32_t *seen = idmap_slot(mem ? &p->pools : &p->counters, id, 1, &added);
	if (!seen) {
		p->err = -ENOMEM;
		return 0;
	}
	if (added) {
		Perfetto__Protos__CounterDescriptor cd = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
		TrackDesc td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
		td.has_uuid = td.has_parent_uuid = 1;
		td.uuid = uuid;
		td.parent_uuid = PROCESS_UUID;
		td.counter = &cd;
		if (mem) {
			cd.has_unit = 1;
			cd.unit = 3; /* UNIT_SIZE_BYTES */
		}
		if (!(td.name = mem ? pool_name(p, id) : name_of(p, id)))
			return 0;
		put_track(p, t->index + 2, &td);
		free(td.name);
	}
	return uuid;
}

static void on_counter(struct pf *p, struct xthread *t, uint32_t id, const kt_value *v, uint64_t ns)
{
	uint64_t track = counter_track(p, t, id, 0);
	struct pb te;
	te.n = 0;
	pb_varint(&te, 9, TYPE_COUNTER);
	pb_varint(&te, 11, track);
	pb_counter_value(&te, v);
	put_event(p, t, ns, &te);
}

/* An allocation or a free: its pool's live bytes after it, on the pool's
 * counter track. */
static void on_memory(struct pf *p, struct xthread *t, const kt_event *ev, uint64_t ns)
{
	uint64_t live;
	int rc = xstate_pool_live(&p->mem, ev, ns, &live);
	if (rc <= 0) { /* out of memory, or past the pools' cap */
		p->err = rc;
		return;
	}
	struct pb te;
	te.n = 0;
	pb_varint(&te, 9, TYPE_COUNTER);
	pb_varint(&te, 11, counter_track(p, t, ev->name_id, 1));
	pb_varint(&te, 30, live);
	put_event(p, t, ns, &te);
}

/* A message: its body interned (a packet before), then the instant. */
static void on_message(struct pf *p, struct xthread *t, uint32_t id, const kt_value *v, uint64_t ns)
{
	Perfetto__Protos__LogMessageBody lb = PERFETTO__PROTOS__LOG_MESSAGE_BODY__INIT, *lp = &lb;
	lb.has_iid = 1;
	lb.iid = ++p->bodies;
	if (!(lb.body = utf8(p, (const char *)v->bytes, v->len)))
		return;
	Perfetto__Protos__InternedData in = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	in.n_log_message_body = 1;
	in.log_message_body = &lp;
	put_interned(p, t, &in);
	free(lb.body);
	struct pb te, lm;
	lm.n = 0;
	te_start(p, t, &te, TYPE_INSTANT, id);
	pb_varint(&lm, 2, lb.iid);
	pb_varint(&lm, 3, PRIO_INFO);
	pb_bytes(&te, 21, lm.b, lm.n);
	put_event(p, t, ns, &te);
}

/* @te at @ns on @t with the loose argument @g, or else @t's kept
 * arguments of its zone at @level not yet written. */
static void put_args_event(struct pf *p, struct xthread *t, uint64_t ns, const struct pb *te,
			   size_t level, const struct xarg *g)
{
	struct abuf a = { 0 };
	if ((g ? xarg_pb(p->t, g, &a) : xarg_pb_kept(p->t, t, level, &a)) < 0)
		p->err = -ENOMEM;
	put_event_x(p, t, ns, te, a.b, a.n);
	free(a.b);
}

/* The begin @t held (export_state.h), with its arguments. */
static void put_held(struct pf *p, struct xthread *t)
{
	struct pb te;
	te_start(p, t, &te, TYPE_BEGIN, t->stack[t->depth - 1].name);
	struct pslice *s = slice_of(p, t);
	if (s)
		pslice_begin(s, &te);
	put_args_event(p, t, t->held_ns, &te, t->depth - 1, NULL);
}

/* Zone ends: @n of them, all but the last forced closed (annotated), each
 * with its zone's arguments not on its begin (Perfetto's importer adds an
 * end's arguments to its slice). */
static void put_ends(struct pf *p, struct xthread *t, uint64_t ns, size_t n, int last_forced)
{
	for (size_t i = 0; i < n; i++) {
		struct pb te;
		te.n = 0;
		pb_varint(&te, 9, TYPE_END);
		if (i + 1 < n || last_forced)
			pb_annotation(&te, ANN_CLOSED, 2, 1);
		struct pslice *s = slice_of(p, t);
		if (s)
			pslice_end(s, t->depth + n - 1 - i, &te);
		put_args_event(p, t, ns, &te, t->depth + n - 1 - i, NULL);
	}
}

static void on_instant_kind(struct pf *p, struct xthread *t, const kt_event *ev,
			    const kt_value *v, uint64_t ns)
{
	struct pb te;
	te_start(p, t, &te, TYPE_INSTANT, ev->name_id);
	if (ev->type == KT_EV_FRAME) {
		pb_varint(&te, 11, FRAMES_UUID);
		pb_annotation(&te, ANN_FRAME, 3, v->u64);
	} else if (ev->type == KT_EV_FLOW) {
		/* No slice to bind it to (perfetto_slice.h): the instant's. */
		p->xs.res->unbound++;
		pb_fixed64(&te, ev->flags == KT_FLOW_END ? 48 : 47, v->u64);
	} else if (ev->type == KT_EV_USER) {
		pb_annotation(&te, ANN_SUBTYPE, 3, ev->flags);
		pb_annotation(&te, ANN_BYTES, 3, v->len);
	}
	put_event(p, t, ns, &te);
}

/* Each drop record of @t that began by @ts (ticks), as an instant. */
static void put_drops(struct pf *p, struct xthread *t, uint64_t ts)
{
	const struct xdrop *d;
	while ((d = xstate_drop_due(&p->xs, t, ts))) {
		char text[80];
		int n = snprintf(text, sizeof(text), "katra: %" PRIu64 " events dropped", d->count);
		struct pb te;
	te.n = 0;
		pb_varint(&te, 9, TYPE_INSTANT);
		pb_bytes(&te, 23, text, (size_t)n);
		put_event(p, t, kt_reader_get_time_ns(p->r, d->first_ts), &te);
	}
}

/* A track's counter: a counter track of its own under the track's,
 * described on first use, and its value at the converted time. */
static int put_track_counter(struct pf *p, const kt_event *ev, uint64_t ticks)
{
	kt_track_event te;
	kt_event_get_track(ev, &te);
	uint64_t uuid = TRACK_COUNTER_UUID(te.track, ev->name_id);
	int added;
	if (!idmap_slot(&p->track_counters, uuid, 1, &added))
		return -ENOMEM;
	if (added) {
		Perfetto__Protos__CounterDescriptor cd = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
		TrackDesc td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
		td.has_uuid = td.has_parent_uuid = 1;
		td.uuid = uuid;
		td.parent_uuid = TRACK_UUID(te.track);
		td.counter = &cd;
		if (!(td.name = name_of(p, ev->name_id)))
			return p->err;
		put_track(p, SEQ_GLOBAL, &td);
		free(td.name);
	}
	Perfetto__Protos__TrackEvent e = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	e.has_type = e.has_track_uuid = 1;
	e.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
	e.track_uuid = uuid;
	if (ev->type == KT_EV_TRACK_COUNTER_I64)
		e.has_counter_value = 1, e.counter_value = te.value_i64;
	else
		e.has_double_counter_value = 1, e.double_counter_value = te.value_f64;
	Packet pk = mono_packet(SEQ_GLOBAL, kt_reader_get_time_ns(p->r, ticks));
	pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	pk.track_event = &e;
	put_packet(p, &pk);
	return p->out.failed ? -EIO : 0;
}

static int on_event(void *ctx, const kt_event *ev, uint64_t ns, uint64_t index)
{
	struct pf *p = ctx;
	(void)index;
	p->xs.res->events++;
	if (ev->type == KT_EV_SCHED) /* its stream is no thread's: ftrace's packet */
		return psched_put(&p->out, p->t, ev, ns);
	if (ev->type == KT_EV_SAMPLE) /* nor this: a PerfSample */
		return p->samples ? psamples_put(p->samples, &p->out, p->t, ev, ns) : 0;
	int fresh, rc;
	struct xthread *t = xstate_thread(&p->xs, ev->thread_id, &fresh);
	if (!t)
		return -ENOMEM;
	if (fresh)
		put_seq_start(p, t, ns);
	if (xstate_is_arg(ev->type)) {
		if ((rc = xstate_arg(&p->xs, t, ev)) < 0)
			return rc;
		if (!rc) { /* with no zone to carry it: an instant named after it */
			struct xarg g;
			struct pb te;
			xarg_of_event(&g, ev);
			te_start(p, t, &te, TYPE_INSTANT, ev->name_id);
			put_args_event(p, t, ns, &te, 0, &g);
		}
		return p->err ? p->err : p->out.failed ? -EIO : 0;
	}
	/* A flow right inside a held begin, or ended inside a zone, goes on
	 * its slice (perfetto_slice.h) and the begin stays held. */
	struct pslice *s;
	kt_value v = { .kind = KT_VALUE_NONE }; /* a zone's begin or end has none to read */
	if (ev->type > KT_EV_ZONE_END && kt_event_get_value(ev, &v) && ev->type == KT_EV_FLOW &&
	    (s = slice_of(p, t)) && pslice_flow(s, t->depth, t->held, ev->flags, v.u64))
		return p->err ? p->err : p->out.failed ? -EIO : 0;
	if (xstate_unhold(t))
		put_held(p, t);
	t->last_ts = ev->ts;
	put_drops(p, t, ev->ts);
	switch (ev->type) {
	case KT_EV_ZONE_BEGIN:
		if ((rc = xstate_begin(&p->xs, t, ev->name_id)) < 0)
			return rc;
		if (rc)
			xstate_hold(t, ev->ts, ns);
		break;
	case KT_EV_ZONE_END:
		put_ends(p, t, ns, xstate_end(&p->xs, t, ev->name_id), 0);
		break;
	case KT_EV_COUNTER_I64:
	case KT_EV_COUNTER_F64:
		on_counter(p, t, ev->name_id, &v, ns);
		break;
	case KT_EV_MESSAGE:
		on_message(p, t, ev->name_id, &v, ns);
		break;
	case KT_EV_ALLOC:
	case KT_EV_FREE:
		on_memory(p, t, ev, ns);
		break;
	default:
		if (fmt_is_track(ev->type)) {
			uint64_t ticks;
			rc = tracks_event(&p->tracks, ev, &ticks);
			if (rc == 1)
				rc = put_track_counter(p, ev, ticks);
			return rc < 0 ? rc : p->err;
		}
		on_instant_kind(p, t, ev, &v, ns);
	}
	return p->err ? p->err : p->out.failed ? -EIO : 0;
}

/* A track's zone begins or ends (tools/pipeline/tracks.h): a slice of its own
 * track on the global sequence, stamped on the monotonic clock itself,
 * so that its times need not follow the sequence's. */
static int put_track_slice(struct pf *p, const struct track_zone *z, int end)
{
	Perfetto__Protos__TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	te.has_type = te.has_track_uuid = 1;
	te.type = end ? PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END
		      : PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
	te.track_uuid = TRACK_UUID(z->track);
	if (!end && !(te.name = name_of(p, z->name)))
		return p->err;
	Packet pk = mono_packet(SEQ_GLOBAL, kt_reader_get_time_ns(p->r, end ? z->end : z->begin));
	pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	pk.track_event = &te;
	put_packet(p, &pk);
	free(te.name);
	return p->out.failed ? -EIO : 0;
}

static int on_track_open(void *ctx, const struct track_zone *z)
{
	return put_track_slice(ctx, z, 0);
}

static int on_track_close(void *ctx, const struct track_zone *z)
{
	return put_track_slice(ctx, z, 1);
}

/* Each track entry's track, named after it, under the process. */
static void put_track_descs(struct pf *p)
{
	for (uint32_t i = 1; i <= KT_MAX_TRACKS && !p->err; i++) {
		if (!p->t->tracks[i].id)
			continue;
		TrackDesc td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
		td.has_uuid = td.has_parent_uuid = 1;
		td.uuid = TRACK_UUID(i);
		td.parent_uuid = PROCESS_UUID;
		if (!(td.name = name_of(p, p->t->tracks[i].name_id)))
			return;
		put_track(p, SEQ_GLOBAL, &td);
		free(td.name);
	}
}

/* After the last event: threads known only from drop records, every
 * thread's unmarked drops and open zones, and the cut, if any. */
static void put_trace_end(struct pf *p)
{
	int fresh;
	for (size_t i = 0; i < p->xs.ndrops; i++) {
		struct xthread *t = xstate_thread(&p->xs, p->xs.drops[i].thread_id, &fresh);
		if (t && fresh)
			put_seq_start(p, t, kt_reader_get_time_ns(p->r, p->xs.drops[i].first_ts));
	}
	uint64_t last = 0;
	int rc = tracks_finish(&p->tracks);
	if (rc && !p->err)
		p->err = rc;
	p->xs.res->tracks = p->tracks.n;
	for (size_t i = 0; i < p->xs.nthreads; i++) {
		struct xthread *t = &p->xs.threads[i];
		if (xstate_unhold(t))
			put_held(p, t);
		put_drops(p, t, UINT64_MAX);
		put_ends(p, t, t->last_out, xstate_close_all(&p->xs, t), 1);
		last = t->last_out > last ? t->last_out : last;
	}
	if (p->t->have_summary)
		return;
	Perfetto__Protos__TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	te.has_type = te.has_track_uuid = 1;
	te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
	te.track_uuid = PROCESS_UUID;
	te.name = "katra: the file was cut short here; later events are lost";
	Packet pk = mono_packet(SEQ_GLOBAL, last);
	pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	pk.track_event = &te;
	put_packet(p, &pk);
}

int perfetto_run(kt_reader *r, const struct tables *t, FILE *out, int codec,
		 struct export_result *res)
{
	struct pf p = { .r = r, .t = t };
	struct perfetto_pack *pack = NULL;
	idmap_init(&p.interned);
	idmap_init(&p.counters);
	idmap_init(&p.pools);
	idmap_init(&p.track_counters);
	memstats_init(&p.mem);
	tracks_init(&p.tracks, t, on_track_close, &p);
	p.tracks.open = on_track_open;
	int rc = xstate_init(&p.xs, r, res);
	if (!rc && !(p.seen = calloc((size_t)SEEN_THREADS * SEEN_NAMES / 64, sizeof(*p.seen))))
		rc = -ENOMEM;
	if (!rc)
		rc = xout_init(&p.out, out, codec == PERFETTO_PLAIN ? 1u << 20 : PERFETTO_BATCH);
	if (!rc && codec != PERFETTO_PLAIN) {
		if (!(pack = perfetto_pack_new(out, codec, PERFETTO_BATCH)))
			rc = -ENOMEM;
		p.out.sink = perfetto_pack_write;
		p.out.ctx = pack;
	}
	/* Samples' stacks and maps, a pass of their own, when there are any. */
	if (!rc && t->stacks && (p.samples = psamples_new(r, &rc)) && !rc)
		rc = kt_reader_rewind(r);
	if (!rc) {
		put_trace_start(&p);
		put_track_descs(&p);
		static const struct pipe_client client = { .event = on_event, .payloads = 1,
							   .merge_ns = 1 };
		rc = pipe_run(r, &client, &p);
		if (rc >= 0 && !p.err)
			put_trace_end(&p);
	}
	if (!rc && p.err)
		rc = p.err;
	if (xout_free(&p.out) && rc >= 0)
		rc = -EIO;
	perfetto_pack_free(pack);
	xstate_free(&p.xs);
	idmap_free(&p.interned);
	idmap_free(&p.counters);
	idmap_free(&p.pools);
	idmap_free(&p.track_counters);
	pslices_free(&p.slices);
	memstats_free(&p.mem);
	tracks_free(&p.tracks);
	psamples_free(p.samples);
	free(p.seen);
	return rc;
}
