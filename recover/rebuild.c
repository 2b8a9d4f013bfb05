/*
 * The rebuild engine of `katra recover`: a valid trace from what a dead
 * process left, the complete frames of its trace file, then, from each
 * ring in its crash directory, the published records the file does not
 * hold yet, the names and threads, the call sites' locations, the
 * categories and the tracks (those from rebuild_logs.c), and a summary
 * marked recovered.
 * recover/crash.h says where each piece lives and why the checkpoint
 * tells the two apart.
 *
 * The directory may have been planted by anyone (recover/crashdir.h says
 * what is opened and what refused), so the work per directory has fixed
 * caps and files are read with pread() into bounded buffers (a file that
 * shrinks meanwhile is reported, never a SIGBUS).  Damage anywhere is
 * reported with its file and offset, through the caller's callback (which
 * escapes it), and recovery goes on with what is left.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <katra/katra.h>
#include <katra/reader.h>
#include <katra/writer.h>
#include "format/format.h"
#include "format/reader_internal.h"
#include "recover/crash.h"
#include "recover/crashdir.h"
#include "recover/rebuild.h"
#include "ring/ring.h"

/* rebuild.h's helpers, by the short names this file uses. */
#define problem(...) kt__rb_problem(__VA_ARGS__)
#define werr(R, rc) kt__rb_werr(R, rc)
#define thread(R, id) kt__rb_thread(R, id)
#define put_name(R, id, s, len) kt__rb_put_name(R, id, s, len)

/* The fixed caps of `katra recover` (--help states them). */
const struct kt__recover_caps kt__recover_caps = {
	.slots = 4096,
	.ring_bytes = UINT64_C(1) << 30,
	.names_bytes = 64u << 20,
};

/* A message for the caller's callback (which escapes it whole: it may
 * hold names from the files). */
__attribute__((format(printf, 2, 3))) static void say(kt__recovery *R, const char *fmt, ...)
{
	char msg[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	R->say(R->say_ctx, msg);
}

__attribute__((format(printf, 3, 4))) void kt__rb_problem(kt__recovery *R, const char *file,
							  const char *fmt, ...)
{
	char msg[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	say(R, "%s/%s: %s", R->dir, file, msg);
	R->problems++;
}

struct rthread *kt__rb_thread(kt__recovery *R, uint32_t id)
{
	void *t;
	return kt__idmap_get(&R->threads, id, KT_MAX_SUMMARY_THREADS, &t) < 0 ? NULL : t;
}

/* ---- output ----------------------------------------------------------- */

int kt__rb_werr(kt__recovery *R, int rc)
{
	if (rc && !R->werr)
		R->werr = rc;
	return rc;
}

int kt__rb_first(kt__recovery *R, uint32_t **set, size_t *n, size_t *cap, uint32_t id)
{
	int added = kt__idset_add(set, n, cap, id);
	if (added < 0)
		werr(R, added);
	return added > 0;
}

void kt__rb_put_name(kt__recovery *R, uint32_t id, const char *s, size_t len)
{
	if (kt__rb_first(R, &R->names, &R->nnames, &R->cap_names, id))
		werr(R, kt_writer_name(R->w, id, s, len));
}

static int drop_cmp(const void *a, const void *b)
{
	const struct rdrop *x = a, *y = b;
	if (x->thread_id != y->thread_id)
		return x->thread_id < y->thread_id ? -1 : 1;
	if (x->count != y->count)
		return x->count < y->count ? -1 : 1;
	if (x->first_ts != y->first_ts)
		return x->first_ts < y->first_ts ? -1 : 1;
	return x->last_ts < y->last_ts ? -1 : x->last_ts > y->last_ts;
}

/* After the trace file: its drop frames sorted, equal ones merged, so that
 * each loss found in a ring finds its match in log time. */
static void index_drops(kt__recovery *R)
{
	if (!R->ndrops)
		return;
	qsort(R->drops, R->ndrops, sizeof(*R->drops), drop_cmp);
	size_t n = 1;
	for (size_t i = 1; i < R->ndrops; i++) {
		if (drop_cmp(&R->drops[n - 1], &R->drops[i]))
			R->drops[n++] = R->drops[i];
		else
			R->drops[n - 1].left++;
	}
	R->ndrops = n;
}

/* A loss recovered from a ring: written unless the trace file already
 * holds this very drop frame (the flusher wrote it before the end). */
static void put_drop(kt__recovery *R, struct rthread *t, uint64_t count, uint64_t first,
		     uint64_t last)
{
	struct rdrop key = { t->thread_id, count, first, last, 0 };
	struct rdrop *d = R->ndrops ? bsearch(&key, R->drops, R->ndrops, sizeof(key), drop_cmp)
				    : NULL;
	if (d && d->left) {
		d->left--;
		return;
	}
	if (!werr(R, kt_writer_drop(R->w, t->thread_id, count, first, last))) {
		t->dropped += count;
		R->dropped += count;
	}
}

static void flush_chunk(kt__recovery *R)
{
	if (R->chunk_len)
		werr(R, kt_writer_chunk(R->w, R->t->thread_id, R->codec, R->level, R->chunk,
					R->chunk_len));
	R->chunk_len = 0;
}

/* ---- the trace file's prefix ------------------------------------------ */

static int grow_drops(kt__recovery *R)
{
	return kt__grow((void **)&R->drops, &R->cap_drops, R->ndrops, sizeof(*R->drops), 64);
}

static void copy_chunk(kt__recovery *R, const kt_trace_frame *f)
{
	struct rthread *t = thread(R, f->u.chunk.thread_id);
	if (!t) {
		werr(R, -ENOMEM);
		return;
	}
	if (!werr(R, kt_writer_chunk(R->w, t->thread_id, f->u.chunk.codec, R->level,
				     f->u.chunk.events, f->u.chunk.raw_len))) {
		t->in_file += f->u.chunk.event_count;
		R->from_file += f->u.chunk.event_count;
	}
}

static void copy_thread(kt__recovery *R, const kt_trace_frame *f)
{
	struct rthread *t = thread(R, f->u.thread.thread_id);
	if (!t) {
		werr(R, -ENOMEM);
		return;
	}
	t->listed = 1;
	werr(R, kt_writer_thread_in(R->w, t->thread_id, f->u.thread.os_tid, f->u.thread.name,
				    f->u.thread.process));
}

/* The process's entry, marked as rebuilt from its crash files. */
static void copy_process(kt__recovery *R, const kt_trace_frame *f)
{
	kt_process_def p = f->u.process;
	p.flags |= KT_PROCESS_RECOVERED;
	werr(R, kt_writer_process(R->w, &p));
}

static void copy_drop(kt__recovery *R, const kt_trace_frame *f)
{
	struct rthread *t = thread(R, f->u.drop.thread_id);
	if (!t || grow_drops(R)) {
		werr(R, -ENOMEM);
		return;
	}
	R->drops[R->ndrops++] = (struct rdrop){ t->thread_id, f->u.drop.count,
						f->u.drop.first_ts, f->u.drop.last_ts, 1 };
	if (!werr(R, kt_writer_drop(R->w, t->thread_id, f->u.drop.count, f->u.drop.first_ts,
				    f->u.drop.last_ts))) {
		t->dropped += f->u.drop.count;
		R->dropped += f->u.drop.count;
	}
}

static void copy_trace(kt__recovery *R, kt_reader *r, const char *path)
{
	kt_trace_frame f;
	int rc;
	while ((rc = kt_reader_next_frame(r, &f)) > 0 && !R->werr) {
		if (f.kind == KT_FRAME_CHUNK)
			copy_chunk(R, &f);
		else if (f.kind == KT_FRAME_NAME)
			put_name(R, f.u.name.id, f.u.name.str, f.u.name.len);
		else if (f.kind == KT_FRAME_THREAD)
			copy_thread(R, &f);
		else if (f.kind == KT_FRAME_DROP)
			copy_drop(R, &f);
		else if (f.kind == KT_FRAME_SRCLOC)
			kt__rb_put_loc(R, &f.u.srcloc);
		else if (f.kind == KT_FRAME_CATEGORY)
			kt__rb_put_category(R, f.u.category.id, f.u.category.flags);
		else if (f.kind == KT_FRAME_TRACK)
			kt__rb_put_track(R, &f.u.track);
		else if (f.kind == KT_FRAME_PROCESS)
			copy_process(R, &f);
	}
	index_drops(R);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	if (rc < 0 && rc != KT_ETRUNCATED)
		problem(R, "control", "trace file %s: %s: the frames before it are kept", path,
			kt_reader_get_last_error(r)->message);
	else if (st.complete)
		say(R, "%s: complete (the session had stopped)", path);
	else
		say(R, "%s: cut at offset %" PRIu64 " (its writer died): %" PRIu64 " events in %" PRIu64
		    " frames kept", path, st.valid_end, st.events, st.frames);
}

/* ---- the rings -------------------------------------------------------- */

static int take_record(void *ctx, const kt__ring_rec *rec)
{
	kt__recovery *R = ctx;
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
	if (R->chunk_len + rec->size > KT__CHUNK_MAX)
		flush_chunk(R);
	memcpy(R->chunk + R->chunk_len, rec->bytes, rec->size);
	R->chunk_len += rec->size;
	R->t->recovered++;
	R->from_rings++;
	return R->werr;
}

/* Ring positions [@pos, @pos + @n) of ring file @fd (@size bytes) into
 * @buf.  Return: 0; -ENODATA when the file ended early (it shrank after
 * its size was checked); -errno. */
static int ring_read(int fd, uint64_t size, uint64_t pos, uint8_t *buf, size_t n)
{
	while (n) {
		uint64_t at = pos & (size - 1);
		size_t piece = n < size - at ? n : (size_t)(size - at);
		ssize_t got = pread(fd, buf, piece, (off_t)at);
		if (got <= 0)
			return got < 0 ? -errno : -ENODATA;
		buf += got;
		pos += (uint64_t)got;
		n -= (size_t)got;
	}
	return 0;
}

/* How many more ring bytes to read now: the window, the span left and the
 * directory's budget bound it. */
static size_t ring_want(const kt__recovery *R, size_t win, size_t have, uint64_t left)
{
	size_t want = win - have;
	if (want > left)
		want = (size_t)left;
	if (want > R->caps.ring_bytes - R->ring_bytes)
		want = (size_t)(R->caps.ring_bytes - R->ring_bytes);
	return want;
}

/*
 * Walk ring positions [@from, @to) of ring file @fd through R->win: the
 * records are validated as they are read, so a ring of holes or garbage
 * costs one small read.  Return: the position reached; @why says what
 * stopped it when that is not @to.
 */
static uint64_t walk_ring(kt__recovery *R, int fd, uint64_t size, uint64_t from, uint64_t to,
			  char *why, size_t cap)
{
	uint64_t pos = from;         /* the position of R->win[0] */
	size_t have = 0, win = WIN_MIN;
	while (pos + have < to) {
		size_t want = ring_want(R, win, have, to - pos - have);
		if (!want) {
			snprintf(why, cap, "position %" PRIu64 ": the rings hold more than the %"
				 PRIu64 " bytes read per directory", pos, R->caps.ring_bytes);
			return pos;
		}
		int rc = ring_read(fd, size, pos + have, R->win + have, want);
		if (rc) {
			snprintf(why, cap, "position %" PRIu64 ": %s", pos + have,
				 rc == -ENODATA ? "the file changed while it was read"
						: strerror(-rc));
			return pos;
		}
		R->ring_bytes += want;
		have += want;
		enum kt__walk_end end;
		size_t used = kt__ring_records(R->win, have, pos, take_record, R, &end, why, cap);
		memmove(R->win, R->win + used, have - used);
		have -= used;
		pos += used;
		if (end != KT__WALK_MORE)
			return pos;
		win = win * 2 < WIN_MAX ? win * 2 : WIN_MAX;
	}
	if (have)
		snprintf(why, cap, "position %" PRIu64 ": a record cut short", pos);
	return pos;
}

/* The events of this thread in the trace file beyond the checkpoint's
 * count are the first ones after its tail: skip them. */
static void set_skip(kt__recovery *R, const kt__slot *sl, const char *file)
{
	R->skip = 0;
	if (R->t->in_file >= sl->ck_events)
		R->skip = R->t->in_file - sl->ck_events;
	else
		problem(R, file, "the trace file holds %" PRIu64 " events of thread %u, its "
			"checkpoint says %" PRIu64 " were written: the trace file lost some",
			R->t->in_file, sl->thread_id, sl->ck_events);
}

/* Losses and refusals no marker or drop frame carried yet. */
static void put_unmarked(kt__recovery *R, const kt__slot *sl)
{
	uint64_t unmarked = sl->lost - sl->lost_base - sl->ck_marked - R->markers;
	if (unmarked && unmarked >> 63 == 0 && !R->werr)
		put_drop(R, R->t, unmarked, sl->pending_first, sl->pending_last);
	uint64_t refused = sl->refused - sl->ck_refused;
	if (refused && refused >> 63 == 0 && !R->werr)
		put_drop(R, R->t, refused, sl->refused_first, sl->refused_last);
}

/* A flight-mode ring's events overwritten before its window: one drop
 * frame, as a snapshot writes them, timed before the window. */
static void put_overwritten(kt__recovery *R, const kt__slot *sl, const char *file)
{
	if (sl->over_end != sl->from)
		problem(R, file, "thread %u's events from position %" PRIu64 " to %" PRIu64
			" were overwritten and are not counted", sl->thread_id, sl->over_end,
			sl->from);
	if (!sl->over || R->werr || werr(R, kt_writer_drop(R->w, sl->thread_id, sl->over,
							   sl->over_first, sl->over_last)))
		return;
	R->t->overwritten += sl->over;
	R->overwritten += sl->over;
}

static void recover_ring(kt__recovery *R, const kt__slot *sl)
{
	char file[32], why[256] = "";
	snprintf(file, sizeof(file), "ring-%u", sl->index);
	if (!(R->t = thread(R, sl->thread_id))) {
		werr(R, -ENOMEM);
		return;
	}
	R->t->os_tid = sl->os_tid;
	struct stat sb;
	int fd = kt__crashdir_file(&R->cd, file, &sb, why, sizeof(why));
	if (fd < 0) {
		problem(R, file, "%s: thread %u's unflushed records are lost", why, sl->thread_id);
		return;
	}
	if ((uint64_t)sb.st_size != sl->size) {
		problem(R, file, "%lld bytes, but slot %u of the control file says the ring has "
			"%" PRIu64 ": thread %u's unflushed records are not recovered",
			(long long)sb.st_size, sl->index, sl->size, sl->thread_id);
		close(fd);
		return;
	}
	set_skip(R, sl, file);
	R->markers = 0;
	uint64_t end = walk_ring(R, fd, sl->size, sl->from, sl->head, why, sizeof(why));
	close(fd);
	if (end != sl->head && !R->werr)
		problem(R, file, "%s: thread %u's records from there to position %" PRIu64
			" are not recovered", why, sl->thread_id, sl->head);
	flush_chunk(R);
	if (R->skip)
		problem(R, file, "the trace file holds %" PRIu64 " more events of thread %u "
			"than the ring had left", R->skip, sl->thread_id);
	put_unmarked(R, sl);
	put_overwritten(R, sl, file);
}

/* Slot @i of the control file into @page.  Return: 0, or -1 (reported). */
static int read_slot(kt__recovery *R, uint32_t i, uint32_t slot_size, uint8_t *page)
{
	off_t at = (off_t)(i + 1) * slot_size;
	ssize_t n = pread(R->ctl_fd, page, slot_size, at);
	if (n == (ssize_t)slot_size)
		return 0;
	problem(R, "control", "offset %lld: %s: the slots from there are not read", (long long)at,
		n < 0 ? strerror(errno) : "the file changed while it was read");
	return -1;
}

static void recover_rings(kt__recovery *R, uint32_t slot_size)
{
	struct stat sb;
	uint8_t *page = malloc(slot_size);
	if (!page || fstat(R->ctl_fd, &sb) < 0) {
		free(page);
		werr(R, -errno);
		return;
	}
	uint64_t len = (uint64_t)sb.st_size;
	uint64_t slots = len / slot_size > 1 ? len / slot_size - 1 : 0;
	if (slots > R->caps.slots)
		problem(R, "control", "%" PRIu64 " slots: only the first %u are read", slots,
			R->caps.slots);
	for (uint32_t i = 0; i < slots && i < R->caps.slots && !R->werr; i++) {
		kt__slot sl;
		char why[256];
		if (R->ring_bytes >= R->caps.ring_bytes) {
			problem(R, "control", "the %" PRIu64 " ring bytes read per directory are "
				"spent: slot %u and those after it are not read",
				R->caps.ring_bytes, i);
			break;
		}
		if (read_slot(R, i, slot_size, page))
			break;
		int rc = kt__slot_parse(page, slot_size, i, R->ctl_ok ? R->ctl.flags : 0, &sl, why,
					sizeof(why));
		if (rc < 0)
			problem(R, "control", "offset %" PRIu64 ": %s: that ring is skipped",
				(uint64_t)(i + 1) * slot_size, why);
		if (rc == 0)
			recover_ring(R, &sl);
	}
	if (len % slot_size)
		problem(R, "control", "%" PRIu64 " bytes, not a whole number of %u-byte slots: the "
			"last is cut", len, slot_size);
	free(page);
}

/* ---- the inputs ------------------------------------------------------- */

/* Open DIR and its control file, decode the header, refuse a live
 * process.  Return: 0, or -1 (said). */
static int open_dir(kt__recovery *R)
{
	char why[256];
	struct stat sb;
	if (kt__crashdir_open(&R->cd, AT_FDCWD, R->dir, R->dir, why, sizeof(why)) < 0) {
		say(R, "%s: %s", R->dir, why);
		return -1;
	}
	R->ctl_fd = kt__crashdir_file(&R->cd, "control", &sb, why, sizeof(why));
	if (R->ctl_fd < 0) {
		say(R, "%s/control: %s: not a katra crash directory it can read", R->dir, why);
		return -1;
	}
	int rc = kt__crashdir_header(R->ctl_fd, &R->ctl, why, sizeof(why));
	R->ctl_ok = rc >= 0;
	R->slot_size = R->ctl_ok ? R->ctl.slot_size : (uint32_t)kt__ring_page();
	long pid = kt__crashdir_alive(R->ctl_fd, &R->ctl, R->ctl_ok);
	if (pid) {
		say(R, "%s: process %ld is alive and holds it: recover only what a dead process "
		    "left", R->dir, pid);
		return -1;
	}
	if (rc)
		problem(R, "control", "%s", why);
	return 0;
}

/* --trace FILE: the user's choice, so followed; still never a FIFO. */
static int open_given(const char *path, struct stat *sb, char *why, size_t cap)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, sb) < 0) {
		snprintf(why, cap, "%s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(sb->st_mode)) {
		snprintf(why, cap, "not a regular file: not read");
		close(fd);
		return -1;
	}
	return fd;
}

/* The trace file, when its path is known and it opens: *@r, and its stat
 * in *@sb (st_ino 0 when there is none). */
static void open_trace(kt__recovery *R, const char *given, kt_reader **r, struct stat *sb)
{
	const char *path = given ? given : R->ctl.trace_path;
	char why[256];
	memset(sb, 0, sizeof(*sb));
	if (!*path) {
		if (R->ctl_ok && !(R->ctl.flags & KT__CTL_F_FLIGHT)) /* a flight one has none */
			problem(R, "control", "no trace file path (the session wrote to a pipe or "
				"socket): recovering from the rings alone");
		return;
	}
	int fd = given ? open_given(path, sb, why, sizeof(why))
		       : kt__crashdir_trace(path, sb, why, sizeof(why));
	R->trace_path = path;
	kt_reader_error err;
	int rc = fd < 0 ? 0 : kt__reader_open_fd_at(r, fd, given ? 0 : R->ctl.trace_off, &err);
	if (rc)
		snprintf(why, sizeof(why), "%s", rc > -4096 ? kt_strerror(rc) : err.message);
	if (fd < 0 || rc) {
		problem(R, "control", "trace file %s: %s: recovering from the rings alone", path,
			why);
		if (fd >= 0)
			close(fd);
		*r = NULL;
		return;
	}
	R->trace_fd = fd;
}

/* The output's header from the control file's, field by field: a value
 * out of its range (a damaged or forged header) keeps kt_header_init's,
 * so the header written is one every reader accepts. */
static void header_from_ctl(kt_header *h, const kt__recovery *R)
{
	const kt__ctl *c = &R->ctl;
	kt_header_init(h);
	if (!R->ctl_ok)
		return; /* kt_header_init's 1 GHz monotonic clock: times are ticks */
	h->start_wall_ns = c->start_wall_ns;
	h->start_mono_ns = c->start_mono_ns;
	h->process_id = c->pid;
	if (c->clock.tick_hz &&
	    (c->clock.source == KT_CLOCK_TSC || c->clock.source == KT_CLOCK_MONOTONIC))
		h->clock = c->clock;
	h->capture.ring_size = c->ring_size;
	if (c->overflow <= kt__max_overflow_byte(KT_FORMAT_VERSION))
		h->capture.overflow = kt__overflow_flip(c->overflow);
	if (c->codec <= KT_CODEC_COMPACT_ZSTD)
		h->capture.codec = c->codec;
	if (c->io <= KT_IO_PWRITE)
		h->capture.io = c->io;
	h->capture.codec_level = c->level;
}

/* Everything after the inputs are open: the output's contents. */
static void rebuild(kt__recovery *R)
{
	R->chunk = malloc(KT__CHUNK_MAX);
	R->win = malloc(WIN_MAX);
	if (!R->chunk || !R->win)
		werr(R, -ENOMEM);
	if (R->r && !R->werr)
		copy_trace(R, R->r, R->trace_path);
	if (!R->werr)
		kt__rb_read_names(R);
	if (!R->werr)
		kt__rb_read_sites(R);
	if (!R->werr)
		recover_rings(R, R->slot_size);
	kt__rb_name_threads(R);
	kt__idmap_sort(&R->threads);   /* thread frames in id order, as before */
	for (size_t i = 0; i < R->threads.len && !R->werr; i++) {
		struct rthread *t = KT__IDMAP_AT(&R->threads, struct rthread, i);
		if (!t->listed &&
		    (t->in_file || t->recovered || t->dropped || t->overwritten || t->name))
			werr(R, kt_writer_thread(R->w, t->thread_id, t->os_tid, t->name));
	}
	/* Where a session writes its categories and tracks: at the end. */
	if (!R->werr)
		kt__rb_read_categories(R);
	if (!R->werr)
		kt__rb_read_tracks(R);
	kt_file_summary sum = { .flags = KT_SUMMARY_RECOVERED };
	if (!R->werr)
		werr(R, kt_writer_finish(R->w, &sum));
}

/* ---- the engine ------------------------------------------------------ */

int kt__recover_open(kt__recovery **out, const char *dir, const char *trace,
		     const struct kt__recover_caps *caps, kt__recover_say_fn fn, void *ctx)
{
	kt__recovery *R = calloc(1, sizeof(*R));
	*out = R;
	if (!R) {
		fn(ctx, "out of memory");
		return -1;
	}
	*R = (kt__recovery){ .dir = dir, .caps = *caps, .say = fn, .say_ctx = ctx,
			     .cd = { .fd = -1 }, .ctl_fd = -1, .trace_fd = -1 };
	kt__idmap_init(&R->threads, sizeof(struct rthread));
	kt__idmap_init(&R->tnames, sizeof(struct rtname));
	if (open_dir(R))
		return -1;
	open_trace(R, trace, &R->r, &R->trace_sb);
	return 0;
}

const struct stat *kt__recover_input(const kt__recovery *R)
{
	return R->trace_sb.st_ino ? &R->trace_sb : NULL;
}

int kt__recover_write(kt__recovery *R, int fd)
{
	kt_header h;
	if (R->r)
		h = *kt_reader_get_header(R->r);
	else
		header_from_ctl(&h, R);
	R->codec = h.capture.codec;
	R->level = h.capture.codec_level;
	int rc = kt_writer_open_fd(fd, &h, &R->w);
	if (rc)
		return rc;
	rebuild(R);
	werr(R, kt_writer_close(R->w));
	R->w = NULL;
	return R->werr;
}

void kt__recover_result_get(const kt__recovery *R, kt__recover_result *res)
{
	*res = (kt__recover_result){ R->from_file, R->from_rings, R->dropped, R->threads.len,
				     R->problems, R->overwritten,
				     R->ctl_ok && (R->ctl.flags & KT__CTL_F_FLIGHT) };
}

void kt__recover_close(kt__recovery *R)
{
	if (!R)
		return;
	kt_reader_close(R->r);
	for (size_t i = 0; i < R->threads.len; i++)
		free(KT__IDMAP_AT(&R->threads, struct rthread, i)->name);
	kt__idmap_free(&R->threads);
	for (size_t i = 0; i < R->tnames.len; i++)
		free(KT__IDMAP_AT(&R->tnames, struct rtname, i)->name);
	kt__idmap_free(&R->tnames);
	free(R->names);
	free(R->locs);
	free(R->cats);
	free(R->drops);
	free(R->chunk);
	free(R->win);
	if (R->ctl_fd >= 0)
		close(R->ctl_fd);
	if (R->trace_fd >= 0)
		close(R->trace_fd);
	kt__crashdir_close(&R->cd);
	free(R);
}
