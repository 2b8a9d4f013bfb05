/*
 * export_args.c - zone arguments as the exports write them;
 * export_args.h says how.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/export/export_args.h"
#include "tools/pipeline/grow.h"
#include "tools/export/perfetto_trace.pb-c.h"
#include "tools/pipeline/text.h"

char *xarg_name(const struct tables *t, const struct xarg *a, size_t *n)
{
	size_t len = 0;
	const char *s = a->name ? tables_name(t, a->name, &len) : NULL;
	if (!s) {
		s = a->name ? "?" : a->type == KT_EV_ARG_STR ? "text" : "value";
		len = strlen(s);
	}
	char *u = text_utf8(s, len, n), *out = NULL;
	if (!a->nth || !u)
		return u;
	int k = asprintf(&out, "%s#%" PRIu32, u, a->nth + 1);
	free(u);
	*n = k < 0 ? 0 : (size_t)k;
	return k < 0 ? NULL : out;
}

void xarg_of_event(struct xarg *a, const kt_event *ev)
{
	kt_value v;
	kt_event_get_value(ev, &v);
	*a = (struct xarg){ .name = ev->name_id, .type = ev->type };
	if (v.kind == KT_VALUE_TEXT) {
		a->text = (char *)v.bytes;
		a->len = (uint32_t)v.len;
	} else {
		a->bits = v.bits;
	}
}

int xarg_pb(const struct tables *t, const struct xarg *a, struct abuf *ab)
{
	size_t n = 0;
	Perfetto__Protos__DebugAnnotation d = PERFETTO__PROTOS__DEBUG_ANNOTATION__INIT;
	d.name = xarg_name(t, a, &n);
	if (a->type == KT_EV_ARG_STR)
		d.string_value = text_utf8(a->text, a->len, NULL);
	else if (a->type == KT_EV_ARG_F64)
		d.has_double_value = 1, memcpy(&d.double_value, &a->bits, 8);
	else if (a->type == KT_EV_ARG_U64)
		d.has_uint_value = 1, d.uint_value = a->bits;
	else
		d.has_int_value = 1, d.int_value = (int64_t)a->bits;
	int rc = !d.name || (a->type == KT_EV_ARG_STR && !d.string_value) ? -ENOMEM : 0;
	size_t len = rc ? 0 : perfetto__protos__debug_annotation__get_packed_size(&d);
	if (!rc && ab->n + len + 11 > XARG_PB_MAX)
		rc = 1;
	else if (!rc && grow_array((void **)&ab->b, &ab->cap, ab->n + len + 11, 1))
		rc = -ENOMEM;
	if (!rc) {
		uint8_t *q = ab->b + ab->n;
		*q++ = 4 << 3 | 2; /* TrackEvent.debug_annotations */
		for (size_t v = len; ; v >>= 7) { /* its length, a varint */
			*q++ = (uint8_t)(v < 0x80 ? v : (v & 0x7F) | 0x80);
			if (v < 0x80)
				break;
		}
		ab->n = (size_t)(q - ab->b) + perfetto__protos__debug_annotation__pack(&d, q);
	}
	free(d.name);
	free(d.string_value);
	return rc;
}

int xarg_pb_kept(const struct tables *t, struct xthread *th, size_t level, struct abuf *ab)
{
	size_t n;
	struct xarg *a = xstate_args(th, level, &n);
	for (size_t i = 0; i < n; i++) {
		if (a[i].done)
			continue;
		int rc = xarg_pb(t, &a[i], ab);
		if (rc)
			return rc < 0 ? rc : 0;
		a[i].done = 1;
	}
	return 0;
}

/* One JSON member "NAME":VALUE for @a, after a comma when @comma; NULL
 * out of memory. */
static char *json_member(const struct tables *t, const struct xarg *a, int comma)
{
	size_t n = 0;
	char *s = xarg_name(t, a, &n);
	char *key = s ? text_json(s, n) : NULL, *val = NULL, *out = NULL, num[48];
	free(s);
	double d;
	memcpy(&d, &a->bits, 8);
	if (a->type == KT_EV_ARG_STR)
		val = text_json(a->text, a->len);
	else if (a->type == KT_EV_ARG_I64)
		val = snprintf(num, sizeof(num), "%" PRId64, (int64_t)a->bits) > 0 ? strdup(num) : NULL;
	else if (a->type == KT_EV_ARG_U64)
		val = snprintf(num, sizeof(num), a->bits > INT64_MAX ? "\"%" PRIu64 "\"" : "%" PRIu64,
			       a->bits) > 0 ? strdup(num) : NULL;
	else
		val = snprintf(num, sizeof(num), d - d == 0 ? "%.17g" : "\"%g\"", d) > 0
			? strdup(num) : NULL;
	if (key && val && asprintf(&out, "%s%s:%s", comma ? "," : "", key, val) < 0)
		out = NULL;
	free(key);
	free(val);
	return out;
}

int xarg_json_kept(const struct tables *t, struct xthread *th, size_t level, const char *base,
		   char **out)
{
	size_t n, len = strlen(base), cap = 0;
	struct xarg *a = xstate_args(th, level, &n);
	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		if (a[i].done)
			continue;
		char *m = json_member(t, &a[i], len > 0);
		size_t ml = m ? strlen(m) : 0;
		int first = !*out;
		if (!m || grow_array((void **)out, &cap, len + ml + 1, 1)) {
			free(m);
			free(*out);
			*out = NULL;
			return -ENOMEM;
		}
		if (first)
			memcpy(*out, base, len);
		memcpy(*out + len, m, ml + 1);
		len += ml;
		free(m);
		a[i].done = 1;
	}
	return 0;
}
