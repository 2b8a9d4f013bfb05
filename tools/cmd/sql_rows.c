/*
 * sql_rows.c - the rows of katra_scan()'s views, one file at a time, as
 * tools/cmd/sql_scan.h says; zones are matched as `katra stats` matches them
 * (tools/analysis/stats.h), so their durations and self times are the same.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <katra/reader.h>
#include <katra/record.h>
#include "tools/cmd/cli.h"
#include "tools/pipeline/grow.h"
#include "tools/pipeline/idmap.h"
#include "tools/cmd/sql_scan.h"
#include "tools/pipeline/sql_side.h"
#include "tools/pipeline/tables.h"

#define U64 DUCKDB_TYPE_UBIGINT
#define U32 DUCKDB_TYPE_UINTEGER
#define STR DUCKDB_TYPE_VARCHAR
#define F64 DUCKDB_TYPE_DOUBLE
#define I64 DUCKDB_TYPE_BIGINT
#define BOOL DUCKDB_TYPE_BOOLEAN
#define VIEW(n, c) { n, c, (int)(sizeof(c) / sizeof(c[0])) }

static const struct sql_col events_cols[] = {
	{ "thread", U32 }, { "ts_ns", U64 }, { "type", STR },
	{ "name", STR }, { "value", F64 },
	{ "file", STR },
};
static const struct sql_col zones_cols[] = {
	{ "thread", U32 }, { "name", STR }, { "category", STR },
	{ "begin_ns", U64 }, { "end_ns", U64 }, { "dur_ns", U64 }, { "self_ns", U64 },
	{ "depth", U32 }, { "parent", STR },
	{ "zone_id", U64 }, { "src_file", STR }, { "line", U32 }, { "function", STR },
	{ "file", STR },
};
static const struct sql_col args_cols[] = {
	{ "thread", U32 }, { "ts_ns", U64 }, { "zone_id", U64 }, { "name", STR },
	{ "type", STR }, { "i64", I64 }, { "u64", U64 }, { "f64", F64 }, { "text", STR },
	{ "file", STR },
};
static const struct sql_col frames_cols[] = {
	{ "thread", U32 }, { "ts_ns", U64 }, { "frame_ns", U64 },
	{ "file", STR },
};
static const struct sql_col counters_cols[] = {
	{ "thread", U32 }, { "ts_ns", U64 }, { "name", STR }, { "value", F64 },
	{ "file", STR },
};
static const struct sql_col memory_cols[] = {
	{ "thread", U32 }, { "ts_ns", U64 }, { "kind", STR },
	{ "pool", STR }, { "ptr", U64 }, { "size", U64 },
	{ "file", STR },
};
static const struct sql_col drops_cols[] = {
	{ "thread", U32 }, { "count", U64 }, { "first_ns", U64 },
	{ "last_ns", U64 },
	{ "file", STR },
};
static const struct sql_col threads_cols[] = {
	{ "thread", U32 }, { "os_tid", U32 }, { "name", STR }, { "pid", U64 },
	{ "file", STR },
};
/* A file's process entries (SPEC §4.10); one row of the header's pid for
 * a file with none (version 3, a capture's later segment). */
static const struct sql_col processes_cols[] = {
	{ "pid", U64 }, { "parent_pid", U64 }, { "name", STR }, { "command_line", STR },
	{ "start_ns", U64 }, { "end_ns", U64 }, { "complete", BOOL }, { "recovered", BOOL },
	{ "file", STR },
};
static const struct sql_col captures_cols[] = {
	{ "run_id", STR }, { "capture_id", STR }, { "epoch", U64 },
	{ "host", STR }, { "pid", U64 }, { "start_wall_ns", U64 }, { "events_written", U64 },
	{ "events_dropped", U64 }, { "truncated", BOOL }, { "damaged_frames", U64 },
	/* the sidecar's (tools/pipeline/sql_side.c), NULL unless it matches */
	{ "state", STR }, { "code", STR }, { "complete", BOOL }, { "requested_span_ns", U64 },
	{ "capture_span_ns", U64 }, { "head_loss_ns", U64 }, { "tail_excess_ns", U64 },
	{ "sidecar_matches", BOOL }, { "sidecar_problem", STR },
	{ "file", STR },
};

const struct sql_view_def sql_views[SQL_NVIEWS] = {
	VIEW("events", events_cols),     VIEW("zones", zones_cols),
	VIEW("frames", frames_cols),     VIEW("counters", counters_cols),
	VIEW("memory", memory_cols),     VIEW("drops", drops_cols),
	VIEW("threads", threads_cols),   VIEW("captures", captures_cols),
	VIEW("args", args_cols),         VIEW("processes", processes_cols),
};

/* An open zone, as stats keeps it (stats.c): begin, the time of the zones
 * that ended inside it, its name, 1 + the index of the next open zone of
 * its name below it on the stack (0: none); and its id (the ordinal of its
 * begin among the file's, which zones and args both count). */
struct czone {
	uint64_t ns, child, id;
	uint32_t name, below;
};

struct cthread {
	struct czone *stack;
	size_t depth, cap;
	uint64_t untimed;       /* begins past the cap, still open */
	uint64_t last_frame_ns;
	int have_frame;
};

/* At most this many open zones in a file (stats' own cap, MAX_OPEN_ZONES):
 * begins past it are not timed. */
#define MAX_OPEN (1u << 22)

struct sql_cursor {
	struct sql_files *files;
	size_t index;
	int view;
	const char *path;
	uint32_t path_len;
	kt_reader *r;
	struct tables t;
	int events_pass;         /* the events are being merged */
	size_t next;             /* threads, captures, processes: the next entry */
	char *cmdline;           /* processes: the row's command line, spaced */
	size_t cmdline_cap;
	struct idmap thmap;      /* thread id -> index in th */
	struct cthread *th;
	size_t nth, thcap;
	struct idmap tops;       /* (thread index, name) -> 1 + stack index */
	uint64_t open;
	uint64_t begins;         /* zone begins so far: the last zone id */
	struct sql_sidecar side; /* captures: its strings are the row's */
};

static const char *name_of(const struct sql_cursor *c, uint32_t id, struct sql_cell *cell)
{
	size_t n = 0;
	const char *s = id ? tables_name(&c->t, id, &n) : NULL;
	cell->s = s;
	cell->len = (uint32_t)n;
	cell->null = !s;
	return s;
}

static void cell_u(struct sql_cell *cell, uint64_t v)
{
	cell->u = v;
	cell->null = 0;
}

static void str_cell(struct sql_cell *cell, const char *s)
{
	cell->s = s ? s : "";
	cell->len = (uint32_t)strlen(cell->s);
	cell->null = 0;
}

/* Say @rc of the reader of @c into @why. */
static int read_error(struct sql_cursor *c, int rc, char *why, size_t cap)
{
	const kt_reader_error *e = c->r ? kt_reader_get_last_error(c->r) : NULL;
	snprintf(why, cap, "%s: %s", c->path, reason(rc, e && e->code ? e : NULL));
	return rc;
}

int sql_cursor_open(struct sql_files *files, size_t index, int view, struct sql_cursor **out,
		    char *why, size_t cap)
{
	struct sql_cursor *c = calloc(1, sizeof(*c));
	*out = NULL;
	if (!c) {
		snprintf(why, cap, "out of memory");
		return -ENOMEM;
	}
	c->files = files;
	c->index = index;
	c->view = view;
	c->path = files->paths[index];
	c->path_len = (uint32_t)strlen(c->path);
	idmap_init(&c->thmap);
	idmap_init(&c->tops);
	kt_reader_error err = { 0 };
	int rc = kt_reader_open(c->path, &err, &c->r);
	if (rc < 0) {
		snprintf(why, cap, "%s: %s", c->path, reason(rc, &err));
		sql_cursor_close(c);
		return rc;
	}
	kt_reader_set_salvage(c->r, 1);
	rc = tables_load(c->r, &c->t);
	if (rc < 0) {
		read_error(c, rc, why, cap);
		sql_cursor_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

void sql_cursor_close(struct sql_cursor *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nth; i++)
		free(c->th[i].stack);
	free(c->th);
	free(c->cmdline);
	idmap_free(&c->thmap);
	idmap_free(&c->tops);
	tables_free(&c->t);
	kt_reader_close(c->r);
	free(c);
}

/* The end of a pass: note what salvage skipped and whether the file was
 * cut short, for the command to say. */
static void note_damage(struct sql_cursor *c)
{
	kt_reader_skipped sk;
	kt_reader_status st;
	kt_reader_get_skipped(c->r, &sk);
	kt_reader_get_status(c->r, &st);
	struct sql_damage *d = &c->files->damage[c->index];
	pthread_mutex_lock(&c->files->lock);
	if (sk.frames > d->skipped) {
		d->skipped = sk.frames;
		d->first_offset = sk.first_offset;
		d->first_error = sk.first_error;
	}
	d->truncated |= !c->t.have_summary || st.truncated;
	pthread_mutex_unlock(&c->files->lock);
}

/* ---- zones ---------------------------------------------------------------- */

static struct cthread *thread_state(struct sql_cursor *c, uint32_t id, size_t *ti)
{
	int added;
	uint32_t *v = idmap_slot(&c->thmap, id, (uint32_t)c->nth, &added);
	if (!v)
		return NULL;
	if (added) {
		if (grow_array((void **)&c->th, &c->thcap, c->nth + 1, sizeof(*c->th)))
			return NULL;
		memset(&c->th[c->nth++], 0, sizeof(*c->th));
	}
	*ti = *v;
	return &c->th[*v];
}

static uint64_t tops_key(size_t ti, uint32_t name)
{
	return (uint64_t)ti << 32 | name;
}

static int zone_begin(struct sql_cursor *c, struct cthread *t, size_t ti, uint32_t name,
		      uint64_t ns)
{
	uint64_t id = ++c->begins;
	if (c->open >= MAX_OPEN) {
		t->untimed++;
		return 0;
	}
	if (grow_array((void **)&t->stack, &t->cap, t->depth + 1, sizeof(*t->stack)))
		return -ENOMEM;
	int added;
	uint32_t *top = idmap_slot(&c->tops, tops_key(ti, name), 0, &added);
	if (!top)
		return -ENOMEM;
	t->stack[t->depth] = (struct czone){ ns, 0, id, name, *top };
	*top = (uint32_t)++t->depth;
	c->open++;
	return 0;
}

/* Is an event of @type a zone's argument (SPEC §4.2, types 10-13)? */
static int is_arg(uint8_t type)
{
	return type == KT_EV_ARG_I64 || type == KT_EV_ARG_U64 || type == KT_EV_ARG_F64 ||
	       type == KT_EV_ARG_STR;
}

/* The location columns of a zone named @name (its call site's id). */
static void loc_cells(struct sql_cursor *c, uint32_t name, struct sql_cell *row)
{
	const struct tloc *l = tables_loc(&c->t, name);
	if (!l)
		return;
	row[0] = (struct sql_cell){ .s = tloc_file(&c->t, l), .len = l->file_len };
	if (l->line)
		cell_u(&row[1], l->line);
	row[2] = (struct sql_cell){ .s = tloc_function(&c->t, l), .len = l->function_len };
}

/* A zone's end: as stats.c's zone_end(), the innermost open zone of its
 * name closes, and those opened after it close with it untimed.  Returns
 * 1 with the zone's row (when @row is not NULL), 0 for an end with
 * nothing to match. */
static int zone_end(struct sql_cursor *c, struct cthread *t, size_t ti, const kt_event *ev,
		    uint64_t ns, struct sql_cell *row)
{
	if (t->untimed) {
		t->untimed--;
		return 0;
	}
	uint32_t *top = idmap_find(&c->tops, tops_key(ti, ev->name_id));
	if (!top || !*top)
		return 0;
	size_t d = *top - 1;
	struct czone z = t->stack[d];
	uint64_t dur = ns >= z.ns ? ns - z.ns : 0;
	while (t->depth > d) {
		struct czone *p = &t->stack[--t->depth];
		*idmap_find(&c->tops, tops_key(ti, p->name)) = p->below;
		c->open--;
		if (t->depth > d)
			p[-1].child += p->child;
	}
	z.child = t->stack[d].child;
	if (t->depth)
		t->stack[t->depth - 1].child += dur;
	if (!row)
		return 1;
	name_of(c, z.name, &row[1]);
	const struct tloc *l = tables_loc(&c->t, z.name);
	name_of(c, l ? l->category : 0, &row[2]);
	cell_u(&row[3], z.ns);
	cell_u(&row[4], ns);
	cell_u(&row[5], dur);
	cell_u(&row[6], dur > z.child ? dur - z.child : 0);
	cell_u(&row[7], d);
	name_of(c, d ? t->stack[d - 1].name : 0, &row[8]);
	cell_u(&row[9], z.id);
	loc_cells(c, z.name, &row[10]);
	return 1;
}

/* An argument's row: the zone it belongs to (SPEC §4.2: the innermost
 * open zone of its thread; none past the cap of open zones), its name
 * (NULL: the zone's own value or text) and its value in the column of
 * its type.  0 for an event that is no argument. */
static int arg_row(struct sql_cursor *c, struct cthread *t, const kt_event *ev,
		   struct sql_cell *row)
{
	kt_value v;
	if (!is_arg(ev->type) || !kt_event_get_value(ev, &v))
		return 0;
	if (!t->untimed && t->depth)
		cell_u(&row[2], t->stack[t->depth - 1].id);
	name_of(c, ev->name_id, &row[3]);
	const char *type = "text";
	switch (v.kind) {
	case KT_VALUE_I64:
		type = "i64";
		row[5] = (struct sql_cell){ .i = v.i64 };
		break;
	case KT_VALUE_U64:
		type = "u64";
		cell_u(&row[6], v.u64);
		break;
	case KT_VALUE_F64:
		type = "f64";
		row[7] = (struct sql_cell){ .d = v.f64 };
		break;
	default: /* KT_VALUE_TEXT: is_arg() let no other kind through */
		row[8] = (struct sql_cell){ .s = (const char *)v.bytes, .len = (uint32_t)v.len };
	}
	str_cell(&row[4], type);
	return 1;
}

/* ---- events --------------------------------------------------------------- */

/* A counter's or an argument's number as a double; 0 for another type. */
static int payload_value(const kt_event *ev, double *v)
{
	kt_value val;
	switch (ev->type) {
	case KT_EV_COUNTER_I64:
	case KT_EV_ARG_I64:
	case KT_EV_ARG_U64:
	case KT_EV_COUNTER_F64:
	case KT_EV_ARG_F64:
		break;
	default:
		return 0;
	}
	if (!kt_event_get_value(ev, &val))
		return 0;
	*v = val.kind == KT_VALUE_I64 ? (double)val.i64 :
	     val.kind == KT_VALUE_U64 ? (double)val.u64 : val.f64;
	return 1;
}

/* A memory event's row; 0 for an event of another type. */
static int memory_row(struct sql_cursor *c, const kt_event *ev, struct sql_cell *row)
{
	kt_value val;
	if ((ev->type != KT_EV_ALLOC && ev->type != KT_EV_FREE) || !kt_event_get_value(ev, &val))
		return 0;
	int alloc = val.kind == KT_VALUE_ALLOC;
	row[2] = (struct sql_cell){ .s = alloc ? "alloc" : "free", .len = alloc ? 5 : 4 };
	name_of(c, ev->name_id, &row[3]);
	cell_u(&row[4], val.ptr);
	if (alloc)
		cell_u(&row[5], val.size);
	return 1;
}

/* The row @ev makes in the cursor's view, into @row (file, thread and
 * time are set); 1 with a row, 0 for none, or -ENOMEM. */
static int event_row(struct sql_cursor *c, const kt_event *ev, uint64_t ns, struct sql_cell *row)
{
	size_t ti;
	struct cthread *t;
	double v;
	switch (c->view) {
	case SQL_EVENTS:
		row[2] = (struct sql_cell){ .s = kt_event_type_name(ev->type) };
		row[2].len = (uint32_t)strlen(row[2].s);
		name_of(c, ev->name_id, &row[3]);
		if (payload_value(ev, &v))
			row[4] = (struct sql_cell){ .d = v };
		return 1;
	case SQL_ZONES:
	case SQL_ARGS:
		if (ev->type != KT_EV_ZONE_BEGIN && ev->type != KT_EV_ZONE_END &&
		    (c->view == SQL_ZONES || !is_arg(ev->type)))
			return 0;
		if (!(t = thread_state(c, ev->thread_id, &ti)))
			return -ENOMEM;
		if (ev->type == KT_EV_ZONE_BEGIN)
			return zone_begin(c, t, ti, ev->name_id, ns);
		if (ev->type == KT_EV_ZONE_END) /* args: only the stack kept */
			return c->view == SQL_ZONES ? zone_end(c, t, ti, ev, ns, row)
						    : (zone_end(c, t, ti, ev, ns, NULL), 0);
		return arg_row(c, t, ev, row);
	case SQL_FRAMES:
		if (ev->type != KT_EV_FRAME)
			return 0;
		if (!(t = thread_state(c, ev->thread_id, &ti)))
			return -ENOMEM;
		if (t->have_frame)
			cell_u(&row[2], ns >= t->last_frame_ns ? ns - t->last_frame_ns : 0);
		t->have_frame = 1;
		t->last_frame_ns = ns;
		return 1;
	case SQL_COUNTERS:
		if ((ev->type != KT_EV_COUNTER_I64 && ev->type != KT_EV_COUNTER_F64) ||
		    !payload_value(ev, &v))
			return 0;
		name_of(c, ev->name_id, &row[2]);
		row[3] = (struct sql_cell){ .d = v };
		return 1;
	default:
		return memory_row(c, ev, row);
	}
}

/* The views made of events: the next row of the merged pass. */
static int next_event_row(struct sql_cursor *c, struct sql_cell *row, char *why, size_t cap)
{
	kt_event ev;
	int rc;
	if (!c->events_pass) {
		kt_reader_rewind(c->r);
		c->events_pass = 1;
	}
	while ((rc = kt_reader_next(c->r, &ev)) > 0) {
		uint64_t ns = kt_reader_get_time_ns(c->r, ev.ts);
		for (int i = 2; i < SQL_MAX_COLS; i++)
			row[i] = (struct sql_cell){ .null = 1 };
		cell_u(&row[0], ev.thread_id);
		cell_u(&row[c->view == SQL_ZONES ? 3 : 1], ns);
		int made = event_row(c, &ev, ns, row);
		if (made)
			return made < 0 ? read_error(c, made, why, cap) : 1;
	}
	if (rc < 0)
		return read_error(c, rc, why, cap);
	note_damage(c);
	return 0;
}

/* ---- frames, threads, captures --------------------------------------------- */

static int next_drop_row(struct sql_cursor *c, struct sql_cell *row, char *why, size_t cap)
{
	kt_trace_frame f;
	int rc;
	if (!c->events_pass) {
		kt_reader_rewind(c->r);
		kt_reader_skip_events(c->r, 1);
		c->events_pass = 1;
	}
	const kt_header *h = kt_reader_get_header(c->r);
	const kt_file_summary *s = c->t.have_summary ? &c->t.summary : NULL;
	while ((rc = kt_reader_next_frame(c->r, &f)) > 0) {
		if (f.kind != KT_FRAME_DROP)
			continue;
		cell_u(&row[0], f.u.drop.thread_id);
		cell_u(&row[1], f.u.drop.count);
		cell_u(&row[2], kt_ticks_to_ns(&h->clock, s, f.u.drop.first_ts));
		cell_u(&row[3], kt_ticks_to_ns(&h->clock, s, f.u.drop.last_ts));
		return 1;
	}
	if (rc < 0)
		return read_error(c, rc, why, cap);
	note_damage(c);
	return 0;
}


/* The sidecar's cells, from state to sidecar_problem: NULL but the last
 * two unless it matches; a mismatch noted for the command to say. */
static void side_cells(struct sql_cursor *c, const kt_header *h, struct sql_cell *row)
{
	struct sql_sidecar *s = &c->side;
	sql_sidecar_read(c->path, h, s);
	for (int i = 0; i < 9; i++)
		row[i] = (struct sql_cell){ .null = 1 };
	if (s->match > 0) {
		str_cell(&row[0], s->state);
		str_cell(&row[1], s->code);
		row[1].null = !s->code[0];
		const uint64_t v[] = { (uint64_t)s->complete, s->requested_span_ns,
				       s->capture_span_ns, s->head_loss_ns, s->tail_excess_ns };
		for (int i = 0; i < 5; i++)
			if (s->have & 1u << (SIDE_COMPLETE + i))
				cell_u(&row[2 + i], v[i]);
	}
	if (s->match)
		cell_u(&row[7], s->match > 0);
	if (s->match < 0) {
		str_cell(&row[8], s->why);
		struct sql_damage *d = &c->files->damage[c->index];
		pthread_mutex_lock(&c->files->lock);
		d->sidecar_bad = 1;
		memcpy(d->sidecar_why, s->why, sizeof(d->sidecar_why));
		pthread_mutex_unlock(&c->files->lock);
	}
}

static int next_capture_row(struct sql_cursor *c, struct sql_cell *row)
{
	if (c->next++)
		return 0;
	const kt_header *h = kt_reader_get_header(c->r);
	int cap = (h->flags & KT_HDR_CAPTURE) != 0;
	str_cell(&row[0], cap ? h->run_id : NULL);
	str_cell(&row[1], cap ? h->capture_id : NULL);
	row[0].null = row[1].null = !cap;
	cell_u(&row[2], h->epoch);
	row[2].null = !cap;
	str_cell(&row[3], h->host);
	cell_u(&row[4], h->process_id);
	cell_u(&row[5], h->start_wall_ns);
	cell_u(&row[6], c->t.summary.events_written);
	cell_u(&row[7], c->t.summary.events_dropped);
	row[6].null = row[7].null = !c->t.have_summary;
	kt_reader_skipped sk;
	kt_reader_get_skipped(c->r, &sk);
	cell_u(&row[8], !c->t.have_summary);
	cell_u(&row[9], sk.frames);
	side_cells(c, h, row + 10);
	note_damage(c);
	return 1;
}

/* Process entry @p's row; its command line's arguments joined by spaces
 * (they are separated by zero bytes in the file). */
static int process_row(struct sql_cursor *c, const struct tproc *p, struct sql_cell *row)
{
	cell_u(&row[0], p->pid);
	cell_u(&row[1], p->parent_pid);
	row[2] = (struct sql_cell){ .s = tables_process_name(&c->t, p), .len = p->name_len };
	if (grow_array((void **)&c->cmdline, &c->cmdline_cap, (size_t)p->cmdline_len + 1, 1))
		return -ENOMEM;
	memcpy(c->cmdline, tables_process_cmdline(&c->t, p), p->cmdline_len);
	for (uint32_t i = 0; i < p->cmdline_len; i++)
		c->cmdline[i] = c->cmdline[i] ? c->cmdline[i] : ' ';
	row[3] = (struct sql_cell){ .s = c->cmdline, .len = p->cmdline_len };
	cell_u(&row[4], p->start_ns);
	cell_u(&row[5], p->end_ns);
	row[4].null = !p->start_ns;
	row[5].null = !p->end_ns;
	cell_u(&row[6], !!(p->flags & KT_PROCESS_COMPLETE));
	cell_u(&row[7], !!(p->flags & KT_PROCESS_RECOVERED));
	return 1;
}

static int next_process_row(struct sql_cursor *c, struct sql_cell *row, char *why, size_t cap)
{
	size_t n = c->t.nprocs ? c->t.nprocs : 1;
	if (c->next >= n) {
		note_damage(c);
		return 0;
	}
	if (c->t.nprocs) {
		int rc = process_row(c, &c->t.procs[c->next++], row);
		if (rc < 0)
			snprintf(why, cap, "%s: out of memory", c->path);
		return rc;
	}
	c->next++;
	cell_u(&row[0], c->t.header_pid);
	for (int i = 1; i < 8; i++)
		row[i] = (struct sql_cell){ .null = 1 };
	return 1;
}

/* The rows of the views that list entries of the file's tables. */
static int next_table_row(struct sql_cursor *c, struct sql_cell *row)
{
	if (c->view == SQL_CAPTURES)
		return next_capture_row(c, row);
	if (c->next >= c->t.nthreads) {
		note_damage(c);
		return 0;
	}
	const struct tentry *e = &c->t.threads[c->next++];
	cell_u(&row[0], e->id);
	cell_u(&row[1], e->os_tid);
	row[2] = (struct sql_cell){ .s = tables_str(&c->t, e), .len = e->len };
	cell_u(&row[3], tables_process_pid(&c->t, e->process));
	return 1;
}

int sql_cursor_next(struct sql_cursor *c, struct sql_cell *row, char *why, size_t cap)
{
	int rc = c->view == SQL_DROPS ? next_drop_row(c, row, why, cap)
	       : c->view == SQL_PROCESSES ? next_process_row(c, row, why, cap)
	       : c->view == SQL_THREADS || c->view == SQL_CAPTURES ? next_table_row(c, row)
	       : next_event_row(c, row, why, cap);
	/* The file, last: a query that reads no column (count(*)) is given
	 * the first, so the first is a cheap one. */
	if (rc > 0)
		row[sql_views[c->view].ncols - 1] = (struct sql_cell){ .s = c->path,
								     .len = c->path_len };
	return rc;
}
