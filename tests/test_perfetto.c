/*
 * `katra export --perfetto` against the rules Perfetto's importer
 * documents, packet by packet, on the examples/ program's trace decoded by
 * protoc against tools/export/perfetto_trace.proto:
 *
 *  - sequences: every packet names one; each sequence's first packet
 *    clears its incremental state (SEQ_INCREMENTAL_STATE_CLEARED) and says
 *    it is the first; every later packet that uses that state (interned
 *    data, the defaults' track or clock) says so
 *    (SEQ_NEEDS_INCREMENTAL_STATE);
 *  - interning: every iid a packet uses (event names, source locations,
 *    log message bodies, debug annotation names) was defined earlier on
 *    its sequence since the state was cleared, or in the packet itself;
 *  - tracks: every track an event is on (its own track_uuid or the
 *    sequence's default) and every parent was described first;
 *  - clocks: one primary trace clock; a sequence's incremental clock 64
 *    is set by a snapshot before any packet stamped on it;
 *  - every slice begin whose zone has a source location in the file names
 *    it, and the interned location is the file's (file, function, line).
 *
 * And flows on the slices around them (tools/export/perfetto_slice.h), on a
 * trace written here.
 */
#define _GNU_SOURCE
#include "helpers.h"
#include "cli.h"
#ifdef KT_EXAMPLE
#include "example.h"
#endif

#include <inttypes.h>

#include <criterion/criterion.h>

#include <katra/reader.h>
#include <katra/writer.h>

#define MAX_SEQ 16
#define MAX_IID 4096u
#define MAX_USES 64
#define MAX_TRACKS 512
#define MAX_LOCS 256

enum { K_NAME, K_LOC, K_BODY, K_ANN, K_KINDS };

/* What one packet holds, as protoc printed it. */
struct packet {
	uint32_t seq, flags;
	int first, has_ts, has_clock, has_flags;
	int event, type, has_track;
	uint64_t track, name_iid, loc_iid;
	uint64_t uses[MAX_USES][2]; /* kind, iid */
	uint64_t defs[MAX_USES][2];
	int nuses, ndefs;
	unsigned flow_ids, terminating;
	uint64_t flow[8][2]; /* id, terminating */
	int nflow;
	uint64_t desc_uuid, desc_parent;
	int has_parent;
	int snapshot_64, primary;
	uint64_t default_track;
	int default_clock;
	/* the source location being read (interned_data.source_locations) */
	uint64_t loc_iid_def;
	char loc_file[128], loc_func[64];
	uint32_t loc_line;
};

struct seq {
	uint32_t id;
	int packets, clock_64;
	uint64_t open[16]; /* the names of its open slices */
	int depth;
	uint64_t default_track;
	uint8_t defined[K_KINDS][MAX_IID / 8];
};

struct loc {
	char file[128], func[64];
	uint32_t line;
	int set;
};

struct check {
	struct seq seq[MAX_SEQ];
	int nseq;
	uint64_t tracks[MAX_TRACKS];
	int ntracks, primaries;
	struct loc want[MAX_LOCS];   /* the katra file's, by name id */
	struct loc got[MAX_LOCS];    /* interned, by iid */
	uint64_t packets, needs, begins, located, flows, terminating;
	struct flow_at {
		int type;           /* 1 begin, 2 end, 3 instant */
		uint64_t name, id;  /* the slice's name (an end's: its begin's) */
		int terminating;
	} fl[32];
	int nfl;
};

static struct seq *seq_of(struct check *c, uint32_t id)
{
	for (int i = 0; i < c->nseq; i++)
		if (c->seq[i].id == id)
			return &c->seq[i];
	cr_assert_lt(c->nseq, MAX_SEQ);
	memset(&c->seq[c->nseq], 0, sizeof(c->seq[0]));
	c->seq[c->nseq].id = id;
	return &c->seq[c->nseq++];
}

static int described(const struct check *c, uint64_t uuid)
{
	for (int i = 0; i < c->ntracks; i++)
		if (c->tracks[i] == uuid)
			return 1;
	return 0;
}

static void add(uint64_t (*to)[2], int *n, int kind, uint64_t iid)
{
	cr_assert_lt(*n, MAX_USES);
	to[*n][0] = (uint64_t)kind;
	to[(*n)++][1] = iid;
}

/* The rules above, for packet @p once read whole. */
static void check_packet(struct check *c, const struct packet *p)
{
	cr_assert(p->seq, "packet %" PRIu64 " names no sequence", c->packets);
	struct seq *s = seq_of(c, p->seq);
	c->packets++;
	if (!s->packets++) {
		cr_assert(p->has_flags && (p->flags & 1) && p->first,
			  "sequence %u's first packet does not clear its state", s->id);
		memset(s->defined, 0, sizeof(s->defined));
	}
	for (int i = 0; i < p->ndefs; i++) {
		cr_assert_lt(p->defs[i][1], MAX_IID);
		s->defined[p->defs[i][0]][p->defs[i][1] / 8] |= (uint8_t)(1u << (p->defs[i][1] % 8));
	}
	int needs = p->nuses > 0 || (p->event && !p->has_track && s->default_track) ||
		    (p->has_ts && !p->has_clock && s->clock_64);
	if (needs && s->packets > 1) {
		cr_assert(p->has_flags && (p->flags & 2), "packet %" PRIu64 " on sequence %u uses "
			  "its state without SEQ_NEEDS_INCREMENTAL_STATE", c->packets, s->id);
		c->needs++;
	}
	for (int i = 0; i < p->nuses; i++) {
		uint64_t iid = p->uses[i][1];
		cr_assert(iid < MAX_IID && (s->defined[p->uses[i][0]][iid / 8] & (1u << (iid % 8))),
			  "packet %" PRIu64 " uses iid %" PRIu64 " (kind %d) not defined before on "
			  "sequence %u", c->packets, iid, (int)p->uses[i][0], s->id);
	}
	if (p->default_track)
		s->default_track = p->default_track;
	if (p->default_clock == 64)
		cr_assert(1); /* set by the snapshot that follows, checked at use */
	if (p->has_ts && !p->has_clock && p->seq != 1)
		cr_assert(s->clock_64, "sequence %u stamps a packet before its clock is set", s->id);
	if (p->snapshot_64)
		s->clock_64 = 1;
	c->primaries += p->primary;
	if (p->desc_uuid) {
		if (p->has_parent)
			cr_assert(described(c, p->desc_parent), "a parent track not described first");
		cr_assert_lt(c->ntracks, MAX_TRACKS);
		c->tracks[c->ntracks++] = p->desc_uuid;
	}
	if (p->event) {
		uint64_t track = p->has_track ? p->track : s->default_track;
		cr_assert(track && described(c, track), "an event on track %" PRIx64 " not described "
			  "first", track);
	}
	if (p->event && p->type == 1) {
		c->begins++;
		uint64_t id = p->name_iid;
		if (id < MAX_LOCS && c->want[id].set) {
			cr_assert_eq(p->loc_iid, id, "a located zone's begin without its location");
			const struct loc *g = &c->got[id], *w = &c->want[id];
			cr_assert(g->set, "location %" PRIu64 " never interned", id);
			cr_assert_str_eq(g->file, w->file);
			cr_assert_str_eq(g->func, w->func);
			cr_assert_eq(g->line, w->line);
			c->located++;
		} else {
			cr_assert_eq(p->loc_iid, 0, "a location on a zone the file gives none");
		}
	}
	c->flows += p->flow_ids;
	c->terminating += p->terminating;
	uint64_t name = p->name_iid;
	if (p->event && p->type == 1 && s->depth < 16)
		s->open[s->depth++] = name;
	if (p->event && p->type == 2 && s->depth)
		name = s->open[--s->depth];
	for (int i = 0; i < p->nflow && c->nfl < 32; i++)
		c->fl[c->nfl++] = (struct flow_at){ p->type, name, p->flow[i][0],
						    (int)p->flow[i][1] };
}

/* A "key: value" line's value as a number, or as a string (quotes off). */
static uint64_t num(const char *v)
{
	return strtoull(v, NULL, 10);
}

static void str(char *dst, size_t n, const char *v)
{
	snprintf(dst, n, "%s", v + (*v == '"'));
	size_t l = strlen(dst);
	if (l && dst[l - 1] == '"')
		dst[l - 1] = 0;
}

/* One field of the packet being read, at @path (enclosing messages, dotted). */
static void field(struct check *c, struct packet *p, const char *path, const char *key,
		  const char *v)
{
	if (!*path) {
		if (!strcmp(key, "trusted_packet_sequence_id"))
			p->seq = (uint32_t)num(v);
		else if (!strcmp(key, "sequence_flags"))
			p->flags = (uint32_t)num(v), p->has_flags = 1;
		else if (!strcmp(key, "first_packet_on_sequence"))
			p->first = !strcmp(v, "true");
		else if (!strcmp(key, "timestamp"))
			p->has_ts = 1;
		else if (!strcmp(key, "timestamp_clock_id"))
			p->has_clock = 1;
	} else if (!strcmp(path, "track_event")) {
		if (!strcmp(key, "type"))
			p->type = !strcmp(v, "TYPE_SLICE_BEGIN") ? 1 : !strcmp(v, "TYPE_SLICE_END") ? 2 : 3;
		else if (!strcmp(key, "track_uuid"))
			p->track = num(v), p->has_track = 1;
		else if (!strcmp(key, "name_iid"))
			p->name_iid = num(v), add(p->uses, &p->nuses, K_NAME, num(v));
		else if (!strcmp(key, "source_location_iid"))
			p->loc_iid = num(v), add(p->uses, &p->nuses, K_LOC, num(v));
		else if (!strcmp(key, "flow_ids") || !strcmp(key, "terminating_flow_ids")) {
			int term = *key == 't';
			p->flow_ids += !term;
			p->terminating += (unsigned)term;
			cr_assert_lt(p->nflow, 8);
			p->flow[p->nflow][0] = num(v);
			p->flow[p->nflow++][1] = (uint64_t)term;
		}
	} else if (!strcmp(path, "track_event.debug_annotations") && !strcmp(key, "name_iid")) {
		add(p->uses, &p->nuses, K_ANN, num(v));
	} else if (!strcmp(path, "track_event.log_message") && !strcmp(key, "body_iid")) {
		add(p->uses, &p->nuses, K_BODY, num(v));
	} else if (!strcmp(key, "iid")) {
		int kind = strstr(path, "event_names") ? K_NAME : strstr(path, "source_locations")
			 ? K_LOC : strstr(path, "log_message_body") ? K_BODY : K_ANN;
		add(p->defs, &p->ndefs, kind, num(v));
		if (kind == K_LOC)
			p->loc_iid_def = num(v);
	} else if (strstr(path, "source_locations")) {
		cr_assert_lt(p->loc_iid_def, MAX_LOCS);
		struct loc *l = &c->got[p->loc_iid_def];
		l->set = 1;
		if (!strcmp(key, "file_name"))
			str(l->file, sizeof(l->file), v);
		else if (!strcmp(key, "function_name"))
			str(l->func, sizeof(l->func), v);
		else if (!strcmp(key, "line_number"))
			l->line = (uint32_t)num(v);
	} else if (!strcmp(path, "track_descriptor")) {
		if (!strcmp(key, "uuid"))
			p->desc_uuid = num(v);
		else if (!strcmp(key, "parent_uuid"))
			p->desc_parent = num(v), p->has_parent = 1;
	} else if (!strcmp(path, "trace_packet_defaults.track_event_defaults") &&
		   !strcmp(key, "track_uuid")) {
		p->default_track = num(v);
	} else if (!strcmp(path, "trace_packet_defaults") && !strcmp(key, "timestamp_clock_id")) {
		p->default_clock = (int)num(v);
	} else if (!strcmp(path, "clock_snapshot.clocks") && !strcmp(key, "clock_id")) {
		p->snapshot_64 |= num(v) == 64;
	} else if (!strcmp(path, "clock_snapshot") && !strcmp(key, "primary_trace_clock")) {
		p->primary = 1;
	}
}

/* protoc's text of a Trace, read line by line into packets and checked. */
static void check_text(struct check *c, FILE *f)
{
	char line[512], path[256] = "";
	static struct packet p;
	int depth = 0;
	while (fgets(line, sizeof(line), f)) {
		char *s = line + strspn(line, " ");
		s[strcspn(s, "\n")] = 0;
		size_t n = strlen(s);
		if (n >= 2 && !strcmp(s + n - 2, " {")) {
			s[n - 2] = 0;
			if (depth++ == 0) {
				memset(&p, 0, sizeof(p));
				cr_assert_str_eq(s, "packet");
				continue;
			}
			if (!*path && !strcmp(s, "track_event"))
				p.event = 1;
			if (*path)
				strcat(path, ".");
			strcat(path, s);
			continue;
		}
		if (!strcmp(s, "}")) {
			if (--depth == 0) {
				check_packet(c, &p);
				continue;
			}
			char *dot = strrchr(path, '.');
			*(dot ? dot : path) = 0;
			continue;
		}
		char *colon = strstr(s, ": ");
		cr_assert_not_null(colon, "protoc printed %s", s);
		*colon = 0;
		field(c, &p, path, s, colon + 2);
	}
	cr_assert_eq(depth, 0);
}

/* @katra exported with --perfetto, decoded by protoc into a text file. */
static FILE *decoded(const char *katra, const char *tag, struct proc *p)
{
	char out[128], txt[128], cmd[512];
	snprintf(out, sizeof(out), "/tmp/katra-pf-%s-%d.pftrace", tag, (int)getpid());
	snprintf(txt, sizeof(txt), "/tmp/katra-pf-%s-%d.txt", tag, (int)getpid());
	unlink(out);
	run_katra(p, (const char *const[]){ "export", "--perfetto", katra, out, NULL });
	cr_assert_eq(p->status, 0, "%.*s", (int)p->err_len, p->err);
	snprintf(cmd, sizeof(cmd), "protoc --decode=perfetto.protos.Trace --proto_path=%s/tools/export "
		 "perfetto_trace.proto < %s > %s", KT_SRC_DIR, out, txt);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	FILE *f = fopen(txt, "r");
	cr_assert_not_null(f);
	unlink(out);
	unlink(txt);
	return f;
}

/* The file's source locations by name id, and how many zone begins have one. */
static uint64_t file_locations(const char *path, struct check *c)
{
	kt_reader *r;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	kt_trace_frame fr;
	while (kt_reader_next_frame(r, &fr) == 1) {
		const kt_srcloc *l = kt_trace_frame_get_srcloc(&fr);
		if (!l || l->id >= MAX_LOCS)
			continue;
		struct loc *w = &c->want[l->id];
		snprintf(w->file, sizeof(w->file), "%.*s", (int)l->file_len, l->file);
		snprintf(w->func, sizeof(w->func), "%s", l->function ? l->function : "");
		w->line = l->line;
		w->set = 1;
	}
	cr_assert_eq(kt_reader_rewind(r), 0);
	kt_event ev;
	uint64_t located = 0;
	while (kt_reader_next(r, &ev) > 0)
		located += ev.type == KT_EV_ZONE_BEGIN && ev.name_id < MAX_LOCS &&
			   c->want[ev.name_id].set;
	kt_reader_close(r);
	return located;
}

#ifdef KT_EXAMPLE /* built where C++ builds the examples/ program */
Test(perfetto_rules, the_example_programs_export_follows_the_importers_rules_packet_by_packet)
{
	char path[96];
	snprintf(path, sizeof(path), "/tmp/katra-pf-example-%d.katra", (int)getpid());
	unlink(path);
	t_run_example(path, 120, 80);
	static struct check c;
	uint64_t located = file_locations(path, &c);
	cr_assert_gt(located, 0, "the example's zones have locations");
	struct proc p;
	FILE *f = decoded(path, "example", &p);
	check_text(&c, f);
	fclose(f);
	cr_assert_eq(c.primaries, 1, "one primary trace clock");
	cr_assert_eq(c.nseq, 5, "the trace's own sequence and one per thread (4)");
	cr_assert_eq(c.located, located, "every located zone's begin names its location");
	cr_assert_gt(c.needs, c.begins, "every event packet after a sequence's first needs it");
	unlink(path);
}
#endif

/* An event of @type at @ns ns (t_header's clock: 3 ticks a ns), with a
 * flow id when @type is a flow. */
static size_t put(uint8_t *buf, size_t at, unsigned type, uint32_t name, uint64_t ns,
		  unsigned phase, uint64_t id)
{
	uint8_t pl[8];
	memcpy(pl, &id, 8);
	kt_event ev = { .ts = 1000000 + 3 * ns, .name_id = name, .type = (uint8_t)type,
			.flags = (uint8_t)phase, .payload = type == KT_EV_FLOW ? pl : NULL,
			.payload_len = type == KT_EV_FLOW ? 8 : 0 };
	size_t n = kt_event_encode(buf + at, 512 - at, &ev);
	cr_assert_gt(n, 0);
	return at + n;
}

/*
 * Thread 1: zone send [10, 20] with flow 7 begun right inside it; flow 8
 * begun outside every zone (25); zone late [30, 40] with an instant, then
 * flow 9 begun (32).  Thread 2: zone recv [12, 15] with an instant, then
 * flow 7's end (14); flow 8's end outside every zone (26); zone take
 * [33, 36] with flow 9's end (34).
 */
static void write_flows(const char *path)
{
	kt_header h;
	t_header(&h);
	kt_writer *w;
	cr_assert_eq(kt_writer_open(path, &h, &w), 0);
	static const char *const names[] = { "send", "recv", "late", "take", "tick", "hand" };
	for (uint32_t i = 0; i < 6; i++)
		cr_assert_eq(kt_writer_name(w, i + 1, names[i], strlen(names[i])), 0);
	cr_assert_eq(kt_writer_thread(w, 1, 100, "one"), 0);
	cr_assert_eq(kt_writer_thread(w, 2, 200, "two"), 0);
	uint8_t buf[512];
	size_t n = put(buf, 0, KT_EV_ZONE_BEGIN, 1, 10, 0, 0);
	n = put(buf, n, KT_EV_FLOW, 6, 11, KT_FLOW_BEGIN, 7);
	n = put(buf, n, KT_EV_ZONE_END, 1, 20, 0, 0);
	n = put(buf, n, KT_EV_FLOW, 6, 25, KT_FLOW_BEGIN, 8);
	n = put(buf, n, KT_EV_ZONE_BEGIN, 3, 30, 0, 0);
	n = put(buf, n, KT_EV_INSTANT, 5, 31, 0, 0);
	n = put(buf, n, KT_EV_FLOW, 6, 32, KT_FLOW_BEGIN, 9);
	n = put(buf, n, KT_EV_ZONE_END, 3, 40, 0, 0);
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_LZ4, 8, buf, n), 0);
	n = put(buf, 0, KT_EV_ZONE_BEGIN, 2, 12, 0, 0);
	n = put(buf, n, KT_EV_INSTANT, 5, 13, 0, 0);
	n = put(buf, n, KT_EV_FLOW, 6, 14, KT_FLOW_END, 7);
	n = put(buf, n, KT_EV_ZONE_END, 2, 15, 0, 0);
	n = put(buf, n, KT_EV_FLOW, 6, 26, KT_FLOW_END, 8);
	n = put(buf, n, KT_EV_ZONE_BEGIN, 4, 33, 0, 0);
	n = put(buf, n, KT_EV_FLOW, 6, 34, KT_FLOW_END, 9);
	n = put(buf, n, KT_EV_ZONE_END, 4, 36, 0, 0);
	cr_assert_eq(kt_writer_chunk(w, 2, KT_CODEC_LZ4, 8, buf, n), 0);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
}

/* Flows go on the slices around them: a begin right inside its zone on
 * the zone's begin, an end on its zone's end (after the flow's begin in
 * time, wherever that is bound, as the importer takes events in time
 * order); one outside every zone, or begun after other events of its
 * zone, on an instant of its own, said on stderr. */
Test(perfetto_rules, flows_are_on_the_slices_around_them)
{
	char path[96];
	snprintf(path, sizeof(path), "/tmp/katra-pf-flows-%d.katra", (int)getpid());
	write_flows(path);
	static struct check c;
	struct proc p;
	FILE *f = decoded(path, "flows", &p);
	check_text(&c, f);
	fclose(f);
	static const struct flow_at want[] = {
		{ 1, 1, 7, 0 }, /* on send's begin */
		{ 2, 2, 7, 1 }, /* on recv's end */
		{ 3, 6, 8, 0 }, /* outside every zone: instants */
		{ 3, 6, 8, 1 },
		{ 3, 6, 9, 0 }, /* after late's instant: its begin was out */
		{ 2, 4, 9, 1 }, /* on take's end */
	};
	/* In the file's order a held begin comes late (the importer sorts). */
	cr_assert_eq(c.nfl, 6);
	for (int i = 0; i < 6; i++) {
		const struct flow_at *w = &want[i];
		int found = 0;
		for (int k = 0; k < c.nfl; k++)
			found += c.fl[k].type == w->type && c.fl[k].name == w->name &&
				 c.fl[k].id == w->id && c.fl[k].terminating == w->terminating;
		cr_assert_eq(found, 1, "flow %" PRIu64 " (%s) not where it belongs", w->id,
			     w->terminating ? "end" : "begin");
	}
	cr_assert_not_null(memmem(p.err, p.err_len, "3 flow events could not be bound", 32),
			   "%.*s", (int)p.err_len, p.err);
	unlink(path);
}
