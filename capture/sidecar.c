/*
 * The sidecar, both ways: a capture's status as the JSON of its sidecar
 * and of `katra capture status` (format/SPEC.md section 9), with the names
 * of states and codes it uses, and the check `katra verify` makes of a
 * sidecar it did not write.  Writer and checker live here together so the
 * fields they agree on are read in one file.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include <katra/capture.h>
#include "capture/capture_internal.h"
#include "format/utf8.h"

static const char *const state_names[] = {
#define KT__STATE_NAME(name, value, text) [name] = text,
	KT_CAPTURE_STATES(KT__STATE_NAME)
#undef KT__STATE_NAME
};

static const char *const code_names[] = {
#define KT__CODE_NAME(name, value, text) [name] = text,
	KT_CAPTURE_CODES(KT__CODE_NAME)
#undef KT__CODE_NAME
};

const char *kt_capture_state_name(kt_capture_state state)
{
	if ((unsigned)state < sizeof(state_names) / sizeof(*state_names) && state_names[state])
		return state_names[state];
	return "";
}

const char *kt_capture_code_name(kt_capture_code code)
{
	if ((unsigned)code < sizeof(code_names) / sizeof(*code_names) && code_names[code])
		return code_names[code];
	return "";
}

/* RFC 3339 in UTC with the fraction's trailing zeros cut, as Go writes a
 * time.Time: 2026-11-30T05:00:00.12Z. */
static void rfc3339(uint64_t ns, char *buf, size_t size)
{
	time_t sec = (time_t)(ns / 1000000000u);
	unsigned frac = (unsigned)(ns % 1000000000u);
	struct tm tm;
	gmtime_r(&sec, &tm);
	size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	if (frac) {
		char f[16];
		snprintf(f, sizeof(f), ".%09u", frac);
		size_t l = strlen(f);
		while (l > 2 && f[l - 1] == '0')
			f[--l] = 0;
		snprintf(buf + n, size - n, "%sZ", f);
	} else {
		snprintf(buf + n, size - n, "Z");
	}
}

/* A string of the status as JSON.  A caller may fill a status with any
 * bytes: those that are not UTF-8 are escaped, never a reason to fail. */
static int set_str(json_t *o, const char *key, const char *v, int omit_empty)
{
	if (omit_empty && !v[0])
		return 0;
	json_t *j = json_string(v);
	if (!j) {
		size_t n = strlen(v), cap = 4 * n + 1;
		char *fixed = malloc(cap);
		if (!fixed)
			return -1;
		kt__utf8_repair(v, n, fixed, cap);
		j = json_string(fixed);
		free(fixed);
	}
	return json_object_set_new(o, key, j);
}

static int set_time(json_t *o, const char *key, uint64_t ns)
{
	char buf[64];
	if (!ns)
		return 0;
	rfc3339(ns, buf, sizeof(buf));
	return json_object_set_new(o, key, json_string(buf));
}

char *kt_capture_status_json(const kt_capture_status *st)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	int e = 0;
	e |= set_str(o, "schema", KT_CAPTURE_SCHEMA, 0);
	e |= set_str(o, "run_id", st->run_id, 0);
	e |= json_object_set_new(o, "epoch", json_integer((json_int_t)st->epoch));
	e |= set_str(o, "capture_id", st->capture_id, 0);
	e |= set_str(o, "state", kt_capture_state_name(st->state), 0);
	e |= set_str(o, "code", kt_capture_code_name(st->code), 1);
	e |= set_str(o, "file", st->file, 1);
	e |= set_str(o, "sha256", st->sha256, 1);
	if (st->bytes)
		e |= json_object_set_new(o, "bytes", json_integer((json_int_t)st->bytes));
	e |= set_str(o, "sidecar", st->sidecar, 1);
	e |= set_time(o, "boundary_start", st->boundary_start);
	e |= set_time(o, "boundary_finish", st->boundary_finish);
	e |= set_time(o, "start_requested_at", st->start_requested_at);
	e |= set_time(o, "start_completed_at", st->start_completed_at);
	e |= set_time(o, "stop_requested_at", st->stop_requested_at);
	e |= set_time(o, "stop_completed_at", st->stop_completed_at);
	e |= set_str(o, "stop_reason", st->stop_reason, 1);
	e |= json_object_set_new(o, "requested_span_ns", json_integer(st->requested_span_ns));
	e |= json_object_set_new(o, "capture_span_ns", json_integer(st->capture_span_ns));
	e |= json_object_set_new(o, "head_loss_ns", json_integer(st->head_loss_ns));
	e |= json_object_set_new(o, "tail_excess_ns", json_integer(st->tail_excess_ns));
	e |= json_object_set_new(o, "complete", json_boolean(st->complete));
	char *s = e ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return s;
}

static const char *str_of(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

/* A joined capture's sidecar beside the trace its harness published (a
 * crash between the join's two renames): the trace is not the sidecar's
 * but the one it was joined from. */
static int join_undone(json_t *o, const char *sha256, uint64_t bytes)
{
	json_t *b = json_object_get(o, "joined_from_bytes");
	return json_is_integer(b) && (uint64_t)json_integer_value(b) == bytes &&
	       !strcmp(str_of(o, "joined_from_sha256"), sha256) && strcmp(str_of(o, "sha256"), sha256);
}

int kt__sidecar_check(const char *json, size_t len, const char *file, const char *sha256,
		      uint64_t bytes, char *why, size_t why_len)
{
	json_error_t err;
	json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &err);
	int rc = -1;
	if (!o) {
		snprintf(why, why_len, "not JSON: line %d, column %d: %s", err.line, err.column,
			 err.text);
		return -1;
	}
	json_t *b = json_object_get(o, "bytes");
	if (!json_is_object(o))
		snprintf(why, why_len, "not a JSON object");
	else if (strcmp(str_of(o, "schema"), KT_CAPTURE_SCHEMA))
		snprintf(why, why_len, "schema is \"%.64s\", not \"%s\"", str_of(o, "schema"),
			 KT_CAPTURE_SCHEMA);
	else if (strcmp(str_of(o, "state"), "published"))
		snprintf(why, why_len, "state is \"%.32s\", not \"published\"", str_of(o, "state"));
	else if (strcmp(str_of(o, "file"), file))
		snprintf(why, why_len, "it names the file \"%.128s\", not \"%.128s\"",
			 str_of(o, "file"), file);
	else if (join_undone(o, sha256, bytes)) {
		snprintf(why, why_len, "its join with the run's other processes did not finish: "
			 "the trace is the capture its harness published (joined_from_sha256)");
		rc = 1;
	} else if (!json_is_integer(b) || (uint64_t)json_integer_value(b) != bytes)
		snprintf(why, why_len, "bytes is %" PRId64 ", the file has %" PRIu64,
			 json_is_integer(b) ? (int64_t)json_integer_value(b) : (int64_t)-1, bytes);
	else if (strcmp(str_of(o, "sha256"), sha256))
		snprintf(why, why_len, "sha256 is %.64s, the file's is %s", str_of(o, "sha256"),
			 sha256);
	else
		rc = 0;
	json_decref(o);
	return rc;
}
