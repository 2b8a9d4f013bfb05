/*
 * merge.c - several processes' traces as one (tools/merge.h, SPEC
 * §4.10.1).
 *
 * Two passes per input: the first, without events, finds its summary
 * (the stop calibration and end time), its own process entry and its first
 * thread's name; the second copies every frame, renumbered and converted.
 * Ids are renumbered through hash maps of the input's ids (tools/idmap.h),
 * so a file cannot make the merge slow by its choice of ids.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <katra/reader.h>
#include <katra/writer.h>
#include "tools/cmd/cli.h"
#include "tools/pipeline/grow.h"
#include "tools/pipeline/idmap.h"
#include "tools/cmd/merge.h"

/* The output's ids, shared by every input. */
struct next_ids {
	uint32_t name, thread, track, proc, stack;
};

/* One input while it is copied. */
struct in {
	const char *path;
	struct input inp;
	const kt_header *h;
	kt_file_summary sum;
	int have_sum;
	kt_process_def own;       /* its entry of id 0, strings copied */
	char *own_name, *own_cmd;
	int have_own, nested;     /* nested: entries of other ids (a merged input) */
	int has_stacks;           /* it has a stack entry (SPEC §4.11) */
	char first_thread[64];
	struct idmap names, threads, tracks, procs, listed, stacks;
	struct merge_proc *rep;
};

struct merge {
	kt_writer *w;
	struct next_ids next;
	uint8_t *buf;             /* a chunk's records, rewritten */
	size_t buf_cap;
	kt_track_pair *pairs;     /* KT_MAX_TRACK_PAIRS of them */
	int damaged;
};

size_t merge_max_inputs(void)
{
	return KT_MAX_PROCESSES;
}

static uint64_t to_ns(const struct in *in, uint64_t ticks)
{
	return kt_ticks_to_ns(&in->h->clock, in->have_sum ? &in->sum : NULL, ticks);
}

/* The output's id of the input's @id in @m, a new one from @next when
 * first met; 0 when out of memory or @limit is passed. */
static uint32_t remap(struct idmap *m, uint32_t id, uint32_t *next, uint32_t limit)
{
	int added;
	uint32_t *v = idmap_slot(m, id, *next, &added);
	if (!v)
		return 0;
	if (added && *next > limit) {
		*v = 0;
		return 0;
	}
	if (added)
		(*next)++;
	return *v;
}

static char *dup_bytes(const char *s, size_t n)
{
	char *p = malloc(n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = 0;
	}
	return p;
}

/* Pass 1: the summary, the input's own process entry, its first named
 * thread.  Returns 0 or a negative code (out of memory). */
static int survey(struct in *in)
{
	kt_reader *r = in->inp.r;
	kt_trace_frame f;
	kt_reader_skip_events(r, 1);
	while (kt_reader_next_frame(r, &f) > 0) {
		const kt_process_def *p = kt_trace_frame_get_process(&f);
		if (f.kind == KT_FRAME_SUMMARY) {
			in->sum = f.u.summary;
			in->sum.threads = NULL;
			in->have_sum = 1;
		} else if (p && p->id == 0 && !in->have_own) {
			in->own = *p;
			in->own_name = dup_bytes(p->name, p->name_len);
			in->own_cmd = dup_bytes(p->cmdline, p->cmdline_len);
			if (!in->own_name || !in->own_cmd)
				return -ENOMEM;
			in->own.name = in->own_name;
			in->own.cmdline = in->own_cmd;
			in->have_own = 1;
		} else if (p) {
			in->nested = 1;
		} else if (f.kind == KT_FRAME_STACK) {
			in->has_stacks = 1;
		} else if (f.kind == KT_FRAME_THREAD && !in->first_thread[0] && f.u.thread.name_len) {
			snprintf(in->first_thread, sizeof(in->first_thread), "%s", f.u.thread.name);
		}
	}
	kt_reader_skip_events(in->inp.r, 0);
	return kt_reader_rewind(in->inp.r);
}

/* The input's own process, as the output's process @id. */
static int write_own(struct merge *m, struct in *in, uint32_t id)
{
	kt_process_def p = { 0 };
	if (in->have_own)
		p = in->own;
	else {
		p.pid = in->h->process_id;
		p.name = in->first_thread;
		p.name_len = (uint32_t)strlen(in->first_thread);
	}
	p.id = id;
	if (!p.start_ns)
		p.start_ns = in->h->start_mono_ns;
	p.flags &= KT_PROCESS_RECOVERED;
	/* A rebuilt process died: its accounting is what its crash files
	 * kept, not whole. */
	if (in->have_sum && in->sum.flags & KT_SUMMARY_RECOVERED)
		p.flags |= KT_PROCESS_RECOVERED;
	else if (in->have_sum)
		p.flags |= KT_PROCESS_COMPLETE;
	if (in->have_sum)
		p.end_ns = in->sum.end_mono_ns;
	in->rep->id = id;
	in->rep->pid = p.pid;
	in->rep->parent = p.parent_pid;
	snprintf(in->rep->name, sizeof(in->rep->name), "%s", p.name ? p.name : "");
	in->rep->complete = in->have_sum;
	in->rep->recovered = !!(p.flags & KT_PROCESS_RECOVERED);
	return kt_writer_process(m->w, &p);
}

/* A scheduler record's thread (SPEC §4.2.1), read through the accessor and
 * renumbered as the input's threads are: @ev then points at @pay, its
 * payload made again by kt_event_set_value() (the CPU or lost count
 * kept).  0 or -ENOMEM. */
static int sched_thread(struct merge *m, struct in *in, kt_event *ev, uint8_t pay[16])
{
	kt_value v;
	if (!kt_event_get_value(ev, &v) || v.kind != KT_VALUE_SCHED || !v.thread)
		return 0;
	uint64_t tid = remap(&in->threads, v.thread, &m->next.thread, UINT32_MAX - 1);
	if (!tid)
		return -ENOMEM;
	v.thread = (uint32_t)tid;
	kt_event_set_value(ev, &v, pay);
	return 0;
}

/* A sample record's thread and stack (SPEC §4.2.2), renumbered as the
 * input's threads and stack entries are: each input numbers its stacks
 * from 1, so two inputs' stack 1 are two stacks.  A stack id that no
 * entry can define (0, past 32 bits) stays unknown: 0.  0 or -ENOMEM. */
static int sample_ids(struct merge *m, struct in *in, kt_event *ev, uint8_t pay[16])
{
	kt_value v;
	if (!kt_event_get_value(ev, &v) || v.kind != KT_VALUE_SAMPLE)
		return 0;
	if (v.thread &&
	    !(v.thread = remap(&in->threads, v.thread, &m->next.thread, UINT32_MAX - 1)))
		return -ENOMEM;
	if (v.u64 > UINT32_MAX)
		v.u64 = 0;
	else if (v.u64 && !(v.u64 = remap(&in->stacks, (uint32_t)v.u64, &m->next.stack,
					  UINT32_MAX - 1)))
		return -ENOMEM;
	kt_event_set_value(ev, &v, pay);
	return 0;
}

/* A chunk's events with their times, names and tracks the output's,
 * encoded again (kt_event_encode() copies each payload whole, unread). */
static int copy_chunk(struct merge *m, struct in *in, const kt_trace_frame *f)
{
	uint32_t tid = remap(&in->threads, f->u.chunk.thread_id, &m->next.thread, UINT32_MAX - 1);
	size_t n = f->u.chunk.raw_len, at = 0;
	if (!tid || grow_array((void **)&m->buf, &m->buf_cap, n, 1))
		return -ENOMEM;
	kt_chunk_iter it;
	kt_event ev;
	kt_chunk_iter_init(&it, f);
	while (kt_chunk_next(&it, &ev) == 1) {
		ev.ts = to_ns(in, ev.ts);
		if (ev.name_id && !(ev.name_id = remap(&in->names, ev.name_id, &m->next.name,
						       UINT32_MAX - 1)))
			return -ENOMEM;
		if (ev.type >= KT_EV_TRACK_BEGIN && ev.type <= KT_EV_TRACK_COUNTER_F64 &&
		    !(ev.flags = (uint8_t)remap(&in->tracks, ev.flags, &m->next.track, KT_MAX_TRACKS)))
			return -ERANGE;
		uint8_t pay[16];
		if (ev.type == KT_EV_SCHED && sched_thread(m, in, &ev, pay))
			return -ENOMEM;
		if (ev.type == KT_EV_SAMPLE && sample_ids(m, in, &ev, pay))
			return -ENOMEM;
		size_t k = kt_event_encode(m->buf + at, n - at, &ev);
		if (!k)
			return -EINVAL; /* cannot be: each record is re-encoded at its size */
		at += k;
	}
	in->rep->written += f->u.chunk.event_count;
	return kt_writer_chunk(m->w, tid, KT_CODEC_COMPACT, 1, m->buf, at);
}

/* The output's process of the input's process @p: its own (id 0) is
 * @own, written first; a merged input's others are renumbered. */
static uint32_t proc_of(struct merge *m, struct in *in, uint32_t p, uint32_t own)
{
	return p || !own ? remap(&in->procs, p, &m->next.proc, UINT32_MAX) : own;
}

static int copy_thread(struct merge *m, struct in *in, const kt_trace_frame *f, uint32_t own)
{
	uint32_t tid = remap(&in->threads, f->u.thread.thread_id, &m->next.thread, UINT32_MAX - 1);
	uint32_t proc = proc_of(m, in, f->u.thread.process, own);
	int added;
	if (!tid || !proc || !idmap_slot(&in->listed, f->u.thread.thread_id, 1, &added))
		return -ENOMEM;
	if (!added)
		return 0;
	in->rep->threads++;
	return kt_writer_thread_in(m->w, tid, f->u.thread.os_tid, f->u.thread.name, proc);
}

/* A track entry with its id, name and pairs the output's; pairs that the
 * conversion to ns makes equal are left out (the writer wants them
 * strictly increasing). */
static int copy_track(struct merge *m, struct in *in, const kt_track_def *t)
{
	kt_track_def o = *t;
	o.id = remap(&in->tracks, t->id, &m->next.track, KT_MAX_TRACKS);
	o.name_id = remap(&in->names, t->name_id, &m->next.name, UINT32_MAX - 1);
	if (!o.id)
		return -ERANGE;
	if (!o.name_id)
		return -ENOMEM;
	kt_track_pair *p = m->pairs;
	o.pair_count = 0;
	for (uint32_t i = 0; i < t->pair_count; i++) {
		kt_track_pair q = { t->pairs[i].track_ts, to_ns(in, t->pairs[i].ticks) };
		if (o.pair_count && (q.ticks <= p[o.pair_count - 1].ticks ||
				     q.track_ts <= p[o.pair_count - 1].track_ts))
			continue;
		p[o.pair_count++] = q;
	}
	o.pairs = p;
	return kt_writer_track(m->w, &o);
}

static int copy_srcloc(struct merge *m, struct in *in, const kt_srcloc *l)
{
	kt_srcloc o = *l;
	o.id = remap(&in->names, l->id, &m->next.name, UINT32_MAX - 1);
	if (l->category)
		o.category = remap(&in->names, l->category, &m->next.name, UINT32_MAX - 1);
	if (!o.id || (l->category && !o.category))
		return -ENOMEM;
	return kt_writer_srcloc(m->w, &o);
}

static int copy_process(struct merge *m, struct in *in, const kt_process_def *p)
{
	if (p->id == 0)
		return 0; /* written first, as the input's own */
	kt_process_def o = *p;
	if (!(o.id = remap(&in->procs, p->id, &m->next.proc, UINT32_MAX)))
		return -ENOMEM;
	return kt_writer_process(m->w, &o);
}

/* A stack entry under the output's id of its input's id (sample_ids()). */
static int copy_stack(struct merge *m, struct in *in, const kt_stack_def *st)
{
	kt_stack_def o = *st;
	if (!(o.id = remap(&in->stacks, st->id, &m->next.stack, UINT32_MAX - 1)))
		return -ENOMEM;
	return kt_writer_stack(m->w, &o);
}

/* A map entry in the output's process of its input's, at the output's
 * time (0, mapped at the start, stays 0). */
static int copy_map(struct merge *m, struct in *in, const kt_map_def *mp, uint32_t own)
{
	kt_map_def o = *mp;
	if (!(o.process = proc_of(m, in, mp->process, own)))
		return -ENOMEM;
	if (mp->ts)
		o.ts = to_ns(in, mp->ts);
	return kt_writer_map(m->w, &o);
}

static int copy_name(struct merge *m, struct in *in, const kt_trace_frame *f)
{
	uint32_t id = remap(&in->names, f->u.name.id, &m->next.name, UINT32_MAX - 1);
	return id ? kt_writer_name(m->w, id, f->u.name.str, f->u.name.len) : -ENOMEM;
}

static int copy_drop(struct merge *m, struct in *in, const kt_trace_frame *f)
{
	uint32_t tid = remap(&in->threads, f->u.drop.thread_id, &m->next.thread, UINT32_MAX - 1);
	if (!tid)
		return -ENOMEM;
	in->rep->dropped += f->u.drop.count;
	return kt_writer_drop(m->w, tid, f->u.drop.count, to_ns(in, f->u.drop.first_ts),
			      to_ns(in, f->u.drop.last_ts));
}

static int copy_frame(struct merge *m, struct in *in, const kt_trace_frame *f, uint32_t own)
{
	switch (f->kind) {
	case KT_FRAME_CHUNK:
		return copy_chunk(m, in, f);
	case KT_FRAME_NAME:
		return copy_name(m, in, f);
	case KT_FRAME_THREAD:
		return copy_thread(m, in, f, own);
	case KT_FRAME_DROP:
		return copy_drop(m, in, f);
	case KT_FRAME_SRCLOC:
		return copy_srcloc(m, in, &f->u.srcloc);
	case KT_FRAME_CATEGORY: {
		uint32_t id = remap(&in->names, f->u.category.id, &m->next.name, UINT32_MAX - 1);
		return id ? kt_writer_category(m->w, id, f->u.category.flags) : -ENOMEM;
	}
	case KT_FRAME_TRACK:
		return copy_track(m, in, &f->u.track);
	case KT_FRAME_PROCESS:
		return copy_process(m, in, &f->u.process);
	case KT_FRAME_STACK:
		return copy_stack(m, in, &f->u.stack);
	case KT_FRAME_MAP:
		return copy_map(m, in, &f->u.map, own);
	default:
		return 0; /* the summary (the writer makes the output's), unknown kinds */
	}
}

/* A thread entry, under the input's own process, for each thread that had
 * chunks or drops but no entry of its own. */
static int list_rest(struct merge *m, struct in *in, uint32_t own)
{
	uint32_t proc = proc_of(m, in, 0, own);
	if (!proc)
		return -ENOMEM;
	for (size_t i = 0; i < in->threads.cap; i++) {
		int added;
		if (!in->threads.used[i])
			continue;
		if (!idmap_slot(&in->listed, in->threads.keys[i], 1, &added))
			return -ENOMEM;
		if (!added)
			continue;
		in->rep->threads++;
		int rc = kt_writer_thread_in(m->w, in->threads.vals[i], 0, NULL, proc);
		if (rc)
			return rc;
	}
	return 0;
}

/* Pass 2: every frame of @in.  Damage stops the input (its frames before
 * are kept, and said); a writer's error stops the merge. */
static int copy_input(struct merge *m, struct in *in)
{
	uint32_t own = 0;
	int rc = 0;
	if (!in->nested || !in->have_own) {
		own = m->next.proc++;
		if ((rc = write_own(m, in, own)))
			return rc;
	} else {
		in->rep->pid = in->h->process_id;
		in->rep->complete = in->have_sum;
	}
	kt_trace_frame f;
	int got;
	while ((got = kt_reader_next_frame(in->inp.r, &f)) > 0)
		if ((rc = copy_frame(m, in, &f, own)))
			return rc;
	if (got < 0 && got != KT_ETRUNCATED) {
		in->rep->damaged = 1;
		m->damaged = 1;
		say("merge: %s: %s: the frames before it were kept", in->path,
		    kt_reader_get_last_error(in->inp.r)->message);
	}
	return list_rest(m, in, own);
}

static void in_free(struct in *in)
{
	input_close(&in->inp);
	free(in->own_name);
	free(in->own_cmd);
	idmap_free(&in->names);
	idmap_free(&in->threads);
	idmap_free(&in->tracks);
	idmap_free(&in->procs);
	idmap_free(&in->listed);
	idmap_free(&in->stacks);
}

/* Open and survey every input; all of one host.  0 or EXIT_BAD (said). */
static int open_inputs(struct in *ins, const char *const *paths, size_t n,
		       struct merge_proc *procs)
{
	for (size_t i = 0; i < n; i++) {
		struct in *in = &ins[i];
		in->path = paths[i];
		in->rep = &procs[i];
		idmap_init(&in->names);
		idmap_init(&in->threads);
		idmap_init(&in->tracks);
		idmap_init(&in->procs);
		idmap_init(&in->listed);
		idmap_init(&in->stacks);
		if (input_open(&in->inp, paths[i]))
			return EXIT_BAD;
		in->h = kt_reader_get_header(in->inp.r);
		if (survey(in)) {
			say("merge: out of memory");
			return EXIT_BAD;
		}
		/* CLOCK_MONOTONIC is one clock on one boot of one machine. */
		if (strcmp(in->h->host, ins[0].h->host)) {
			say("merge: %s is of host \"%s\", %s of \"%s\": their clocks are not one",
			    paths[i], in->h->host, paths[0], ins[0].h->host);
			return EXIT_BAD;
		}
	}
	return 0;
}

/* The output's header: CLOCK_MONOTONIC ns, from the earliest start. */
/* The run the inputs name (KT_HDR_CAPTURE: katra record --run-id, a
 * capture's trace), when those that name one all name the same run and
 * epoch; else none.  The capture id is the first input's that has one. */
static void out_run(kt_header *h, const struct in *ins, size_t n)
{
	const kt_header *run = NULL;
	for (size_t i = 0; i < n; i++) {
		const kt_header *x = ins[i].h;
		if (!(x->flags & KT_HDR_CAPTURE) || !x->run_id)
			continue;
		if (run && (strcmp(run->run_id, x->run_id) || run->epoch != x->epoch))
			return;
		if (!run || (!run->capture_id && x->capture_id))
			run = x;
	}
	if (!run)
		return;
	h->flags |= KT_HDR_CAPTURE;
	h->run_id = run->run_id;
	h->epoch = run->epoch;
	h->capture_id = run->capture_id;
}

static int any_stacks(const struct in *ins, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ins[i].has_stacks)
			return 1;
	return 0;
}

static void out_header(kt_header *h, const struct in *ins, size_t n, char *note, size_t cap)
{
	kt_header_init(h);
	h->clock.source = KT_CLOCK_MONOTONIC;
	h->clock.tick_hz = 1000000000u;
	h->clock.ticks = h->clock.mono_ns = 0;
	h->start_wall_ns = ins[0].h->start_wall_ns;
	h->start_mono_ns = ins[0].h->start_mono_ns;
	for (size_t i = 1; i < n; i++)
		if (ins[i].h->start_mono_ns < h->start_mono_ns) {
			h->start_mono_ns = ins[i].h->start_mono_ns;
			h->start_wall_ns = ins[i].h->start_wall_ns;
		}
	h->process_id = ins[0].h->process_id;
	h->host = ins[0].h->host;
	h->workload = ins[0].h->workload;
	h->tool_version = ins[0].h->tool_version;
	h->capture = ins[0].h->capture;
	h->capture.codec = KT_CODEC_COMPACT;
	out_run(h, ins, n);
	/* Scheduler records where any input has them; each thread's follow
	 * record says which threads they cover (SPEC §4.2.1). */
	for (size_t i = 0; i < n; i++)
		h->flags |= ins[i].h->flags & KT_HDR_SCHED;
	for (size_t i = 0; i < n && !(h->flags & KT_HDR_SCHED); i++)
		h->flags |= ins[i].h->flags & KT_HDR_SCHED_ABSENT;
	snprintf(note, cap, "katra.merge: %zu processes", n);
	static const char *notes[3];
	notes[0] = note;
	h->note_count = 1;
	h->notes = notes;
	/* Samples asked for and refused (flush/sample.c's note): said where
	 * no input has a stack, as the scheduler's absent flag is. */
	const char *absent = NULL;
	for (size_t i = 0; i < n && !absent; i++)
		for (uint32_t k = 0; k < ins[i].h->note_count && !absent; k++)
			if (!strncmp(ins[i].h->notes[k], "samples: absent: ", 17))
				absent = ins[i].h->notes[k];
	if (absent && !any_stacks(ins, n))
		notes[h->note_count++] = absent;
	/* A capture's trim note stays with its run (SPEC §9): katra record
	 * joins a capture's trace, first, with its run's other processes. */
	for (uint32_t i = 0; (h->flags & KT_HDR_CAPTURE) && i < ins[0].h->note_count; i++)
		if (!strncmp(ins[0].h->notes[i], "katra.capture: ", 15)) {
			notes[h->note_count++] = ins[0].h->notes[i];
			break;
		}
}

/* The output's end: the last input's, recovered when any was. */
static void out_summary(kt_file_summary *s, const struct in *ins, size_t n)
{
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < n; i++) {
		if (!ins[i].have_sum)
			continue;
		if (ins[i].sum.end_mono_ns > s->end_mono_ns) {
			s->end_mono_ns = ins[i].sum.end_mono_ns;
			s->end_wall_ns = ins[i].sum.end_wall_ns;
		}
		s->flags |= ins[i].sum.flags & KT_SUMMARY_RECOVERED;
	}
}

/* OUT created new: written to a temporary file beside it, then linked to
 * its name, which fails when a file is there (never replaced). */
static int merge_write(struct merge *m, struct in *ins, size_t n, const char *out, int fd)
{
	kt_header h;
	char note[64];
	out_header(&h, ins, n, note, sizeof(note));
	int rc = kt_writer_open_fd(fd, &h, &m->w);
	for (size_t i = 0; !rc && i < n; i++)
		rc = copy_input(m, &ins[i]);
	kt_file_summary s;
	out_summary(&s, ins, n);
	if (!rc)
		rc = kt_writer_finish(m->w, &s);
	if (m->w) {
		int crc = kt_writer_close(m->w);
		rc = rc ? rc : crc;
	}
	if (rc == -ERANGE)
		say("merge: the inputs hold more than %u tracks in all", KT_MAX_TRACKS);
	else if (rc)
		say("merge: writing %s: %s", out, kt_strerror(rc));
	return rc ? EXIT_BAD : 0;
}

int merge_traces(const char *const *paths, size_t n, const char *out, struct merge_proc *procs)
{
	char tmp[4096];
	struct merge m = { .next = { 1, 1, 1, 1, 1 } };
	struct in *ins = calloc(n ? n : 1, sizeof(*ins));
	m.pairs = calloc(KT_MAX_TRACK_PAIRS, sizeof(*m.pairs));
	memset(procs, 0, n * sizeof(*procs));
	for (size_t i = 0; ins && i < n; i++)
		ins[i].inp.fd = -1;
	int rc = !ins || !m.pairs ? EXIT_BAD : 0;
	if (rc)
		say("merge: out of memory");
	if (!rc && (size_t)snprintf(tmp, sizeof(tmp), "%s.tmp-%d", out, (int)getpid()) >= sizeof(tmp))
		rc = usage_error("merge: -o %s: too long", out);
	if (!rc && !access(out, F_OK)) {
		say("merge: %s exists: not replaced", out);
		rc = EXIT_BAD;
	}
	if (!rc)
		rc = open_inputs(ins, paths, n, procs);
	int fd = -1;
	if (!rc && (fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0) {
		say("merge: %s: %s", tmp, strerror(errno));
		rc = EXIT_BAD;
	}
	if (!rc)
		rc = merge_write(&m, ins, n, out, fd);
	if (fd >= 0 && close(fd) && !rc)
		rc = EXIT_BAD;
	if (!rc && link(tmp, out) < 0) {
		say("merge: %s: %s", out, strerror(errno));
		rc = EXIT_BAD;
	}
	if (fd >= 0)
		unlink(tmp);
	for (size_t i = 0; ins && i < n; i++)
		in_free(&ins[i]);
	free(ins);
	free(m.buf);
	free(m.pairs);
	return rc ? rc : m.damaged ? EXIT_PARTIAL : 0;
}
