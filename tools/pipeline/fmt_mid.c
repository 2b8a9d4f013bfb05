/*
 * fmt_mid.c - the constant middle of an event's line (fmt_mid.h): every
 * part that depends only on the thread, the name, the type and the flags,
 * built once per cache slot by fmt.c.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/pipeline/export_state.h"
#include "tools/pipeline/fmt_mid.h"
#include "tools/pipeline/text.h"

/*
 * A name or thread name as the line shows it: escaped for a terminal, or a
 * JSON literal; @none (a literal) when the file defines no such id.
 * Returns a malloc'd string or NULL when out of memory.
 */
static char *label(const char *s, size_t n, int json, const char *none)
{
	if (!s)
		return strdup(none);
	return json ? text_json(s, n) : text_escape(s, n);
}

static char *name_label(const struct tables *t, uint32_t id, int json)
{
	size_t n = 0;
	const char *s = id ? tables_name(t, id, &n) : NULL;
	return label(s, n, json, json ? "null" : "?");
}

static char *thread_label(const struct tables *t, uint32_t id, int json)
{
	size_t n = 0;
	const char *s = tables_thread(t, id, &n);
	return label(s, n, json, json ? "null" : "");
}

static const char *const severity[] = { "", "trace", "debug", "info", "warn", "error", "fatal" };
static const char *const frame_phase[] = { "mark", "begin", "end" };

/*
 * Where a zone's begin came from (SPEC §4.7): "" when the file gives no
 * location for @ev's name or @ev is no zone begin, else @pre, then
 * "file:line" escaped for a terminal or as a JSON literal, then @post.  A
 * malloc'd string, NULL when out of memory.
 */
static char *loc_label(const struct tables *t, const kt_event *ev, int json, const char *pre,
		       const char *post)
{
	const struct tloc *l = ev->type == KT_EV_ZONE_BEGIN ? tables_loc(t, ev->name_id) : NULL;
	char *raw = NULL, *lit = NULL, *out = NULL;
	if (!l)
		return strdup("");
	if (asprintf(&raw, "%s:%u", tloc_file(t, l), l->line) < 0)
		return NULL;
	lit = label(raw, strlen(raw), json, "");
	if (lit && asprintf(&out, "%s%s%s", pre, lit, post) < 0)
		out = NULL;
	free(raw);
	free(lit);
	return out;
}

/* A Chrome zone begin's extras: its category as "cat" (the viewer's
 * filter) and its location as "loc" (where Tracy's import-chrome reads a
 * zone's source file and line) and as args.loc (which Perfetto's UI and
 * chrome://tracing show); "" when the file gives neither. */
static char *chrome_loc(const struct tables *t, const kt_event *ev)
{
	const struct tloc *l = ev->type == KT_EV_ZONE_BEGIN ? tables_loc(t, ev->name_id) : NULL;
	char *cat = l && l->category ? name_label(t, l->category, 1) : strdup("");
	char *loc = loc_label(t, ev, 1, "", ""), *out = NULL;
	if (cat && loc && asprintf(&out, "%s%s%s%s%s%s%s", *cat ? ",\"cat\":" : "", cat,
				   *loc ? ",\"loc\":" : "", loc, *loc ? ",\"args\":{\"loc\":" : "",
				   loc, *loc ? "}" : "") < 0)
		out = NULL;
	free(cat);
	free(loc);
	return out;
}

/* What the middle of @ev adds after its name for @kind: a zone begin's
 * location, a message's severity, a named frame's phase.  Malloc'd. */
static char *mid_extra(const struct tables *t, const kt_event *ev, int kind)
{
	int json = kind != FMT_TEXT;
	char *out = NULL;
	if (ev->type == KT_EV_MESSAGE && ev->flags && ev->flags <= KT_SEV_FATAL) {
		const char *sev = severity[ev->flags];
		if (asprintf(&out, kind == FMT_CHROME ? ",\"severity\":\"%s\"" :
				   json ? ",\"severity\":\"%s\"" : " [%s]", sev) < 0)
			out = NULL;
		return out;
	}
	if (ev->type == KT_EV_FRAME && kind != FMT_CHROME && ev->flags &&
	    ev->flags <= KT_FRAME_PHASE_END) {
		if (asprintf(&out, json ? ",\"phase\":\"%s\"" : " %s", frame_phase[ev->flags]) < 0)
			out = NULL;
		return out;
	}
	if (fmt_is_track(ev->type) && kind != FMT_CHROME) {
		const kt_track_def *d = tables_track(t, ev->flags);
		char *nm = d ? name_label(t, d->name_id, json) : NULL;
		if (d && !nm)
			return NULL;
		if (asprintf(&out, json ? ",\"track\":%s" : " track=%s",
			     nm ? nm : json ? "null" : "?") < 0)
			out = NULL;
		free(nm);
		return out;
	}
	if (kind == FMT_CHROME)
		return chrome_loc(t, ev);
	return json ? loc_label(t, ev, 1, ",\"loc\":", "") : loc_label(t, ev, 0, " @", "");
}

/* A frame mark's name for Chrome: Tracy's importer takes an instant for a
 * frame mark when its name holds "frame", so a name without it gets
 * "frame: " before it.  A JSON literal, malloc'd; NULL when out of memory. */
static char *frame_name(const struct tables *t, uint32_t id)
{
	size_t n = 0;
	const char *s = id ? tables_name(t, id, &n) : NULL;
	if (s && memmem(s, n, "frame", 5))
		return text_json(s, n);
	char *raw = malloc(n + 8), *lit;
	if (!raw)
		return NULL;
	memcpy(raw, s ? "frame: " : "frame", s ? 7 : 5);
	if (s)
		memcpy(raw + 7, s, n); /* bytes as they are: text_json() escapes */
	lit = text_json(raw, s ? n + 7 : 5);
	free(raw);
	return lit;
}

static int chrome_mid(char **buf, const char *head, const char *nm, const char *extra,
		      const kt_event *ev);

/* The type whose Chrome middle a type without a case of its own takes:
 * the one of its value kind, which fmt.c's switch over kinds closes (an
 * argument's for a number or text, "memory"'s for an allocation); 0 for
 * a kind shown as bytes. */
static uint8_t chrome_like(const kt_event *ev)
{
	kt_value v;
	kt_event_get_value(ev, &v);
	switch (v.kind) {
	case KT_VALUE_NONE:
		return KT_EV_INSTANT;
	case KT_VALUE_I64:
		return KT_EV_ARG_I64;
	case KT_VALUE_U64:
		return KT_EV_ARG_U64;
	case KT_VALUE_F64:
		return KT_EV_ARG_F64;
	case KT_VALUE_TEXT:
		return KT_EV_ARG_STR;
	case KT_VALUE_FRAME:
		return KT_EV_FRAME;
	case KT_VALUE_FLOW:
		return KT_EV_FLOW;
	case KT_VALUE_ALLOC:
	case KT_VALUE_FREE:
		return KT_EV_ALLOC;
	default:
		return 0;
	}
}

/* A type without a case in chrome_mid(): an added row shows as its value
 * kind's type does, with no line here; bytes (fmt.c's chrome_other()) for
 * the rest. */
static int other_mid(char **buf, const char *head, const char *nm, const char *extra,
		     const kt_event *ev)
{
	kt_event like = *ev;
	if ((like.type = chrome_like(ev)))
		return chrome_mid(buf, head, nm, extra, &like);
	return asprintf(buf, "%s\"ph\":\"i\",\"s\":\"t\",\"name\":%s,\"args\":{", head, nm);
}

/* The Chrome middle of @ev after its head (@head, @nm the name literal,
 * @extra mid_extra()'s). */
static int chrome_mid(char **buf, const char *head, const char *nm, const char *extra,
		      const kt_event *ev)
{
	if (fmt_is_arg(ev->type)) {
		/* The zone's own value or text has no name: its key says which. */
		const char *key = ev->name_id ? nm : ev->type == KT_EV_ARG_STR ? "\"text\"" : "\"value\"";
		return asprintf(buf, "%s\"ph\":\"i\",\"s\":\"t\",\"name\":%s,\"cat\":\"arg\",\"args\":{%s:",
				head, ev->name_id ? nm : key, key);
	}
	if (ev->type == KT_EV_FRAME && ev->flags && ev->flags <= KT_FRAME_PHASE_END)
		return asprintf(buf, "%s\"ph\":\"%s\",\"name\":%s,\"cat\":\"frame\",\"id\":", head,
				ev->flags == KT_FRAME_PHASE_BEGIN ? "b" : "e", nm);
	switch (ev->type) {
	case KT_EV_ZONE_BEGIN:
		return asprintf(buf, "%s\"ph\":\"B\",\"name\":%s%s}", head, nm, extra);
	case KT_EV_MESSAGE:
		/* The text follows as the name: the event's name is an arg. */
		return asprintf(buf, "%s\"ph\":\"i\",\"s\":\"t\",\"args\":{\"event\":%s%s},\"name\":",
				head, nm, extra);
	case KT_EV_ZONE_END:
		return asprintf(buf, "%s\"ph\":\"E\",\"name\":%s}", head, nm);
	case KT_EV_INSTANT:
		return asprintf(buf, "%s\"ph\":\"i\",\"s\":\"t\",\"name\":%s}", head, nm);
	case KT_EV_COUNTER_I64:
	case KT_EV_COUNTER_F64:
		/* The value's key is the counter's name: a viewer names the plot
		 * by the key (Tracy) or by the name and the key (Perfetto). */
		return asprintf(buf, "%s\"ph\":\"C\",\"name\":%s,\"args\":{%s:", head, nm,
				*nm == '"' ? nm : "\"?\"");
	case KT_EV_ALLOC:
	case KT_EV_FREE:
		/* A counter "memory", a value per pool keyed by the pool's name
		 * (the plot's name in Tracy; "memory POOL" in Perfetto): @nm is a
		 * JSON string literal, or null for the default pool or an
		 * unnamed one. */
		return asprintf(buf, "%s\"ph\":\"C\",\"name\":\"memory\",\"args\":{%s:", head,
				*nm == '"' ? nm : ev->name_id ? "\"?\"" : "\"default\"");
	case KT_EV_FRAME:
		return asprintf(buf, "%s\"ph\":\"i\",\"s\":\"p\",\"name\":%s,\"cat\":\"frame\","
				     "\"args\":{\"frame\":", head, nm);
	case KT_EV_FLOW: {
		/* "bp":"e" on each: bound to the slice that encloses it. */
		static const char *const ph[3] = { "\"ph\":\"s\",\"bp\":\"e\",",
						   "\"ph\":\"t\",\"bp\":\"e\",",
						   "\"ph\":\"f\",\"bp\":\"e\"," };
		return asprintf(buf, "%s%s\"name\":%s,\"cat\":\"flow\",\"id\":", head,
				ph[ev->flags < 3 ? ev->flags : 0], nm);
	}
	default:
		return other_mid(buf, head, nm, extra, ev);
	}
}

int fmt_build_mid(char **buf, size_t *split, const struct fmt_job *j, const kt_event *ev)
{
	const char *type = kt_event_type_name(ev->type);
	int json = j->kind != FMT_TEXT, n = -1;
	/* An argument without a name is its zone's own value or text. */
	int mark = ev->type == KT_EV_FRAME && (!ev->flags || ev->flags > KT_FRAME_PHASE_END);
	char *nm = fmt_is_arg(ev->type) && !ev->name_id ? strdup(json ? "null" : "-")
		 : mark && j->kind == FMT_CHROME ? frame_name(j->t, ev->name_id)
		 : fmt_is_mem(ev->type) && !ev->name_id ? strdup(json ? "null" : "default")
						 : name_label(j->t, ev->name_id, json);
	char *th = j->kind == FMT_CHROME ? NULL : thread_label(j->t, ev->thread_id, json);
	char *loc = mid_extra(j->t, ev, j->kind);
	*split = 0;
	if (!nm || !loc || (j->kind != FMT_CHROME && !th)) {
		/* out of memory: n stays -1 */
	} else if (j->kind == FMT_JSONL) {
		n = asprintf(buf, ",\"tid\":%u,\"thread\":%s,\"type\":\"%s\",\"name\":%s%s",
			     ev->thread_id, th, type, nm, loc);
	} else if (j->kind == FMT_CHROME) {
		char head[64];
		/* The OS tid: what the user's other tools call the thread. */
		int h = snprintf(head, sizeof(head), ",\n{\"pid\":%" PRIu64 ",\"tid\":%u,\"ts\":",
				 export_pid(j->t, ev->thread_id, j->pid),
				 export_os_tid(j->t, ev->thread_id));
		*split = (size_t)h;
		n = chrome_mid(buf, head, nm, loc, ev);
	} else {
		n = asprintf(buf, " %u %s %s %s%s", ev->thread_id, th, type, nm, loc);
	}
	free(nm);
	free(th);
	free(loc);
	return n;
}


char *fmt_track_tail(char *d, const struct fmt_job *j, const kt_event *ev)
{
	int json = j->kind == FMT_JSONL, n;
	kt_track_event te;
	uint64_t ticks;
	int rc = tables_track_ticks(j->t, ev, &te, &ticks);
	if (rc == 1)
		return d;
	n = snprintf(d, 32, json ? ",\"track_ts\":%" PRIu64 : " ts=%" PRIu64, te.track_ts);
	d += n > 0 && n < 32 ? n : 0;
	if (rc == 0 && j->drops_r) {
		uint64_t ns = kt_reader_get_time_ns(j->drops_r, ticks);
		n = snprintf(d, 32, json ? ",\"at_ns\":%" PRIu64 : " at=%" PRIu64, ns);
		d += n > 0 && n < 32 ? n : 0;
	}
	if (ev->type == KT_EV_TRACK_COUNTER_I64)
		n = snprintf(d, 32, json ? ",\"value\":%" PRId64 : " value=%" PRId64, te.value_i64);
	else if (ev->type == KT_EV_TRACK_COUNTER_F64 && (!json || te.value_f64 - te.value_f64 == 0))
		n = snprintf(d, 32, json ? ",\"value\":%.17g" : " value=%.17g", te.value_f64);
	else if (ev->type == KT_EV_TRACK_COUNTER_F64)
		n = snprintf(d, 32, ",\"value\":null");
	else
		n = 0;
	return d + (n > 0 && n < 32 ? n : 0);
}
