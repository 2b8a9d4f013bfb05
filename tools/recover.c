/*
 * katra recover - rebuild a valid trace from what a dead process left: the
 * complete frames of its trace file, then, from each ring in its crash
 * directory, the published records the file does not hold yet, the names
 * and threads, and a summary marked recovered.  ring/crash.h says where
 * each piece lives and why the checkpoint tells the two apart.
 *
 * Damage anywhere is reported with its file and offset, and recovery goes
 * on with what is left; OUT is written beside its final name and renamed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <katra/katra.h>
#include <katra/reader.h>
#include <katra/writer.h>
#include "format/format.h"
#include "format/reader_internal.h"
#include "ring/crash.h"
#include "ring/ring.h"
#include "tools/recover.h"

enum { EXIT_OK = 0, EXIT_BAD = 1, EXIT_USAGE = 2, EXIT_PARTIAL = 3 };

#define CHUNK_MAX (256u << 10)       /* raw bytes per recovered chunk */
#define CTL_MAX (64u << 20)          /* control or names file read at most */

struct rthread {
	uint32_t thread_id;          /* first: kt__idtab_get's key */
	uint32_t os_tid;
	char *name;
	int listed;                  /* a thread frame is written */
	uint64_t in_file;            /* events of the trace file's prefix */
	uint64_t recovered;          /* events taken from its ring */
	uint64_t dropped;
};

struct rdrop {
	uint32_t thread_id;
	uint64_t count, first_ts, last_ts;
	int matched;                 /* a recovered loss was this one */
};

struct rec {
	const char *dir;
	int problems;
	kt_writer *w;
	unsigned codec;
	int level;
	kt__ctl ctl;
	int ctl_ok;                  /* the header's fields can be used */
	struct rthread *threads;
	size_t nthreads, cap_threads;
	uint32_t *names;             /* name ids written, sorted */
	size_t nnames, cap_names;
	struct rdrop *drops;         /* drop frames of the trace file */
	size_t ndrops, cap_drops;
	uint64_t from_file, from_rings, dropped;
	/* the ring being walked */
	struct rthread *t;
	uint64_t skip;
	uint64_t markers;
	uint8_t *chunk;
	size_t chunk_len;
	int werr;
};

__attribute__((format(printf, 3, 4))) static void problem(struct rec *R, const char *file,
							   const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "katra: recover: %s/%s: ", R->dir, file);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	R->problems++;
}

static struct rthread *thread(struct rec *R, uint32_t id)
{
	return kt__idtab_get((void **)&R->threads, &R->nthreads, &R->cap_threads,
			     sizeof(struct rthread), id, KT_MAX_SUMMARY_THREADS);
}

/* Read a whole file of at most CTL_MAX bytes; NULL with errno set. */
static uint8_t *slurp(int fd, size_t *len)
{
	struct stat sb;
	if (fstat(fd, &sb) < 0)
		return NULL;
	size_t n = (size_t)sb.st_size > CTL_MAX ? CTL_MAX : (size_t)sb.st_size;
	uint8_t *p = malloc(n ? n : 1);
	if (!p)
		return NULL;
	ssize_t got = pread(fd, p, n, 0);
	if (got < 0) {
		free(p);
		return NULL;
	}
	*len = (size_t)got;
	return p;
}

static int open_in(const char *dir, const char *name, int flags)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return open(path, flags | O_CLOEXEC);
}

/* The pid holding the control file's lock, 0 if none holds it. */
static long lock_holder(int fd)
{
	struct flock lk = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	if (fcntl(fd, F_GETLK, &lk) < 0 || lk.l_type == F_UNLCK)
		return 0;
	return lk.l_pid > 0 ? lk.l_pid : -1;
}

/* ---- output ----------------------------------------------------------- */

static int werr(struct rec *R, int rc)
{
	if (rc && !R->werr)
		R->werr = rc;
	return rc;
}

static void put_name(struct rec *R, uint32_t id, const char *s, size_t len)
{
	int added = kt__idset_add(&R->names, &R->nnames, &R->cap_names, id);
	if (added < 0)
		werr(R, added);
	else if (added)
		werr(R, kt_writer_name(R->w, id, s, len));
}

/* A loss recovered from a ring: written unless the trace file already
 * holds this very drop frame (the flusher wrote it before the end). */
static void put_drop(struct rec *R, struct rthread *t, uint64_t count, uint64_t first,
		     uint64_t last)
{
	for (size_t i = 0; i < R->ndrops; i++) {
		struct rdrop *d = &R->drops[i];
		if (!d->matched && d->thread_id == t->thread_id && d->count == count &&
		    d->first_ts == first && d->last_ts == last) {
			d->matched = 1;
			return;
		}
	}
	if (!werr(R, kt_writer_drop(R->w, t->thread_id, count, first, last))) {
		t->dropped += count;
		R->dropped += count;
	}
}

static void flush_chunk(struct rec *R)
{
	if (R->chunk_len)
		werr(R, kt_writer_chunk(R->w, R->t->thread_id, R->codec, R->level, R->chunk,
					R->chunk_len));
	R->chunk_len = 0;
}

/* ---- the trace file's prefix ------------------------------------------ */

static int grow_drops(struct rec *R)
{
	if (R->ndrops < R->cap_drops)
		return 0;
	size_t n = R->cap_drops ? R->cap_drops * 2 : 64;
	void *p = realloc(R->drops, n * sizeof(*R->drops));
	if (!p)
		return -ENOMEM;
	R->drops = p;
	R->cap_drops = n;
	return 0;
}

static void copy_trace(struct rec *R, kt_reader *r, const char *path)
{
	kt_trace_frame f;
	int rc;
	while ((rc = kt_reader_next_frame(r, &f)) > 0 && !R->werr) {
		struct rthread *t;
		switch (f.kind) {
		case KT_FRAME_CHUNK:
			if (!(t = thread(R, f.u.chunk.thread_id))) {
				werr(R, -ENOMEM);
				break;
			}
			if (!werr(R, kt_writer_chunk(R->w, t->thread_id, f.u.chunk.codec, R->level,
						     f.u.chunk.events, f.u.chunk.raw_len))) {
				t->in_file += f.u.chunk.event_count;
				R->from_file += f.u.chunk.event_count;
			}
			break;
		case KT_FRAME_NAME:
			put_name(R, f.u.name.id, f.u.name.str, f.u.name.len);
			break;
		case KT_FRAME_THREAD:
			if (!(t = thread(R, f.u.thread.thread_id))) {
				werr(R, -ENOMEM);
				break;
			}
			t->listed = 1;
			werr(R, kt_writer_thread(R->w, t->thread_id, f.u.thread.os_tid,
						 f.u.thread.name));
			break;
		case KT_FRAME_DROP:
			if (!(t = thread(R, f.u.drop.thread_id)) || grow_drops(R)) {
				werr(R, -ENOMEM);
				break;
			}
			R->drops[R->ndrops++] = (struct rdrop){ t->thread_id, f.u.drop.count,
								f.u.drop.first_ts, f.u.drop.last_ts, 0 };
			if (!werr(R, kt_writer_drop(R->w, t->thread_id, f.u.drop.count,
						    f.u.drop.first_ts, f.u.drop.last_ts))) {
				t->dropped += f.u.drop.count;
				R->dropped += f.u.drop.count;
			}
			break;
		}
	}
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	if (rc < 0 && rc != KT_ETRUNCATED)
		problem(R, path, "%s: the frames before it are kept",
			kt_reader_last_error(r)->message);
	else if (st.complete)
		fprintf(stderr, "katra: recover: %s: complete (the session had stopped)\n", path);
	else
		fprintf(stderr, "katra: recover: %s: cut at offset %" PRIu64 " (its writer died): "
			"%" PRIu64 " events in %" PRIu64 " frames kept\n", path, st.valid_end,
			st.events, st.frames);
}

/* ---- the names log ---------------------------------------------------- */

static void read_names(struct rec *R)
{
	int fd = open_in(R->dir, "names", O_RDONLY);
	size_t len = 0;
	uint8_t *p = fd >= 0 ? slurp(fd, &len) : NULL;
	if (!p) {
		problem(R, "names", "%s: names interned late are missing", strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	if (len == CTL_MAX)
		problem(R, "names", "larger than %u bytes: the entries past that are not read",
			CTL_MAX);
	size_t at = 0;
	while (at + 12 <= len && !R->werr) {
		uint32_t kind = kt__get32(p + at), id = kt__get32(p + at + 4);
		uint32_t n = kt__get32(p + at + 8);
		if (n > len - at - 12)
			break; /* the last entry, cut by the process's end */
		const char *s = (const char *)p + at + 12;
		if ((kind != KT__NAMES_NAME && kind != KT__NAMES_THREAD) || id == 0 ||
		    n > KT_MAX_STRING || memchr(s, 0, n) || (kind == KT__NAMES_NAME && n == 0)) {
			problem(R, "names", "offset %zu: malformed entry (kind %u, id %u, %u "
				"bytes): the entries after it are not read", at, kind, id, n);
			break;
		}
		if (kind == KT__NAMES_NAME) {
			put_name(R, id, s, n);
		} else {
			struct rthread *t = thread(R, id);
			char *copy = strndup(s, n);
			if (!t || !copy) {
				free(copy);
				werr(R, -ENOMEM);
				break;
			}
			free(t->name);
			t->name = copy;
		}
		at += 12 + (size_t)n;
	}
	free(p);
}

/* ---- the rings -------------------------------------------------------- */

static int take_record(void *ctx, const kt__ring_rec *rec)
{
	struct rec *R = ctx;
	if (!rec->bytes) {
		/* A marker from an earlier session was counted by that one. */
		if (R->ctl_ok && rec->marker_gen != (uint32_t)R->ctl.gen)
			return 0;
		R->markers += rec->count;
		if (rec->count)
			put_drop(R, R->t, rec->count, rec->first_ts, rec->last_ts);
		return R->werr;
	}
	if (R->skip) {
		R->skip--; /* the trace file holds it */
		return 0;
	}
	if (R->chunk_len + rec->size > CHUNK_MAX)
		flush_chunk(R);
	memcpy(R->chunk + R->chunk_len, rec->bytes, rec->size);
	R->chunk_len += rec->size;
	R->t->recovered++;
	R->from_rings++;
	return R->werr;
}

static void recover_ring(struct rec *R, const kt__slot *sl)
{
	char file[32];
	snprintf(file, sizeof(file), "ring-%u", sl->index);
	struct rthread *t = thread(R, sl->thread_id);
	if (!t) {
		werr(R, -ENOMEM);
		return;
	}
	t->os_tid = sl->os_tid;
	int fd = open_in(R->dir, file, O_RDONLY);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0) {
		problem(R, file, "%s: thread %u's unflushed records are lost", strerror(errno),
			sl->thread_id);
		if (fd >= 0)
			close(fd);
		return;
	}
	if ((uint64_t)sb.st_size != sl->size) {
		problem(R, file, "%lld bytes, but slot %u of the control file says the ring has "
			"%" PRIu64 ": thread %u's unflushed records are not recovered",
			(long long)sb.st_size, sl->index, sl->size, sl->thread_id);
		close(fd);
		return;
	}
	const uint8_t *ring = mmap(NULL, sl->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	uint8_t *span = ring == MAP_FAILED ? NULL : malloc(sl->head - sl->ck_tail + 1);
	if (!span) {
		problem(R, file, "%s", strerror(errno));
		if (ring != MAP_FAILED)
			munmap((void *)ring, sl->size);
		return;
	}
	/* The trace file's events of this thread beyond the checkpoint's
	 * count are the first ones after its tail. */
	uint64_t from = sl->ck_tail;
	R->skip = 0;
	if (t->in_file >= sl->ck_events)
		R->skip = t->in_file - sl->ck_events;
	else
		problem(R, file, "the trace file holds %" PRIu64 " events of thread %u, its "
			"checkpoint says %" PRIu64 " were written: the trace file lost some",
			t->in_file, sl->thread_id, sl->ck_events);
	R->t = t;
	R->markers = 0;
	char why[256] = "";
	uint64_t end = kt__ring_walk(ring, sl->size, from, sl->head, span, take_record, R, why,
				     sizeof(why));
	if (end != sl->head && !R->werr)
		problem(R, file, "%s: thread %u's records from there to position %" PRIu64
			" are not recovered", why, sl->thread_id, sl->head);
	flush_chunk(R);
	if (R->skip)
		problem(R, file, "the trace file holds %" PRIu64 " more events of thread %u "
			"than the ring had left", R->skip, sl->thread_id);
	/* Losses and refusals no marker or drop frame carried yet. */
	uint64_t unmarked = sl->lost - sl->lost_base - sl->ck_marked - R->markers;
	if (unmarked && unmarked >> 63 == 0 && !R->werr)
		put_drop(R, t, unmarked, sl->pending_first, sl->pending_last);
	uint64_t refused = sl->refused - sl->ck_refused;
	if (refused && refused >> 63 == 0 && !R->werr)
		put_drop(R, t, refused, sl->refused_first, sl->refused_last);
	free(span);
	munmap((void *)ring, sl->size);
}

static void recover_rings(struct rec *R, const uint8_t *ctl, size_t len, uint32_t slot_size)
{
	for (uint32_t i = 0; (uint64_t)(i + 2) * slot_size <= len && !R->werr; i++) {
		kt__slot sl;
		char why[256];
		int rc = kt__slot_parse(ctl + (uint64_t)(i + 1) * slot_size, slot_size, i, &sl,
					why, sizeof(why));
		if (rc < 0)
			problem(R, "control", "offset %" PRIu64 ": %s: that ring is skipped",
				(uint64_t)(i + 1) * slot_size, why);
		if (rc)
			continue;
		recover_ring(R, &sl);
	}
	if (len % slot_size)
		problem(R, "control", "%zu bytes, not a whole number of %u-byte slots: the last "
			"is cut", len, slot_size);
}

/* ---- the command ------------------------------------------------------ */

static void header_from_ctl(kt_header *h, const struct rec *R)
{
	kt_header_init(h);
	if (!R->ctl_ok)
		return; /* kt_header_init's 1 GHz monotonic clock: times are ticks */
	h->start_wall_ns = R->ctl.start_wall_ns;
	h->start_mono_ns = R->ctl.start_mono_ns;
	h->process_id = R->ctl.pid;
	h->clock = R->ctl.clock;
	h->capture.ring_size = R->ctl.ring_size;
	h->capture.overflow = R->ctl.overflow;
	h->capture.codec = R->ctl.codec;
	h->capture.io = R->ctl.io;
	h->capture.codec_level = R->ctl.level;
}

static char *default_out(const struct rec *R)
{
	char *out = NULL;
	const char *base = R->ctl.trace_path[0] ? R->ctl.trace_path : R->dir;
	size_t n = strlen(base);
	while (n > 1 && base[n - 1] == '/')
		n--;
	if (n > 6 && !memcmp(base + n - 6, ".katra", 6))
		n -= 6;
	if (asprintf(&out, "%.*s.recovered.katra", (int)n, base) < 0)
		return NULL;
	return out;
}

static int list_dirs(const char *parent)
{
	DIR *d = opendir(parent);
	if (!d) {
		fprintf(stderr, "katra: recover: %s: %s\n", parent, strerror(errno));
		return EXIT_BAD;
	}
	struct dirent *e;
	int found = 0;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "katra-", 6))
			continue;
		char dir[4096];
		if (snprintf(dir, sizeof(dir), "%s/%s", parent, e->d_name) >= (int)sizeof(dir))
			continue;
		int fd = open_in(dir, "control", O_RDONLY);
		if (fd < 0)
			continue;
		long holder = lock_holder(fd);
		uint8_t head[KT__CTL_HEADER];
		kt__ctl c;
		ssize_t n = pread(fd, head, sizeof(head), 0);
		int rc = kt__ctl_parse(head, n > 0 ? (size_t)n : 0, &c, NULL, 0);
		close(fd);
		if (holder)
			continue; /* alive: not a leftover */
		found++;
		printf("%s\tpid %" PRIu64 "\t%s\n", dir, rc >= 0 ? c.pid : 0,
		       rc >= 0 && c.trace_path[0] ? c.trace_path : "(no trace path)");
	}
	closedir(d);
	if (!found)
		fprintf(stderr, "katra: recover: no leftovers of dead processes in %s\n", parent);
	return EXIT_OK;
}

static int usage(const char *what, const char *arg)
{
	fprintf(stderr, "katra: recover: %s%s\nTry 'katra recover --help'.\n", what, arg);
	return EXIT_USAGE;
}

int cmd_recover(int argc, char **argv)
{
	const char *dir = NULL, *out_arg = NULL, *trace_arg = NULL;
	int list = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("usage: katra recover DIR [--out OUT] [--trace TRACE]\n"
			       "       katra recover --list [PARENT]\n"
			       "Rebuilds the trace of a process that died from its crash directory\n"
			       "(PARENT/katra-<pid>, kept when a session runs with crash files):\n"
			       "the trace file's complete frames, the rings' records it lacks,\n"
			       "names and threads, and a summary marked recovered.  OUT defaults\n"
			       "to the trace's name with .recovered.katra.  Refuses the directory\n"
			       "of a live process.  --trace names the trace file when the control\n"
			       "file cannot.  --list names the leftovers of dead processes\n"
			       "in PARENT (default: $KT_CRASH_DIR, else /dev/shm).\n"
			       "exit 0: recovered; 3: recovered, with damage reported; 1: nothing\n"
			       "written; 2: usage.\n");
			return EXIT_OK;
		} else if (!strcmp(a, "--list")) {
			list = 1;
		} else if (!strcmp(a, "--out") || !strcmp(a, "--trace")) {
			if (++i == argc)
				return usage(a, " wants a file name");
			if (!strcmp(a, "--out"))
				out_arg = argv[i];
			else
				trace_arg = argv[i];
		} else if (a[0] == '-' && a[1]) {
			return usage("unknown option ", a);
		} else if (dir) {
			return usage("more than one directory: ", a);
		} else {
			dir = a;
		}
	}
	if (list) {
		const char *env = getenv("KT_CRASH_DIR");
		return list_dirs(dir ? dir : env && *env ? env : "/dev/shm");
	}
	if (!dir)
		return usage("missing DIR", "");

	struct rec R = { .dir = dir };
	int fd = open_in(dir, "control", O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "katra: recover: %s/control: %s: not a katra crash directory\n", dir,
			strerror(errno));
		return EXIT_BAD;
	}
	long holder = lock_holder(fd);
	size_t ctl_len = 0;
	uint8_t *ctl = holder ? NULL : slurp(fd, &ctl_len);
	close(fd);
	if (holder) {
		fprintf(stderr, "katra: recover: %s: process %ld is alive and holds it: "
			"recover only what a dead process left\n", dir, holder);
		return EXIT_BAD;
	}
	if (!ctl) {
		fprintf(stderr, "katra: recover: %s/control: %s\n", dir, strerror(errno));
		return EXIT_BAD;
	}
	char why[256];
	if (ctl_len == CTL_MAX)
		problem(&R, "control", "larger than %u bytes: the slots past that are not read",
			CTL_MAX);
	int rc = kt__ctl_parse(ctl, ctl_len, &R.ctl, why, sizeof(why));
	uint32_t slot_size = (uint32_t)kt__ring_page();
	if (rc)
		problem(&R, "control", "%s", why);
	if (rc >= 0) {
		slot_size = R.ctl.slot_size;
		R.ctl_ok = 1;
	}
	if (rc >= 0 && R.ctl.pid == (uint64_t)getpid()) {
		fprintf(stderr, "katra: recover: %s: it belongs to this process, which is alive\n",
			dir);
		free(ctl);
		return EXIT_BAD;
	}

	/* The trace file, when its path is known and it opens. */
	kt_reader *r = NULL;
	int tfd = -1;
	if (trace_arg && strlen(trace_arg) < sizeof(R.ctl.trace_path)) {
		strcpy(R.ctl.trace_path, trace_arg);
		R.ctl.trace_off = 0;
	}
	if (R.ctl.trace_path[0]) {
		kt_reader_error err;
		tfd = open(R.ctl.trace_path, O_RDONLY | O_CLOEXEC);
		if (tfd < 0)
			problem(&R, "control", "trace file %s: %s: recovering from the rings alone",
				R.ctl.trace_path, strerror(errno));
		else if ((rc = kt__reader_open_fd_at(&r, tfd, R.ctl.trace_off, &err)))
			problem(&R, "control", "trace file %s: %s: recovering from the rings alone",
				R.ctl.trace_path, rc > -4096 ? kt_strerror(rc) : err.message);
	} else if (R.ctl_ok) {
		problem(&R, "control", "no trace file path (the session wrote to a pipe or "
			"socket): recovering from the rings alone");
	}
	kt_header h;
	if (r)
		h = *kt_reader_header(r);
	else
		header_from_ctl(&h, &R);
	R.codec = h.capture.codec <= KT_CODEC_LZ4_DELTA ? h.capture.codec : KT_CODEC_NONE;
	R.level = h.capture.codec_level;

	int result = EXIT_BAD;
	char *out = out_arg ? strdup(out_arg) : default_out(&R), *tmp = NULL;
	struct stat sb;
	if (!out || asprintf(&tmp, "%s.tmp-%ld", out, (long)getpid()) < 0) {
		fprintf(stderr, "katra: recover: %s\n", strerror(ENOMEM));
		goto done;
	}
	if (stat(out, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		fprintf(stderr, "katra: recover: %s: not a regular file\n", out);
		goto done;
	}
	if ((rc = kt_writer_open(&R.w, tmp, &h))) {
		fprintf(stderr, "katra: recover: %s: %s\n", out, kt_strerror(rc));
		goto done;
	}
	R.chunk = malloc(CHUNK_MAX);
	if (!R.chunk)
		werr(&R, -ENOMEM);
	if (r && !R.werr)
		copy_trace(&R, r, R.ctl.trace_path);
	if (!R.werr)
		read_names(&R);
	if (!R.werr)
		recover_rings(&R, ctl, ctl_len, slot_size);
	for (size_t i = 0; i < R.nthreads && !R.werr; i++) {
		struct rthread *t = &R.threads[i];
		if (!t->listed && (t->in_file || t->recovered || t->dropped || t->name))
			werr(&R, kt_writer_thread(R.w, t->thread_id, t->os_tid, t->name));
	}
	kt_file_summary sum = { .flags = KT_SUMMARY_RECOVERED };
	if (!R.werr)
		werr(&R, kt_writer_finish(R.w, &sum));
	werr(&R, kt_writer_close(R.w));
	if (R.werr || rename(tmp, out) < 0) {
		fprintf(stderr, "katra: recover: %s: %s\n", out,
			R.werr ? kt_strerror(R.werr) : strerror(errno));
		unlink(tmp);
		goto done;
	}
	printf("%s: recovered %" PRIu64 " events (%" PRIu64 " from the trace file, %" PRIu64
	       " from the rings), %" PRIu64 " dropped, %zu threads: %s\n",
	       dir, R.from_file + R.from_rings, R.from_file, R.from_rings, R.dropped, R.nthreads,
	       out);
	result = R.problems ? EXIT_PARTIAL : EXIT_OK;
done:
	if (result == EXIT_BAD && tmp)
		unlink(tmp);
	kt_reader_close(r);
	if (tfd >= 0)
		close(tfd);
	for (size_t i = 0; i < R.nthreads; i++)
		free(R.threads[i].name);
	free(R.threads);
	free(R.names);
	free(R.drops);
	free(R.chunk);
	free(ctl);
	free(out);
	free(tmp);
	return result;
}
