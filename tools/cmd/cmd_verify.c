/*
 * cmd_verify.c - `katra verify FILE [--json]`: the trace's own verdict
 * (every frame and checksum read), and its capture sidecar's, if any.
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
#include <katra/reader.h>
#include "capture/capture_internal.h"
#include "format/reader_internal.h"
#include "tools/cmd/cli.h"
#include "tools/cmd/cmd.h"
#include "tools/cmd/opts.h"
#include "tools/pipeline/progress.h"

/* The trace's own verdict. */
struct verdict {
	int rc;                /* 0, or the open's or the pass's code */
	kt_reader_status st;
	kt_reader_error err;
	int captured;          /* the header says KT_HDR_CAPTURE */
	int not_bytes;         /* it failed, but not for its bytes (no memory...) */
	int truncated, corrupt;
	uint64_t cut;          /* truncated: where */
	uint64_t back;         /* events earlier than the one before on their thread */
	uint64_t back_off;     /* the chunk frame of the first of them */
};

static void verify_trace(struct input *in, const char *path, struct verdict *v)
{
	memset(v, 0, sizeof(*v));
	v->rc = input_open_quiet(in, path, &v->err);
	if (v->rc == 0) {
		kt_trace_frame f;
		v->captured = !!(kt_reader_get_header(in->r)->flags & KT_HDR_CAPTURE);
		progress_init(0, NULL);
		while ((v->rc = kt_reader_next_frame(in->r, &f)) > 0) {
			kt_reader_get_status(in->r, &v->st);
			progress(v->st.valid_end, v->st.file_size);
		}
		progress_end();
		kt_reader_get_status(in->r, &v->st);
		v->err = *kt_reader_get_last_error(in->r);
		v->back = kt__reader_ts_backwards(in->r, &v->back_off);
	}
	/* An OS error (missing path, a directory, no memory) says nothing
	 * about the bytes: no offset, just the reason. */
	v->truncated = v->rc == KT_ETRUNCATED || (v->rc == 0 && v->st.truncated);
	v->corrupt = is_corruption(v->rc);
	v->not_bytes = v->rc < 0 && !v->truncated && !v->corrupt;
	v->cut = v->rc == KT_ETRUNCATED ? v->err.offset : v->st.valid_end;
}

/* What sits beside the trace as FILE.json. */
struct sidecar {
	int state;          /* 0 none (or not a capture's); 1 matches; 2 the
			     * trace its join started from (why says); -1
			     * does not */
	char path[4096];
	char why[512];
	char sha[65];
};

#define SIDECAR_MAX (1 << 20) /* a sidecar is one line of a few hundred bytes */

/*
 * Read the file at @path into *@json without following a link or waiting
 * on a FIFO.  Returns 1 with the bytes (free() them), 0 when there is no
 * such file, -1 with @s->why when it cannot be read.
 */
static int sidecar_read(struct sidecar *s, char **json, size_t *len)
{
	struct stat sb;
	int fd = open(s->path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	*json = NULL;
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0 || fstat(fd, &sb) < 0) {
		snprintf(s->why, sizeof(s->why), "cannot read it (%s)",
			 errno == ELOOP ? "a symbolic link" : strerror(errno));
	} else if (!S_ISREG(sb.st_mode)) {
		snprintf(s->why, sizeof(s->why), "cannot read it (not a regular file)");
	} else if (sb.st_size > SIDECAR_MAX) {
		snprintf(s->why, sizeof(s->why), "cannot read it (over 1 MiB)");
	} else if (!(*json = malloc((size_t)sb.st_size + 1))) {
		snprintf(s->why, sizeof(s->why), "cannot read it (out of memory)");
	} else if ((*len = (size_t)pread(fd, *json, (size_t)sb.st_size, 0)) != (size_t)sb.st_size) {
		snprintf(s->why, sizeof(s->why), "cannot read it (%s)",
			 *len == (size_t)-1 ? strerror(errno) : "it changed while read");
		free(*json);
		*json = NULL;
	}
	if (fd >= 0)
		close(fd);
	return *json ? 1 : -1;
}

/* Does this JSON say it is a capture manager's sidecar?  1 yes, 0 it is
 * other JSON, -1 it is not JSON at all. */
static int is_capture_sidecar(const char *json, size_t len)
{
	json_t *o = json_loadb(json, len, 0, NULL);
	const char *schema = json_string_value(json_object_get(o, "schema"));
	int yes = !o ? -1 : schema && !strcmp(schema, KT_CAPTURE_SCHEMA);
	json_decref(o);
	return yes;
}

/*
 * Check FILE.json against the trace (read through @fd) when it is a
 * capture's sidecar: its schema says so, or the trace's header says the
 * trace was captured (then whatever sits there must match).  Anything
 * else there, such as a Chrome export, is not checked.
 */
static void verify_sidecar(struct sidecar *s, const char *path, int fd, int captured)
{
	char *json = NULL;
	size_t len = 0;
	memset(s, 0, sizeof(*s));
	if ((size_t)snprintf(s->path, sizeof(s->path), "%s.json", path) >= sizeof(s->path))
		return;
	int rc = sidecar_read(s, &json, &len);
	int ours = rc > 0 ? is_capture_sidecar(json, len) : -1;
	const char *base = strrchr(path, '/');
	uint64_t bytes = 0;
	if (rc == 0 || (ours < 1 && !captured)) {
		s->state = 0;
	} else if (rc < 0) {
		s->state = -1;
	} else if (ours == 0) {
		snprintf(s->why, sizeof(s->why), "not a capture sidecar (its schema is not %s), "
			 "yet the trace's header says it was captured", KT_CAPTURE_SCHEMA);
		s->state = -1;
	} else if (fd < 0 || (rc = kt__sha256_fd(fd, s->sha, &bytes)) < 0) {
		snprintf(s->why, sizeof(s->why), "cannot read the trace (%s)",
			 fd < 0 ? "not a regular file" : strerror(-rc));
		s->state = -1;
	} else {
		rc = kt__sidecar_check(json, len, base ? base + 1 : path, s->sha, bytes, s->why,
				       sizeof(s->why));
		s->state = rc == 0 ? 1 : rc == 1 ? 2 : -1;
	}
	free(json);
}

static void verify_json(const char *path, const struct verdict *v, const struct sidecar *s)
{
	json_t *o = json_object();
	json_object_set_new(o, "file", text_json_string(path, strlen(path)));
	json_object_set_new(o, "valid", json_boolean(v->rc >= 0 && !v->truncated));
	json_object_set_new(o, "truncated", json_boolean(v->truncated));
	json_object_set_new(o, "events", json_integer((json_int_t)v->st.events));
	json_object_set_new(o, "first_bad_offset",
			    v->corrupt ? json_integer((json_int_t)v->err.offset) : json_null());
	if (v->truncated)
		json_object_set_new(o, "truncated_at", json_integer((json_int_t)v->cut));
	if (v->back) /* only then: the keys of an ordinary file stay as they were */
		json_object_set_new(o, "ts_backwards", json_integer((json_int_t)v->back));
	if (v->corrupt || v->not_bytes) {
		const char *msg = v->corrupt ? v->err.message : reason(v->rc, &v->err);
		json_object_set_new(o, "error", json_string(kt_err_name(v->rc)));
		json_object_set_new(o, "message", text_json_string(msg, strlen(msg)));
	}
	if (s->state) {
		json_t *sc = json_object();
		const char *what = s->state > 0 ? s->sha : s->why;
		json_object_set_new(sc, "file", text_json_string(s->path, strlen(s->path)));
		json_object_set_new(sc, "matches", json_boolean(s->state > 0));
		json_object_set_new(sc, s->state > 0 ? "sha256" : "problem",
				    text_json_string(what, strlen(what)));
		if (s->state == 2)
			json_object_set_new(sc, "join_undone",
					    text_json_string(s->why, strlen(s->why)));
		json_object_set_new(o, "sidecar", sc);
	}
	if (text_json_print(stdout, o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) == -ENOMEM)
		say("%s: out of memory", path);
	json_decref(o);
}

static void verify_text(const char *path, const struct verdict *v, const struct sidecar *s)
{
	if (v->not_bytes) {
		say("%s: %s", path, reason(v->rc, &v->err));
	} else {
		put(path);
		if (v->corrupt) {
			printf(": corrupt: ");
			put(v->err.message);
			printf("\n");
		} else if (v->truncated) {
			printf(": truncated at offset %" PRIu64 ": the prefix is valid; %" PRIu64
			       " events in %" PRIu64 " frames recovered; no session summary\n",
			       v->cut, v->st.events, v->st.frames);
		} else {
			printf(": valid: %" PRIu64 " frames, %" PRIu64 " events, %" PRIu64
			       " dropped, %" PRIu64 " bytes\n",
			       v->st.frames, v->st.events, v->st.dropped, v->st.file_size);
		}
		if (v->back && !v->corrupt) {
			put(path);
			printf(": warning: %" PRIu64 " events are earlier than the event before "
			       "them on their thread (the first in the chunk at offset %" PRIu64
			       "); durations ending there count as 0\n", v->back, v->back_off);
		}
	}
	if (s->state) {
		put(s->path);
		if (s->state == 1) {
			printf(": matches: sha256 %s\n", s->sha);
		} else if (s->state == 2) {
			printf(": warning: ");
			put(s->why);
			printf("; sha256 %s\n", s->sha);
		} else {
			printf(": capture sidecar does not match ");
			put(path);
			printf(": ");
			put(s->why);
			printf("\n");
		}
	}
}

static const struct opts_spec verify_spec = {
	.cmd = "verify", .npos = 1, .unknown = "unknown option",
	.opts = opts_json,
	.help = "usage: katra verify FILE [--json]\n"
		"Checks the header and every frame: heads, lengths, checksums,\n"
		"chunk contents and the summary's accounting.\n"
		"exit 0: valid; 1: corrupt (first bad offset and why), or an error\n"
		"reading it (said as such: out of memory, not a regular file...);\n"
		"3: truncated (the prefix is valid; events recovered are counted).\n"
		"--json prints {\"valid\",\"truncated\",\"events\",\"first_bad_offset\"}.\n"
		"Timestamps going back within a thread are allowed (the format does not\n"
		"forbid them) but counted: a warning, and \"ts_backwards\" in JSON.\n"
		"A capture's sidecar (FILE.json with the capture schema, or any\n"
		"FILE.json when FILE's header says it was captured) is checked too:\n"
		"its sha256, bytes and file name must match FILE (exit 1 if not,\n"
		"with the trace's own verdict printed as it is).  A joined capture's\n"
		"sidecar (katra record --capture-root) beside the trace its join\n"
		"started from (a crash between the join's renames) is a warning:\n"
		"the trace is the capture as its harness published it (--json:\n"
		"\"join_undone\").\n",
};

int cmd_verify(int argc, char **argv)
{
	const char *path;
	int json = 0;
	int rc = opts_parse(&verify_spec, argc, argv, &json, &path);
	if (rc != OPTS_GO)
		return rc;

	struct input in;
	struct verdict v;
	struct sidecar s;
	verify_trace(&in, path, &v);
	verify_sidecar(&s, path, S_ISREG(in.sb.st_mode) ? in.fd : -1, v.captured);
	input_close(&in);
	(json ? verify_json : verify_text)(path, &v, &s);
	if (json && v.not_bytes)
		say("%s: %s", path, reason(v.rc, &v.err));
	if (v.corrupt || v.not_bytes || s.state < 0)
		return EXIT_BAD;
	return v.truncated ? EXIT_TRUNC : EXIT_OK;
}
