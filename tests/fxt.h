/*
 * fxt.h - a reader of the Fuchsia trace format written here, from the
 * format's documentation, for the tests that read `katra export --fxt`
 * back record by record (test_native, test_track).  It asserts what it
 * reads is well formed: sizes match contents, strings and threads are
 * defined before use.
 */
#ifndef KT_TESTS_FXT_H
#define KT_TESTS_FXT_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <katra/reader.h>

struct fxt_event {
	unsigned type;       /* event type */
	uint64_t ts, koid;   /* ticks; the thread's koid */
	char name[64];
	unsigned nargs;
	char arg_name[8][16];
	unsigned arg_type[8];
	uint64_t arg_val[8];
	char arg_text[8][64]; /* a string argument's value */
	char text[64];       /* the first string argument's value */
	uint64_t data;       /* a counter's or flow's id */
};

/* A context switch record (type 8, the layout with bits 60-63 zero). */
struct fxt_switch {
	uint64_t ts;
	unsigned cpu, out_state, out_prio, in_prio;
	uint64_t out_pid, out_koid, in_pid, in_koid;
};

struct fxt {
	const uint64_t *w;
	size_t n, at;
	char strings[64][64];        /* index -> string (the test's traces are small) */
	int nstrings;
	uint64_t threads[16][2];     /* index -> process koid, thread koid */
	uint64_t tick_hz, pid;
	char thread_name[16][64];    /* from kernel objects */
	uint64_t thread_koid[16];
	uint64_t pids[8];            /* every process koid, in order */
	uint64_t thread_pid[16];     /* each named thread's process */
	int npids;
	int nthread_names;
	struct fxt_event ev[256];
	int nev;
	struct fxt_switch sw[64];
	int nsw;
};


static inline uint64_t field(uint64_t w, unsigned lo, unsigned hi)
{
	return (w >> lo) & ((hi - lo == 63) ? ~UINT64_C(0) : ((UINT64_C(1) << (hi - lo + 1)) - 1));
}

/* Both threads inline (refs 0), as katra writes them. */
static inline void read_switch(struct fxt *f, uint64_t h, size_t k, size_t end)
{
	cr_assert_eq(field(h, 60, 63), 0, "the context switch layout");
	cr_assert_eq(field(h, 28, 35), 0, "outgoing thread inline");
	cr_assert_eq(field(h, 36, 43), 0, "incoming thread inline");
	cr_assert_eq(end - k, 5, "timestamp and two inline threads");
	cr_assert_lt(f->nsw, 64);
	struct fxt_switch *s = &f->sw[f->nsw++];
	s->cpu = field(h, 16, 23);
	s->out_state = field(h, 24, 27);
	s->out_prio = field(h, 44, 51);
	s->in_prio = field(h, 52, 59);
	s->ts = f->w[k];
	s->out_pid = f->w[k + 1];
	s->out_koid = f->w[k + 2];
	s->in_pid = f->w[k + 3];
	s->in_koid = f->w[k + 4];
}

/* A string reference at the record's cursor *@k (inline ones advance it). */
static inline void read_str(struct fxt *f, uint64_t ref, size_t *k, size_t end, char *out,
			    size_t cap)
{
	out[0] = 0;
	if (!ref)
		return;
	if (ref & 0x8000) {
		size_t len = ref & 0x7FFF, words = (len + 7) / 8;
		cr_assert_leq(*k + words, end, "an inline string past its record");
		snprintf(out, cap, "%.*s", (int)len, (const char *)&f->w[*k]);
		*k += words;
		return;
	}
	cr_assert_lt(ref, 64);
	cr_assert_neq(f->strings[ref][0], 0, "string %llu used before its record",
		      (unsigned long long)ref);
	/* memmove: @out may be a field of @f (GCC's -Wrestrict says so of
	 * snprintf in a Release build). */
	size_t n = strnlen(f->strings[ref], cap - 1);
	memmove(out, f->strings[ref], n);
	out[n] = 0;
}

static inline void read_args(struct fxt *f, struct fxt_event *e, unsigned nargs, size_t *k,
			     size_t end)
{
	for (unsigned i = 0; i < nargs; i++) {
		uint64_t h = f->w[*k];
		size_t size = field(h, 4, 15), at = *k + 1;
		cr_assert(size >= 1 && *k + size <= end, "an argument's size word is wrong");
		char name[16];
		read_str(f, field(h, 16, 31), &at, end, name, sizeof(name));
		if (i < 8) {
			snprintf(e->arg_name[i], sizeof(e->arg_name[i]), "%s", name);
			unsigned type = field(h, 0, 3);
			e->arg_type[i] = type;
			if (type == 1 || type == 2) {
				e->arg_val[i] = field(h, 32, 63);
			} else if (type == 6) {
				read_str(f, field(h, 32, 47), &at, end, e->arg_text[i],
					 sizeof(e->arg_text[i]));
				if (!e->text[0])
					memcpy(e->text, e->arg_text[i], sizeof(e->text));
			} else {
				e->arg_val[i] = f->w[at++];
			}
		} else {
			at = *k + size; /* past the ones kept: only its size is checked */
		}
		cr_assert_eq(at, *k + size, "argument %u's size does not match its contents", i);
		*k += size;
	}
	e->nargs = nargs;
}

static inline void read_event(struct fxt *f, uint64_t h, size_t k, size_t end)
{
	cr_assert_lt(f->nev, 256);
	struct fxt_event *e = &f->ev[f->nev++];
	memset(e, 0, sizeof(*e));
	cr_assert_eq(f->nstrings, 1, "the category alone in the string table: Tracy's importer "
		     "reads a table's strings with a stray byte, so every other goes inline");
	e->type = field(h, 16, 19);
	e->ts = f->w[k++];
	uint64_t tref = field(h, 24, 31);
	if (tref) {
		cr_assert_neq(f->threads[tref][1], 0, "thread %llu used before its record",
			      (unsigned long long)tref);
		e->koid = f->threads[tref][1];
	} else {
		e->koid = f->w[k + 1];
		k += 2;
	}
	char cat[16];
	read_str(f, field(h, 32, 47), &k, end, cat, sizeof(cat));
	cr_assert_str_eq(cat, "katra");
	read_str(f, field(h, 48, 63), &k, end, e->name, sizeof(e->name));
	read_args(f, e, field(h, 20, 23), &k, end);
	if (e->type == 1 || (e->type >= 8 && e->type <= 10))
		e->data = f->w[k++];
	cr_assert_eq(k, end, "event record's size word does not match its contents");
}

static inline void read_kobj(struct fxt *f, uint64_t h, size_t k, size_t end)
{
	uint64_t koid = f->w[k++];
	char name[64];
	read_str(f, field(h, 24, 39), &k, end, name, sizeof(name));
	if (field(h, 16, 23) == 1) {
		if (!f->npids)
			f->pid = koid;
		cr_assert_lt(f->npids, 8);
		f->pids[f->npids++] = koid;
		return;
	}
	cr_assert_eq(field(h, 16, 23), 2);
	static struct fxt_event args;
	memset(&args, 0, sizeof(args));
	read_args(f, &args, field(h, 40, 43), &k, end);
	cr_assert_str_eq(args.arg_name[0], "process");
	int known = 0;
	for (int i = 0; i < f->npids; i++)
		known += args.arg_val[0] == f->pids[i];
	cr_assert_eq(known, 1, "thread of process %llu, never named",
		     (unsigned long long)args.arg_val[0]);
	f->thread_pid[f->nthread_names] = args.arg_val[0];
	snprintf(f->thread_name[f->nthread_names], 64, "%s", name);
	f->thread_koid[f->nthread_names++] = koid;
	cr_assert_eq(k, end);
}

static inline void read_fxt(struct fxt *f, const uint8_t *bytes, size_t len)
{
	memset(f, 0, sizeof(*f));
	cr_assert_eq(len % 8, 0, "FXT is whole words");
	f->w = (const void *)bytes; /* t_slurp()'s malloc: aligned for words */
	f->n = len / 8;
	cr_assert(f->n && f->w[0] == UINT64_C(0x0016547846040010), "no magic record first");
	for (size_t at = 1; at < f->n;) {
		uint64_t h = f->w[at];
		size_t size = field(h, 4, 15), end = at + size;
		cr_assert(size >= 1 && end <= f->n, "record at word %zu: bad size %zu", at, size);
		switch (field(h, 0, 3)) {
		case 1:
			f->tick_hz = f->w[at + 1];
			break;
		case 2: {
			uint64_t idx = field(h, 16, 30), slen = field(h, 32, 46);
			cr_assert(idx > 0 && idx < 64 && size == 1 + (slen + 7) / 8);
			snprintf(f->strings[idx], 64, "%.*s", (int)slen, (const char *)&f->w[at + 1]);
			f->nstrings++;
			break;
		}
		case 3: {
			uint64_t idx = field(h, 16, 23);
			cr_assert(idx > 0 && idx < 16 && size == 3);
			f->threads[idx][0] = f->w[at + 1];
			f->threads[idx][1] = f->w[at + 2];
			break;
		}
		case 4:
			read_event(f, h, at + 1, end);
			break;
		case 7:
			read_kobj(f, h, at + 1, end);
			break;
		case 8:
			read_switch(f, h, at + 1, end);
			break;
		}
		at = end;
	}
}

/* The ns katra's exports write for @ticks of file @path (FXT: its times
 * are ns, at a rate of 1e9, the unit Tracy's importer reads). */
static inline uint64_t fxt_ns(const char *path, uint64_t ticks)
{
	kt_reader *r;
	kt_event ev;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	while (kt_reader_next(r, &ev) > 0)
		;
	uint64_t ns = kt_reader_get_time_ns(r, ticks);
	kt_reader_close(r);
	return ns;
}

static inline const char *koid_name(const struct fxt *f, uint64_t koid)
{
	for (int i = 0; i < f->nthread_names; i++)
		if (f->thread_koid[i] == koid)
			return f->thread_name[i];
	return "?";
}

#endif
