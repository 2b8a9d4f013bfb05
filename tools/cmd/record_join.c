/*
 * record_join.c - the capture manager across processes (issue #30): under
 * `katra record --run-id R --epoch N --capture-root ROOT`, a harness whose
 * capture manager publishes run R epoch N in ROOT gets its capture joined
 * by the run's other processes once they are all done.
 *
 * Every process under katra record names run R epoch N in its file's
 * header (KT_RUN_ID, KT_EPOCH: flush/autostart.c), a fork()ed child of the
 * harness's capture session included.  Here, after the last of them has
 * ended: each such file of the capture directory is trimmed to the
 * capture's window - the [FROM, TO] of its trace's "katra.capture:" note,
 * CLOCK_MONOTONIC ns, one clock for every process of the host - and
 * merged with the capture's trace (tools/cmd/merge.h) into one trace in
 * the root; bounded as a capture is (KT_CAPTURE_MAX_BYTES, else the
 * capture stays as published and that is said); the sidecar's sha256 and
 * bytes set to the new trace's, and a "processes" list added (SPEC §9).
 * The sidecar is renamed into place first, then the trace, as the
 * manager publishes them; it keeps the published trace's sha256 and
 * bytes (joined_from_*), so a crash between the renames leaves a pair a
 * reader tells apart from a damaged one: the harness's capture as it
 * was, its join undone.  A file whose window holds no event is left
 * out (the harness's own, whose events before its capture began are
 * outside it).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <katra/capture.h>
#include <katra/reader.h>
#include <katra/writer.h>
#include "capture/capture_internal.h"
#include "tools/cmd/cli.h"
#include "tools/cmd/merge.h"
#include "tools/cmd/record_join.h"

#define MAX_JOIN 256          /* processes joined */
#define SIDECAR_MAX (1 << 16) /* a sidecar is one line of a few hundred bytes */

struct join {
	const char *root, *dir, *run;
	uint64_t epoch;
	char sidecar[PATH_MAX], trace[PATH_MAX], file[256];
	json_t *side;
	uint64_t from, to;
	char *paths[MAX_JOIN + 1];
	size_t n;
};

/* Does @path's header name run @j->run epoch @j->epoch? */
static int names_run(const struct join *j, int fd)
{
	kt_reader *r;
	if (kt_reader_open_fd(fd, NULL, &r))
		return 0;
	const kt_header *h = kt_reader_get_header(r);
	int yes = (h->flags & KT_HDR_CAPTURE) && h->run_id && !strcmp(h->run_id, j->run) &&
		  h->epoch == j->epoch;
	kt_reader_close(r);
	return yes;
}

/* The published capture of the run in the root: its sidecar, parsed. */
static int find_capture(struct join *j)
{
	char prefix[256];
	snprintf(prefix, sizeof(prefix), "%s.%" PRIu64 ".", j->run, j->epoch);
	DIR *d = opendir(j->root);
	struct dirent *e;
	while (d && !j->side && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (strncmp(e->d_name, prefix, strlen(prefix)) || len < 11 ||
		    strcmp(e->d_name + len - 11, ".katra.json"))
			continue;
		snprintf(j->sidecar, sizeof(j->sidecar), "%s/%s", j->root, e->d_name);
		json_t *o = json_load_file(j->sidecar, JSON_REJECT_DUPLICATES, NULL);
		const char *st = json_string_value(json_object_get(o, "state"));
		const char *file = json_string_value(json_object_get(o, "file"));
		if (st && file && !strcmp(st, "published") && !strchr(file, '/') &&
		    strlen(file) < sizeof(j->file)) {
			snprintf(j->file, sizeof(j->file), "%s", file);
			snprintf(j->trace, sizeof(j->trace), "%s/%s", j->root, file);
			j->side = o;
		} else {
			json_decref(o);
		}
	}
	if (d)
		closedir(d);
	return j->side ? 0 : -1;
}

/* The capture's window, from its trace's trim note. */
static int capture_window(struct join *j)
{
	kt_reader *r;
	int found = 0;
	if (kt_reader_open(j->trace, NULL, &r))
		return -1;
	const kt_header *h = kt_reader_get_header(r);
	for (uint32_t i = 0; i < h->note_count && !found; i++)
		found = sscanf(h->notes[i], "katra.capture: trimmed to [%" SCNu64 ", %" SCNu64 "]",
			       &j->from, &j->to) == 2;
	kt_reader_close(r);
	return found ? 0 : -1;
}

/* DIR/@name, when it names the run, trimmed to the window into
 * DIR/.join-@name; its path kept when events are left. */
static void trim_one(struct join *j, int dfd, const char *name)
{
	char out[PATH_MAX];
	int in = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (in < 0 || !names_run(j, in) ||
	    (size_t)snprintf(out, sizeof(out), "%s/.join-%s", j->dir, name) >= sizeof(out)) {
		if (in >= 0)
			close(in);
		return;
	}
	int fd = open(out, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	kt_rewrite_options o = { .in_fds = &in, .n_in = 1, .out_fd = fd, .codec = -1,
				 .filter = 1, .from_ns = j->from, .to_ns = j->to };
	kt_rewrite_result rr = { 0 };
	int ok = fd >= 0 && kt_rewrite(&o, &rr) == 0 && rr.events_out > 0;
	if (fd >= 0)
		close(fd);
	close(in);
	if (ok && (j->paths[j->n] = strdup(out)))
		j->n++;
	else
		unlink(out);
}

/* The run's processes' files of the capture directory, trimmed. */
static void trim_all(struct join *j)
{
	DIR *d = opendir(j->dir);
	struct dirent *e;
	while (d && j->n < MAX_JOIN && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		struct stat sb;
		if (len < 7 || strcmp(e->d_name + len - 6, ".katra") || e->d_name[0] == '.' ||
		    fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISREG(sb.st_mode))
			continue;
		trim_one(j, dirfd(d), e->d_name);
	}
	if (d)
		closedir(d);
}

/* The sidecar with the new trace's sha256, bytes and @n processes. */
static int write_sidecar(struct join *j, const char *tmp, const char *hex, uint64_t bytes,
			 const struct merge_proc *mp, size_t n)
{
	json_t *list = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(list, json_pack("{sI sI ss sI}", "pid", (json_int_t)mp[i].pid,
						      "parent", (json_int_t)mp[i].parent, "name",
						      mp[i].name, "events",
						      (json_int_t)mp[i].written));
	/* The trace the harness published stays in place until the second
	 * rename: its hash and size, kept here, tell a reader that this
	 * sidecar's join did not finish (SPEC §9, kt__sidecar_check()). */
	json_t *was = json_object_get(j->side, "sha256"), *was_b = json_object_get(j->side, "bytes");
	if (!json_is_string(was) || !json_is_integer(was_b)) {
		json_decref(list);
		return -1;
	}
	json_object_set_new(j->side, "joined_from_sha256", json_string(json_string_value(was)));
	json_object_set_new(j->side, "joined_from_bytes", json_integer(json_integer_value(was_b)));
	json_object_set_new(j->side, "sha256", json_string(hex));
	json_object_set_new(j->side, "bytes", json_integer((json_int_t)bytes));
	json_object_set_new(j->side, "processes", list);
	char *text = json_dumps(j->side, JSON_COMPACT | JSON_PRESERVE_ORDER);
	int fd = text ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644) : -1;
	int rc = fd >= 0 && dprintf(fd, "%s\n", text) == (int)strlen(text) + 1 && !fsync(fd)
			 ? 0
			 : -1;
	if (fd >= 0)
		close(fd);
	free(text);
	return rc;
}

/* The merge of the capture's trace and @j's trimmed files, put in place. */
static int publish_joined(struct join *j)
{
	char tmp[PATH_MAX], side_tmp[PATH_MAX], hex[65];
	snprintf(tmp, sizeof(tmp), "%s/.katra-join-%d.katra", j->root, (int)getpid());
	snprintf(side_tmp, sizeof(side_tmp), "%s/.katra-join-%d.json", j->root, (int)getpid());
	struct merge_proc *mp = calloc(j->n, sizeof(*mp));
	uint64_t bytes = 0;
	int rc = mp ? merge_traces((const char *const *)j->paths, j->n, tmp, mp) : EXIT_BAD;
	int fd = rc == EXIT_BAD ? -1 : open(tmp, O_RDONLY | O_CLOEXEC);
	rc = fd < 0 || kt__sha256_fd(fd, hex, &bytes) ? -1 : 0;
	if (fd >= 0)
		close(fd);
	if (!rc && bytes > KT_CAPTURE_MAX_BYTES) {
		say("record: the run's processes in one capture take %" PRIu64 " bytes, past %llu: "
		    "the capture stays its harness's", bytes, KT_CAPTURE_MAX_BYTES);
		rc = -1;
	}
	if (!rc)
		rc = write_sidecar(j, side_tmp, hex, bytes, mp, j->n);
	if (!rc && !rename(side_tmp, j->sidecar) && !rename(tmp, j->trace)) {
		fprintf(stderr, "katra record: capture %s of run %s epoch %" PRIu64
				" now holds %zu processes\n", j->file, j->run, j->epoch, j->n);
		merge_say(mp, j->n);
	} else {
		rc = -1;
	}
	unlink(side_tmp);
	unlink(tmp);
	free(mp);
	return rc;
}

void record_join(const char *root, const char *dir, const char *run, uint64_t epoch)
{
	struct join j = { .root = root, .dir = dir, .run = run, .epoch = epoch };
	if (find_capture(&j)) {
		fprintf(stderr, "katra record: no capture of run %s epoch %" PRIu64
				" published in %s: nothing joined\n", run, epoch, root);
		return;
	}
	if (capture_window(&j) || !(j.paths[j.n++] = strdup(j.trace))) {
		say("record: %s: no trim note: nothing joined", j.trace);
	} else {
		trim_all(&j);
		if (j.n > 1 && publish_joined(&j))
			say("record: run %s's processes not joined to its capture", run);
	}
	for (size_t i = 1; i < j.n; i++)
		unlink(j.paths[i]);
	for (size_t i = 0; i < j.n; i++)
		free(j.paths[i]);
	json_decref(j.side);
}
