/*
 * sql_side.c - the captures view's sidecar columns (tools/cmd/sql_scan.h):
 * the capture manager's FILE.json beside a trace (format/SPEC.md §9),
 * read as hostile as the trace and believed only when it matches it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include <katra/capture.h>
#include "capture/capture_internal.h"
#include "tools/pipeline/sql_side.h"

/* A sidecar is one line of a few hundred bytes; past this it is not one. */
#define SIDE_MAX (64u << 10)

/* @path's bytes into @buf (SIDE_MAX + 1 bytes) without following a link
 * or waiting on a FIFO: their count, -1 when there is no such file, or
 * -2 with @s->why. */
static ssize_t side_bytes(struct sql_sidecar *s, const char *path, char *buf)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return -1;
	struct stat sb;
	ssize_t n = -2;
	if (fd < 0 || fstat(fd, &sb))
		snprintf(s->why, sizeof(s->why), "cannot read it (%s)",
			 errno == ELOOP ? "a symbolic link" : strerror(errno));
	else if (!S_ISREG(sb.st_mode))
		snprintf(s->why, sizeof(s->why), "cannot read it (not a regular file)");
	else if ((n = pread(fd, buf, SIDE_MAX + 1, 0)) < 0)
		snprintf(s->why, sizeof(s->why), "cannot read it (%s)", strerror(errno));
	else if (n > (ssize_t)SIDE_MAX)
		snprintf(s->why, sizeof(s->why), "cannot read it (over 64 KiB)");
	if (fd >= 0)
		close(fd);
	return n >= 0 && n <= (ssize_t)SIDE_MAX ? n : -2;
}

/* The trace's SHA-256 and size, read through its own descriptor. */
static int trace_hash(struct sql_sidecar *s, const char *path, char sha[65], uint64_t *bytes)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	int rc = fd < 0 ? -errno : kt__sha256_fd(fd, sha, bytes);
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		snprintf(s->why, sizeof(s->why), "cannot hash the trace (%s)", strerror(-rc));
	return rc;
}

/* Do the sidecar's run id, epoch and capture id name the trace's header?
 * 0, or -1 with @s->why. */
static int same_capture(struct sql_sidecar *s, json_t *o, const kt_header *h)
{
	const char *run = json_string_value(json_object_get(o, "run_id"));
	const char *cap = json_string_value(json_object_get(o, "capture_id"));
	json_t *ep = json_object_get(o, "epoch");
	if (!(h->flags & KT_HDR_CAPTURE))
		snprintf(s->why, sizeof(s->why), "the trace's header names no capture");
	else if (!run || strcmp(run, h->run_id))
		snprintf(s->why, sizeof(s->why), "run_id is \"%.128s\", the trace's is \"%.128s\"",
			 run ? run : "", h->run_id);
	else if (!json_is_integer(ep) || (uint64_t)json_integer_value(ep) != h->epoch)
		snprintf(s->why, sizeof(s->why), "epoch is not the trace's (%" PRIu64 ")",
			 h->epoch);
	else if (!cap || strcmp(cap, h->capture_id))
		snprintf(s->why, sizeof(s->why),
			 "capture_id is \"%.64s\", the trace's is \"%.64s\"", cap ? cap : "",
			 h->capture_id);
	else
		return 0;
	return -1;
}

/* A non-negative integer member into *@v; @mask's bit @bit set when it is one. */
static void side_u64(json_t *o, const char *key, uint64_t *v, unsigned *mask, unsigned bit)
{
	json_t *j = json_object_get(o, key);
	if (json_is_integer(j) && json_integer_value(j) >= 0) {
		*v = (uint64_t)json_integer_value(j);
		*mask |= 1u << bit;
	}
}

/* A string member into @dst (@cap bytes, cut); "" when absent. */
static void side_str(json_t *o, const char *key, char *dst, size_t cap)
{
	const char *v = json_string_value(json_object_get(o, key));
	snprintf(dst, cap, "%s", v ? v : "");
}

/* The fields of a sidecar that matched. */
static void side_fields(struct sql_sidecar *s, json_t *o)
{
	side_str(o, "state", s->state, sizeof(s->state));
	side_str(o, "code", s->code, sizeof(s->code));
	json_t *c = json_object_get(o, "complete");
	if (json_is_boolean(c)) {
		s->complete = json_is_true(c);
		s->have |= 1u << SIDE_COMPLETE;
	}
	side_u64(o, "requested_span_ns", &s->requested_span_ns, &s->have, SIDE_REQUESTED);
	side_u64(o, "capture_span_ns", &s->capture_span_ns, &s->have, SIDE_SPAN);
	side_u64(o, "head_loss_ns", &s->head_loss_ns, &s->have, SIDE_HEAD);
	side_u64(o, "tail_excess_ns", &s->tail_excess_ns, &s->have, SIDE_TAIL);
}

/* Is it the capture manager's?  As `katra verify` decides: its schema
 * says so, or the trace's header says it was captured (then whatever
 * sits there must match). */
static int is_ours(json_t *o, const kt_header *h)
{
	const char *schema = json_string_value(json_object_get(o, "schema"));
	return (schema && !strcmp(schema, KT_CAPTURE_SCHEMA)) || (h->flags & KT_HDR_CAPTURE);
}

void sql_sidecar_match(const char *json, size_t len, const char *base, const char *sha256,
		       uint64_t bytes, const kt_header *h, struct sql_sidecar *s)
{
	json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, NULL);
	s->match = -1;
	if (!kt__sidecar_check(json, len, base, sha256, bytes, s->why, sizeof(s->why)) && o &&
	    !same_capture(s, o, h)) {
		s->match = 1;
		side_fields(s, o);
	}
	json_decref(o);
}

void sql_sidecar_read(const char *path, const kt_header *h, struct sql_sidecar *s)
{
	char name[4096], sha[65], *buf = malloc(SIDE_MAX + 1);
	uint64_t bytes = 0;
	memset(s, 0, sizeof(*s));
	if (!buf) {
		s->match = -1;
		snprintf(s->why, sizeof(s->why), "out of memory");
		return;
	}
	ssize_t n = -1; /* a name too long for a file: no sidecar */
	if ((size_t)snprintf(name, sizeof(name), "%s.json", path) < sizeof(name))
		n = side_bytes(s, name, buf);
	json_t *o = n >= 0 ? json_loadb(buf, (size_t)n, 0, NULL) : NULL;
	int ours = o && is_ours(o, h), captured = !!(h->flags & KT_HDR_CAPTURE);
	json_decref(o);
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (n == -1 || (n >= 0 && !ours && !captured)) {
		s->match = 0; /* none, or another tool's JSON beside a plain trace */
	} else if (n < 0) {
		s->match = -1;
	} else if (!ours) {
		snprintf(s->why, sizeof(s->why), "not a capture sidecar (not JSON of schema %s), "
			 "yet the trace's header says it was captured", KT_CAPTURE_SCHEMA);
		s->match = -1;
	} else if (trace_hash(s, path, sha, &bytes) < 0) {
		s->match = -1;
	} else {
		sql_sidecar_match(buf, (size_t)n, base, sha, bytes, h, s);
	}
	free(buf);
}
