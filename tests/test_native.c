/*
 * `katra export --perfetto` and `--fxt`: the golden trace's Perfetto
 * output decoded by protoc against tools/export/perfetto_trace.proto and its
 * structure checked (a sequence per thread, state cleared first on each,
 * balanced slices, counters on counter tracks, flows paired, time never
 * going back on a sequence), decoded once more with --decode_raw against
 * Perfetto's field numbers as this file states them; the FXT output read
 * record by record by fxt.h's reader and matched one for one with
 * the reader's events (what `katra dump` prints); hostile zones balanced
 * in both.
 */
#include "helpers.h"
#include "cli.h"
#include "fxt.h"

#include <criterion/criterion.h>

#include <katra/reader.h>
#include <katra/writer.h>
#include <zlib.h>
#include <zstd.h>
#include <jansson.h>

#include "tools/export/export_perfetto.h"
#include "tools/export/perfetto_trace.pb-c.h"

#define GOLDEN KT_TEST_DATA "/golden_v1.katra"

typedef Perfetto__Protos__TracePacket Packet;
typedef Perfetto__Protos__TrackEvent TrackEvent;

/* Export @in as @fmt ("--perfetto", "--fxt"); the bytes, *@len long. */
static uint8_t *export_as(const char *fmt, const char *in, size_t *len, struct proc *p)
{
	char out[160];
	snprintf(out, sizeof(out), "/tmp/katra-native-%d%s", (int)getpid(), fmt + 1);
	unlink(out);
	const char *args[] = { "export", fmt, in, out, NULL };
	run_katra(p, args);
	cr_assert_eq(p->status, 0, "exit %d: %s", p->status, p->err);
	uint8_t *got = t_slurp(out, len);
	cr_assert_not_null(got, "no output: %s", p->err);
	unlink(out);
	return got;
}

/* Run @cmd (a shell line) with @in on its stdin; its stdout, NUL-terminated. */
static char *filter(const char *cmd, const uint8_t *in, size_t len)
{
	char inp[96], outp[96], line[512];
	snprintf(inp, sizeof(inp), "/tmp/katra-native-%d.in", (int)getpid());
	snprintf(outp, sizeof(outp), "/tmp/katra-native-%d.out", (int)getpid());
	FILE *f = fopen(inp, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(in, 1, len, f), len);
	fclose(f);
	snprintf(line, sizeof(line), "%s < %s > %s", cmd, inp, outp);
	int rc = system(line);
	cr_assert_eq(rc, 0, "%s: status %d", cmd, rc);
	size_t n = 0;
	uint8_t *got = t_slurp(outp, &n);
	cr_assert_not_null(got);
	char *s = malloc(n + 1);
	memcpy(s, got, n);
	s[n] = 0;
	free(got);
	unlink(inp);
	unlink(outp);
	return s;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Events of each type the reader gives for @path. */
static void reader_counts(const char *path, uint64_t counts[16])
{
	memset(counts, 0, 16 * sizeof(counts[0]));
	kt_reader *r;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	kt_event ev;
	while (kt_reader_next(r, &ev) > 0)
		counts[ev.type & 15]++;
	kt_reader_close(r);
}

/* ---- Perfetto ---- */

struct seqstate {
	uint32_t id;
	int seen, depth;
	uint64_t now;      /* clock 64, absolute */
	uint64_t packets;
};

struct pcheck {
	struct seqstate seq[8];
	int nseq;
	uint64_t types[5], counter_tracks[8], flows_begun[16], flows_ended[16];
	int ncounter_tracks, nflows_begun, nflows_ended;
	uint64_t messages, frames, drops;
};

static struct seqstate *seq_of(struct pcheck *c, uint32_t id)
{
	for (int i = 0; i < c->nseq; i++)
		if (c->seq[i].id == id)
			return &c->seq[i];
	cr_assert_lt(c->nseq, 8);
	c->seq[c->nseq] = (struct seqstate){ .id = id };
	return &c->seq[c->nseq++];
}

static void check_event(struct pcheck *c, struct seqstate *s, const Packet *pk)
{
	const TrackEvent *te = pk->track_event;
	cr_assert(te->has_type);
	cr_assert_lt(te->type, 5);
	c->types[te->type]++;
	if (te->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN)
		s->depth++;
	if (te->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END)
		cr_assert_geq(--s->depth, 0, "an end closes nothing on sequence %u", s->id);
	if (te->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER) {
		int found = 0;
		for (int i = 0; i < c->ncounter_tracks; i++)
			found |= c->counter_tracks[i] == te->track_uuid;
		cr_assert(found, "a counter event on a track not described as a counter");
	}
	for (size_t i = 0; i < te->n_flow_ids && c->nflows_begun < 16; i++)
		c->flows_begun[c->nflows_begun++] = te->flow_ids[i];
	for (size_t i = 0; i < te->n_terminating_flow_ids && c->nflows_ended < 16; i++)
		c->flows_ended[c->nflows_ended++] = te->terminating_flow_ids[i];
	c->messages += te->log_message != NULL;
	c->frames += te->n_debug_annotations && te->debug_annotations[0]->name_iid == 1;
	c->drops += te->name && !strncmp(te->name, "katra: ", 7);
}

static void check_packet(struct pcheck *c, const Packet *pk)
{
	cr_assert(pk->has_trusted_packet_sequence_id, "a packet outside any sequence");
	struct seqstate *s = seq_of(c, pk->trusted_packet_sequence_id);
	if (!s->packets++)
		cr_assert(pk->has_sequence_flags && (pk->sequence_flags & 1),
			  "sequence %u does not start with its state cleared", s->id);
	/* data is a oneof: a union, read through its case */
	int snap = pk->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT;
	int desc = pk->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
	int event = pk->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	if (snap) {
		for (size_t i = 0; i < pk->clock_snapshot->n_clocks; i++)
			if (pk->clock_snapshot->clocks[i]->clock_id == 64)
				s->now = pk->clock_snapshot->clocks[i]->timestamp;
	} else if (pk->has_timestamp && s->id != 1) {
		cr_assert(!pk->has_timestamp_clock_id, "an event off its sequence's clock");
		s->now += pk->timestamp; /* deltas: unsigned, so time never goes back */
	}
	if (desc && pk->track_descriptor->counter)
		c->counter_tracks[c->ncounter_tracks++] = pk->track_descriptor->uuid;
	if (event && !pk->has_timestamp_clock_id) /* else sequence 1's cut mark */
		check_event(c, s, pk);
}

Test(perfetto, golden_decodes_with_a_sequence_per_thread_and_balanced_slices)
{
	struct proc p;
	size_t len;
	uint8_t *got = export_as("--perfetto", GOLDEN, &len, &p);
	Perfetto__Protos__Trace *tr = perfetto__protos__trace__unpack(NULL, len, got);
	cr_assert_not_null(tr, "the generated code cannot decode the output");
	struct pcheck c = { .nseq = 0 };
	for (size_t i = 0; i < tr->n_packet; i++)
		check_packet(&c, tr->packet[i]);
	cr_assert_eq(c.nseq, 3, "sequence 1 and one per thread, not %d", c.nseq);
	for (int i = 0; i < c.nseq; i++)
		cr_assert_eq(c.seq[i].depth, 0, "sequence %u ends with slices open", c.seq[i].id);
	uint64_t want[16];
	reader_counts(GOLDEN, want);
	cr_assert_eq(c.types[1], want[KT_EV_ZONE_BEGIN]);
	cr_assert_eq(c.types[2], want[KT_EV_ZONE_END]);
	cr_assert_eq(c.types[4], want[KT_EV_COUNTER_I64] + want[KT_EV_COUNTER_F64]);
	cr_assert_eq(c.ncounter_tracks, 2, "draw_calls and frame_ms");
	cr_assert_eq(c.messages, want[KT_EV_MESSAGE]);
	cr_assert_eq(c.frames, want[KT_EV_FRAME]);
	cr_assert_eq(c.drops, 1, "the golden trace's drop record, marked");
	/* Each flow begun (and stepped) is ended: ids 11259376 and 11259377 ... */
	cr_assert_eq(c.nflows_ended, (int)want[KT_EV_FLOW] / 3);
	for (int i = 0; i < c.nflows_ended; i++) {
		int begun = 0;
		for (int k = 0; k < c.nflows_begun; k++)
			begun += c.flows_begun[k] == c.flows_ended[i];
		cr_assert_eq(begun, 2, "flow %llu: a begin and a step",
			     (unsigned long long)c.flows_ended[i]);
	}
	perfetto__protos__trace__free_unpacked(tr, NULL);
	free(got);
}

Test(perfetto, protoc_decodes_it_with_the_projects_proto)
{
	struct proc p;
	size_t len;
	uint8_t *got = export_as("--perfetto", GOLDEN, &len, &p);
	char *text = filter("protoc --decode=perfetto.protos.Trace --proto_path=" KT_SRC_DIR
			    "/tools/export perfetto_trace.proto", got, len);
	uint64_t want[16];
	reader_counts(GOLDEN, want);
	cr_assert_eq(count(text, "type: TYPE_SLICE_BEGIN"), want[KT_EV_ZONE_BEGIN]);
	cr_assert_eq(count(text, "type: TYPE_SLICE_END"), want[KT_EV_ZONE_END]);
	cr_assert_eq(count(text, "type: TYPE_COUNTER"),
		     want[KT_EV_COUNTER_I64] + want[KT_EV_COUNTER_F64]);
	cr_assert_eq(count(text, "sequence_flags: 1"), 3);
	cr_assert_eq(count(text, "is_incremental: true"), 2);
	cr_assert_eq(count(text, "primary_trace_clock: 3"), 1);
	cr_assert_eq(count(text, "thread_name: \"main\""), 1);
	cr_assert_eq(count(text, "thread_name: \"render\""), 1);
	cr_assert_eq(count(text, "process_name: \"unit test\""), 1);
	cr_assert_eq(count(text, "name: \"frame_zone\""), 2, "interned once per sequence");
	cr_assert_eq(count(text, "body: \"hello, trace\""), want[KT_EV_MESSAGE]);
	cr_assert_eq(count(text, "counter_value: -43"), 1);
	cr_assert_eq(count(text, "double_counter_value: 3.5"), 1);
	free(text);
	free(got);
}

/*
 * The same bytes with no schema: Perfetto's field numbers, stated here
 * apart from tools/export/perfetto_trace.proto, so that a wrong number there
 * (which the encoder and protoc would agree on) fails.  TracePacket:
 * 8 timestamp, 10 sequence id, 11 track_event, 12 interned_data,
 * 13 sequence_flags, 58 timestamp_clock_id, 59 defaults, 60
 * track_descriptor, 6 clock_snapshot; TrackEvent: 9 type, 10 name_iid,
 * 30 counter_value, 44 double_counter_value, 47 flow_ids, 48
 * terminating_flow_ids, 21 log_message; InternedData: 2 event_names, 20
 * log_message_body; TrackDescriptor 4 thread (ThreadDescriptor 5
 * thread_name), 8 counter.
 */
Test(perfetto, decode_raw_shows_perfettos_field_numbers)
{
	struct proc p;
	size_t len;
	uint8_t *got = export_as("--perfetto", GOLDEN, &len, &p);
	char *raw = filter("protoc --decode_raw", got, len);
	uint64_t want[16];
	reader_counts(GOLDEN, want);
	/* Packets are field 1 at the top; their fields are indented by 2. */
	cr_assert_eq(count(raw, "\n  11 {\n    9: 1\n"), want[KT_EV_ZONE_BEGIN]);
	cr_assert_eq(count(raw, "\n  11 {\n    9: 2\n"), want[KT_EV_ZONE_END]);
	cr_assert_eq(count(raw, "\n  11 {\n    9: 4\n"),
		     want[KT_EV_COUNTER_I64] + want[KT_EV_COUNTER_F64]);
	cr_assert_eq(count(raw, "\n  13: 1\n"), 3);
	cr_assert_eq(count(raw, "\n    58: 64\n"), 2, "clock 64 by default on each thread");
	cr_assert_eq(count(raw, "\n  6 {\n"), 3, "a clock snapshot per sequence");
	cr_assert_eq(count(raw, "\n    30: 18446744073709551573\n"), 1, "counter_value -43");
	cr_assert_eq(count(raw, "\n    47: 0x0000000000abcdf0\n"), 2, "flow 11259376 begun, stepped");
	cr_assert_eq(count(raw, "\n    48: 0x0000000000abcdf0\n"), 1, "and ended");
	cr_assert_eq(count(raw, "\n    21 {\n"), want[KT_EV_MESSAGE]);
	cr_assert_eq(count(raw, "\n      5: \"main\"\n"), 1, "thread_name in the thread descriptor");
	cr_assert_eq(count(raw, "\n  60 {\n"), 6, "process, Frames, 2 threads, 2 counters");
	free(raw);
	free(got);
}

/* ---- FXT ---- */

/* FXT's event type for a katra event (flows: by phase). */
static unsigned fxt_type(const kt_event *ev)
{
	static const unsigned by_type[] = { [KT_EV_ZONE_BEGIN] = 2, [KT_EV_ZONE_END] = 3,
					    [KT_EV_COUNTER_I64] = 1, [KT_EV_COUNTER_F64] = 1 };
	if (ev->type == KT_EV_FLOW)
		return 8 + ev->flags;
	return ev->type < sizeof(by_type) / sizeof(by_type[0]) ? by_type[ev->type] : 0;
}

static uint64_t u64_of(const kt_event *ev)
{
	uint64_t v = 0;
	memcpy(&v, ev->payload, ev->payload_len < 8 ? ev->payload_len : 8);
	return v;
}

/* Event @e against the reader's @ev at @ns: time, type, values. */
static void match(const struct fxt_event *e, const kt_event *ev, uint64_t ns, int i)
{
	cr_assert_eq(e->ts, ns, "event %d: ns", i);
	cr_assert_eq(e->type, fxt_type(ev), "event %d: type", i);
	if (ev->type == KT_EV_COUNTER_I64 || ev->type == KT_EV_COUNTER_F64) {
		cr_assert_str_eq(e->arg_name[0], e->name, "a counter's argument is its name");
		cr_assert_eq(e->arg_val[0], u64_of(ev), "event %d: the counter's bits", i);
		cr_assert_eq(e->data, ev->name_id);
	}
	if (ev->type == KT_EV_FLOW)
		cr_assert_eq(e->data, u64_of(ev), "event %d: flow id", i);
	if (ev->type == KT_EV_FRAME)
		cr_assert_eq(e->arg_val[0], u64_of(ev));
	if (ev->type == KT_EV_MESSAGE) /* named by its text, for Tracy */
		cr_assert_eq(strncmp(e->name, (const char *)ev->payload, ev->payload_len), 0);
}

Test(fxt, golden_reads_back_record_by_record_and_matches_the_events)
{
	struct proc p;
	size_t len;
	uint8_t *got = export_as("--fxt", GOLDEN, &len, &p);
	static struct fxt f;
	read_fxt(&f, got, len);
	kt_reader *r;
	cr_assert_eq(kt_reader_open(GOLDEN, NULL, &r), 0);
	cr_assert_eq(f.tick_hz, 1000000000u, "ns, as Tracy's importer reads them");
	cr_assert_eq(f.pid, 4242);
	cr_assert_eq(f.nthread_names, 2);
	size_t dlen;
	uint8_t *raw = t_slurp(KT_TEST_DATA "/golden_v1.dump.txt", &dlen);
	cr_assert_not_null(raw);
	char *dump = malloc(dlen + 1), *line = dump; /* NUL-terminated for sscanf */
	memcpy(dump, raw, dlen);
	dump[dlen] = 0;
	free(raw);
	kt_event ev;
	int i = 0, marks = 0;
	while (kt_reader_next(r, &ev) > 0) {
		/* `katra dump`'s line for it: "NS ID THREAD TYPE NAME ..." */
		char tname[32], type[32], name[64];
		do { /* a drop record's line is no event */
			cr_assert_eq(sscanf(line, "%*s %*s %31s %31s %63s", tname, type, name), 3);
			line = strchr(line, '\n') + 1;
		} while (!strcmp(type, "drop"));
		cr_assert_str_eq(type, kt_event_type_name(ev.type));
		while (i < f.nev && !strncmp(f.ev[i].name, "katra: ", 7)) {
			marks++; /* a drop record's mark, between the events */
			i++;
		}
		cr_assert_lt(i, f.nev, "fewer FXT events than the trace has");
		match(&f.ev[i], &ev, kt_reader_get_time_ns(r, ev.ts), i);
		/* a message's name is its text; its event name is an argument */
		cr_assert_str_eq(ev.type == KT_EV_MESSAGE ? f.ev[i].text : f.ev[i].name, name,
				 "event %d: name", i);
		cr_assert_str_eq(koid_name(&f, f.ev[i].koid), tname, "event %d: thread", i);
		i++;
	}
	cr_assert_eq(*line, 0, "katra dump has more events");
	free(dump);
	for (; i < f.nev; i++)
		marks += !strncmp(f.ev[i].name, "katra: ", 7);
	cr_assert_eq(marks, 1, "the golden trace's drop record, marked once");
	kt_reader_close(r);
	free(got);
}

/* ---- hostile zones, both formats ---- */

/* Thread 1: a [1], b [2], end of a at 3 (closes b inside it), an end of c
 * with no begin at 4, d [5] never ended.  Ticks from t_header's clock. */
/* A writer of @path whose names 1.. are @names (@n), with thread 1 "main". */
static kt_writer *open_named(const char *path, const char *const *names, uint32_t n)
{
	kt_header h;
	t_header(&h);
	kt_writer *w;
	cr_assert_eq(kt_writer_open(path, &h, &w), 0);
	for (uint32_t i = 0; i < n; i++)
		cr_assert_eq(kt_writer_name(w, i + 1, names[i], strlen(names[i])), 0);
	cr_assert_eq(kt_writer_thread(w, 1, 100, "main"), 0);
	return w;
}

static void write_unbalanced(const char *path)
{
	static const char *const names[] = { "a", "b", "c", "d" };
	kt_writer *w = open_named(path, names, 4);
	static const struct { char kind; uint32_t name; } z[] = {
		{ 'B', 1 }, { 'B', 2 }, { 'E', 1 }, { 'E', 3 }, { 'B', 4 } };
	uint8_t buf[512];
	size_t len = 0;
	for (size_t i = 0; i < 5; i++) {
		kt_event ev = { .ts = 1000000 + 3000 * (i + 1), .name_id = z[i].name,
				.type = z[i].kind == 'B' ? KT_EV_ZONE_BEGIN : KT_EV_ZONE_END };
		len += kt_event_encode(buf + len, sizeof(buf) - len, &ev);
	}
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_LZ4, 3, buf, len), 0);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
}

static const char *unbalanced_path(void)
{
	static char path[96];
	snprintf(path, sizeof(path), "/tmp/katra-native-%d-unbalanced.katra", (int)getpid());
	write_unbalanced(path);
	return path;
}

static void check_said(const struct proc *p, const char *path)
{
	char want[320];
	snprintf(want, sizeof(want), "katra: %s: zones balanced for the viewer: skipped 1 ends "
		 "with no begin, closed 1 zones at an outer zone's end and 1 still open at the "
		 "end, skipped 0 begins past 1048576 open zones\n", path);
	cr_assert_str_eq(p->err, want);
}

Test(perfetto, unmatched_ends_are_skipped_and_open_zones_closed)
{
	const char *path = unbalanced_path();
	struct proc p;
	size_t len;
	uint8_t *got = export_as("--perfetto", path, &len, &p);
	check_said(&p, path);
	Perfetto__Protos__Trace *tr = perfetto__protos__trace__unpack(NULL, len, got);
	cr_assert_not_null(tr);
	struct pcheck c = { .nseq = 0 };
	uint64_t closed = 0;
	for (size_t i = 0; i < tr->n_packet; i++) {
		check_packet(&c, tr->packet[i]);
		const Packet *pk = tr->packet[i];
		if (pk->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT &&
		    pk->track_event->n_debug_annotations &&
		    pk->track_event->debug_annotations[0]->name_iid == 4)
			closed++;
	}
	cr_assert_eq(c.types[1], 3);
	cr_assert_eq(c.types[2], 3, "a's, b's (forced) and d's (forced) ends");
	cr_assert_eq(closed, 2);
	cr_assert_eq(c.seq[1].depth, 0);
	perfetto__protos__trace__free_unpacked(tr, NULL);
	free(got);
	unlink(path);
}

Test(fxt, unmatched_ends_are_skipped_and_open_zones_closed)
{
	const char *path = unbalanced_path();
	struct proc p;
	size_t len;
	uint8_t *got = export_as("--fxt", path, &len, &p);
	check_said(&p, path);
	static struct fxt f;
	read_fxt(&f, got, len);
	const char *want[][2] = { { "B", "a" }, { "B", "b" }, { "E", "b" }, { "E", "a" },
				  { "B", "d" }, { "E", "d" } };
	cr_assert_eq(f.nev, 6);
	for (int i = 0; i < 6; i++) {
		cr_assert_eq(f.ev[i].type, want[i][0][0] == 'B' ? 2u : 3u, "event %d", i);
		cr_assert_str_eq(f.ev[i].name, want[i][1], "event %d", i);
		int forced = i == 2 || i == 5;
		cr_assert_eq(f.ev[i].nargs, (unsigned)forced, "event %d: closed or not", i);
		if (forced)
			cr_assert_str_eq(f.ev[i].arg_name[0], "closed");
	}
	cr_assert_eq(f.ev[5].ts, f.ev[4].ts, "d closes at its thread's last event");
	free(got);
	unlink(path);
}

/* ---- compressed batches ---- */

static uint64_t get_varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7F) << shift;
		if (!(b & 0x80))
			return v;
	}
	cr_assert_fail("a varint runs off the end");
	return 0;
}

/* Unwrap @got: each Trace.packet must be one field @field holding
 * compressed packets; their decompressed bytes, concatenated. */
static uint8_t *unwrap(const uint8_t *got, size_t len, unsigned field, size_t *out_len)
{
	size_t cap = 1 << 24, n = 0;
	uint8_t *out = malloc(cap);
	const uint8_t *p = got, *end = got + len;
	int batches = 0;
	while (p < end) {
		cr_assert_eq(*p++, 1 << 3 | 2, "not a Trace.packet");
		uint64_t plen = get_varint(&p, end);
		cr_assert_leq(plen, (uint64_t)(end - p));
		const uint8_t *pend = p + plen;
		cr_assert_eq(get_varint(&p, pend), (uint64_t)field << 3 | 2, "not field %u", field);
		size_t clen = get_varint(&p, pend);
		cr_assert_eq(p + clen, pend, "one field per packet");
		size_t got_n;
		if (field == 133) {
			got_n = ZSTD_decompress(out + n, cap - n, p, clen);
			cr_assert(!ZSTD_isError(got_n));
		} else {
			uLongf dl = cap - n;
			cr_assert_eq(uncompress(out + n, &dl, p, clen), Z_OK);
			got_n = dl;
		}
		cr_assert_leq(got_n, PERFETTO_BATCH);
		n += got_n;
		p = pend;
		batches++;
	}
	cr_assert_geq(batches, 1);
	*out_len = n;
	return out;
}

Test(perfetto, zstd_and_deflate_batches_hold_exactly_the_plain_packets)
{
	struct proc p;
	size_t plain_len;
	uint8_t *plain = export_as("--perfetto", GOLDEN, &plain_len, &p);
	char out[160];
	static const struct { const char *flag; unsigned field; } codecs[] = {
		{ "--zstd", 133 }, { "--deflate", 50 } };
	uint8_t *packed[2], *unpacked[2];
	size_t lens[2], ulens[2];
	for (int i = 0; i < 2; i++) {
		snprintf(out, sizeof(out), "/tmp/katra-native-%d-%s", (int)getpid(), codecs[i].flag + 2);
		unlink(out);
		const char *args[] = { "export", "--perfetto", codecs[i].flag, GOLDEN, out, NULL };
		run_katra(&p, args);
		cr_assert_eq(p.status, 0, "%s", p.err);
		packed[i] = t_slurp(out, &lens[i]);
		cr_assert_not_null(packed[i]);
		unlink(out);
		unpacked[i] = unwrap(packed[i], lens[i], codecs[i].field, &ulens[i]);
		cr_assert_eq(ulens[i], plain_len, "%s: not the plain export's bytes", codecs[i].flag);
		cr_assert_eq(memcmp(unpacked[i], plain, plain_len), 0, "%s", codecs[i].flag);
		free(unpacked[i]);
		free(packed[i]);
	}
	const char *bad[] = { "export", "--fxt", "--zstd", GOLDEN, "x", NULL };
	run_katra(&p, bad);
	cr_assert_eq(p.status, 2, "--zstd is for --perfetto only");
	free(plain);
}

/* ---- a file cut short ---- */

Test(native, a_file_cut_short_ends_with_a_mark_in_both_formats)
{
	size_t len;
	uint8_t *whole = t_slurp(GOLDEN, &len);
	cr_assert_not_null(whole);
	char cut[96], out[112];
	snprintf(cut, sizeof(cut), "/tmp/katra-native-%d-cut.katra", (int)getpid());
	FILE *f = fopen(cut, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(whole, 1, 1500, f), 1500); /* inside the second thread's chunk */
	fclose(f);
	free(whole);
	for (int fxt = 0; fxt < 2; fxt++) {
		snprintf(out, sizeof(out), "%s.out", cut);
		unlink(out);
		const char *args[] = { "export", fxt ? "--fxt" : "--perfetto", cut, out, NULL };
		struct proc p;
		run_katra(&p, args);
		cr_assert_eq(p.status, 3, "truncated: %s", p.err);
		size_t n;
		uint8_t *got = t_slurp(out, &n);
		cr_assert_not_null(got);
		unlink(out);
		if (fxt) {
			static struct fxt r;
			read_fxt(&r, got, n);
			cr_assert_geq(r.nev, 1);
			cr_assert_str_eq(r.ev[r.nev - 1].name,
					 "katra: the file was cut short here; later events are lost");
		} else {
			char *text = filter("protoc --decode=perfetto.protos.Trace --proto_path="
					    KT_SRC_DIR "/tools/export perfetto_trace.proto", got, n);
			cr_assert_eq(count(text, "name: \"katra: the file was cut short here"), 1);
			free(text);
		}
		free(got);
	}
	unlink(cut);
}

/* ---- zone arguments, on their slices in every export ---- */

/* Thread 1: zone [i=-5, u=2^63+7, f=2.5, s="hello", its value 42 then 43
 * (a second of one name: "value#2"), its text "zone text"] { child } then
 * late="after child" (an argument after a zone inside it), end of zone,
 * then u=9 with no zone open. */
static const char *args_path(void)
{
	static char path[96];
	snprintf(path, sizeof(path), "/tmp/katra-native-%d-args.katra", (int)getpid());
	static const char *const names[] = { "zone", "i", "u", "f", "s", "child", "late" };
	kt_writer *w = open_named(path, names, 7);
	int64_t i = -5, v = 42, v2 = 43;
	uint64_t u = (UINT64_C(1) << 63) + 7, u9 = 9;
	double f = 2.5;
	static const struct { uint8_t type; uint32_t name; const void *p; uint16_t n; } e[] = {
		{ KT_EV_ZONE_BEGIN, 1, NULL, 0 }, { KT_EV_ARG_I64, 2, NULL, 8 },
		{ KT_EV_ARG_U64, 3, NULL, 8 },	  { KT_EV_ARG_F64, 4, NULL, 8 },
		{ KT_EV_ARG_STR, 5, "hello", 5 }, { KT_EV_ARG_I64, 0, NULL, 8 },
		{ KT_EV_ARG_I64, 0, NULL, 8 },	  { KT_EV_ARG_STR, 0, "zone text", 9 },
		{ KT_EV_ZONE_BEGIN, 6, NULL, 0 },
		{ KT_EV_ZONE_END, 6, NULL, 0 },	  { KT_EV_ARG_STR, 7, "after child", 11 },
		{ KT_EV_ZONE_END, 1, NULL, 0 },	  { KT_EV_ARG_U64, 3, NULL, 8 },
	};
	const void *num[] = { [1] = &i, [2] = &u, [3] = &f, [5] = &v, [6] = &v2, [12] = &u9 };
	uint8_t buf[1024];
	size_t len = 0;
	for (size_t k = 0; k < sizeof(e) / sizeof(e[0]); k++) {
		kt_event ev = { .ts = 1000000 + 3000 * (k + 1), .name_id = e[k].name,
				.type = e[k].type, .payload_len = e[k].n,
				.payload = e[k].p ? e[k].p : num[k] };
		len += kt_event_encode(buf + len, sizeof(buf) - len, &ev);
	}
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_LZ4, 3, buf, len), 0);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
	return path;
}

/* args_path()'s trace exported as @fmt: its bytes (*@len), its path. */
static uint8_t *export_args(const char *fmt, const char **path, size_t *len)
{
	struct proc p;
	*path = args_path();
	return export_as(fmt, *path, len, &p);
}

/* FXT: the begin's arguments typed (numbers first, then texts: Tracy's
 * importer ends a zone's text at a text's NUL), the late one on the end,
 * the loose one an instant named after it. */
Test(fxt, zone_arguments_are_on_their_zones_with_their_types)
{
	const char *path;
	size_t len;
	uint8_t *got = export_args("--fxt", &path, &len);
	static struct fxt f;
	read_fxt(&f, got, len);
	cr_assert_eq(f.nev, 5, "zone, child, child, zone, the loose u");
	const struct fxt_event *b = &f.ev[0], *end = &f.ev[3], *loose = &f.ev[4];
	cr_assert(b->type == 2 && !strcmp(b->name, "zone"));
	cr_assert_eq(b->nargs, 7);
	static const struct { const char *name; unsigned type; } want[] = {
		{ "i", 3 }, { "u", 4 }, { "f", 5 }, { "value", 3 }, { "value#2", 3 }, { "s", 6 },
		{ "text", 6 } };
	for (int k = 0; k < 7; k++) {
		cr_assert_str_eq(b->arg_name[k], want[k].name, "argument %d", k);
		cr_assert_eq(b->arg_type[k], want[k].type, "argument %d", k);
	}
	double d;
	memcpy(&d, &b->arg_val[2], 8);
	cr_assert_eq((int64_t)b->arg_val[0], -5);
	cr_assert_eq(b->arg_val[1], (UINT64_C(1) << 63) + 7);
	cr_assert(d == 2.5);
	cr_assert_eq(b->arg_val[3], 42);
	cr_assert_eq(b->arg_val[4], 43);
	cr_assert_str_eq(b->arg_text[5], "hello");
	cr_assert_str_eq(b->arg_text[6], "zone text");
	cr_assert(f.ev[1].type == 2 && f.ev[1].nargs == 0 && f.ev[2].type == 3);
	cr_assert(end->type == 3 && !strcmp(end->name, "zone") && end->nargs == 1);
	cr_assert_str_eq(end->arg_name[0], "late");
	cr_assert_str_eq(end->arg_text[0], "after child");
	cr_assert(loose->type == 0 && !strcmp(loose->name, "u") && loose->nargs == 1);
	cr_assert(loose->arg_type[0] == 4 && loose->arg_val[0] == 9);
	free(got);
	unlink(path);
}

/* Perfetto, decoded by protoc with the schema: each argument a typed
 * debug annotation on its slice's begin, the late one on its end (the
 * importer adds an end's annotations to the slice). */
Test(perfetto, zone_arguments_are_debug_annotations_on_their_slices)
{
	const char *path;
	size_t len;
	uint8_t *got = export_args("--perfetto", &path, &len);
	char *text = filter("protoc --decode=perfetto.protos.Trace --proto_path=" KT_SRC_DIR
			    "/tools/export perfetto_trace.proto", got, len);
#define ANN(v, n) "    debug_annotations {\n      " v "\n      name: \"" n "\"\n    }\n"
	cr_assert_eq(count(text, ANN("int_value: -5", "i") ANN("uint_value: 9223372036854775815", "u")
				 ANN("double_value: 2.5", "f") ANN("string_value: \"hello\"", "s")
				 ANN("int_value: 42", "value") ANN("int_value: 43", "value#2")
				 ANN("string_value: \"zone text\"", "text")
				 "    type: TYPE_SLICE_BEGIN\n"), 1, "%s", text);
	cr_assert_eq(count(text, ANN("string_value: \"after child\"", "late")
				 "    type: TYPE_SLICE_END\n"), 1);
	cr_assert_eq(count(text, ANN("uint_value: 9", "u") "    type: TYPE_INSTANT\n"), 1);
	cr_assert_eq(count(text, "debug_annotations {"), 9, "no other");
#undef ANN
	free(text);
	free(got);
	unlink(path);
}

/* The object of @doc's traceEvents with phase @ph and name @name. */
static json_t *chrome_find(json_t *doc, const char *ph, const char *name)
{
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(doc, "traceEvents"), i, o)
		if (!strcmp(json_string_value(json_object_get(o, "ph")), ph) &&
		    json_string_value(json_object_get(o, "name")) &&
		    !strcmp(json_string_value(json_object_get(o, "name")), name))
			return json_object_get(o, "args");
	return NULL;
}

/* Chrome JSON, parsed by jansson: the arguments in the args of their
 * zone's B (the late one in its E's) or, with --complete, all in its X's;
 * the loose one an instant with its value. */
Test(chrome, zone_arguments_are_args_of_their_zones)
{
	const char *path = args_path();
	char out[128];
	snprintf(out, sizeof(out), "%s.json", path);
	for (int complete = 0; complete < 2; complete++) {
		struct proc p;
		unlink(out);
		const char *with[] = { "export", "--chrome", "--complete", path, out, NULL };
		const char *without[] = { "export", "--chrome", path, out, NULL };
		run_katra(&p, complete ? with : without);
		cr_assert_eq(p.status, 0, "%s", p.err);
		json_error_t e;
		json_t *doc = json_load_file(out, 0, &e);
		cr_assert_not_null(doc, "%s", e.text);
		json_t *b = chrome_find(doc, complete ? "X" : "B", "zone");
		json_t *end = complete ? b : chrome_find(doc, "E", "zone");
		cr_assert(b && end);
		cr_assert_eq(json_integer_value(json_object_get(b, "i")), -5);
		cr_assert_str_eq(json_string_value(json_object_get(b, "u")), "9223372036854775815",
				 "past INT64_MAX: a string");
		cr_assert(json_real_value(json_object_get(b, "f")) == 2.5);
		cr_assert_str_eq(json_string_value(json_object_get(b, "s")), "hello");
		cr_assert_eq(json_integer_value(json_object_get(b, "value")), 42);
		cr_assert_eq(json_integer_value(json_object_get(b, "value#2")), 43);
		cr_assert_str_eq(json_string_value(json_object_get(b, "text")), "zone text");
		cr_assert_str_eq(json_string_value(json_object_get(end, "late")), "after child");
		cr_assert_eq(json_object_size(b), complete ? 8u : 7u);
		cr_assert_eq(json_integer_value(json_object_get(chrome_find(doc, "i", "u"), "u")), 9);
		json_decref(doc);
	}
	unlink(out);
	unlink(path);
}

/* FXT: a record holds 15 arguments, so of a zone's 31 the begin takes 15,
 * the end 15 and the last is an instant named after it: none is lost. */
Test(fxt, a_zone_with_more_arguments_than_records_hold_loses_none)
{
	char path[96];
	snprintf(path, sizeof(path), "/tmp/katra-native-%d-many.katra", (int)getpid());
	static const char *const names[] = { "zone", "n" };
	kt_writer *w = open_named(path, names, 2);
	uint8_t buf[2048];
	size_t len = 0;
	for (uint64_t k = 0; k < 33; k++) {
		kt_event ev = { .ts = 1000000 + 3000 * (k + 1), .name_id = k % 32 ? 2 : 1,
				.type = k == 0 ? KT_EV_ZONE_BEGIN : k == 32 ? KT_EV_ZONE_END
								   : KT_EV_ARG_U64,
				.payload_len = k % 32 ? 8 : 0, .payload = (const uint8_t *)&k };
		len += kt_event_encode(buf + len, sizeof(buf) - len, &ev);
	}
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_LZ4, 3, buf, len), 0);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
	struct proc p;
	uint8_t *got = export_as("--fxt", path, &len, &p);
	static struct fxt f;
	read_fxt(&f, got, len);
	cr_assert_eq(f.nev, 3);
	cr_assert(f.ev[0].type == 2 && f.ev[0].nargs == 15 && f.ev[0].arg_val[0] == 1);
	cr_assert_str_eq(f.ev[0].arg_name[1], "n#2", "the second of its name");
	cr_assert(f.ev[1].type == 3 && f.ev[1].nargs == 15 && f.ev[1].arg_val[0] == 16);
	cr_assert(f.ev[2].type == 0 && !strcmp(f.ev[2].name, "n") && f.ev[2].arg_val[0] == 31);
	cr_assert_str_eq(f.ev[2].arg_name[0], "n#31");
	free(got);
	unlink(path);
}
