/*
 * fmt.h - events as text lines, JSON lines or Chrome Trace Event objects:
 * what `katra dump`, `replay` and `export --chrome` print.
 *
 * Every string from the file goes out escaped: names, thread names and
 * messages as tools/pipeline/text.h makes them (a terminal's rules for text names; a
 * JSON literal, every byte kept visible, for messages and JSON output), so
 * a hostile trace can neither drive a terminal nor lose a key or a message.
 * Output goes through a buffer of its own with hand-written integer
 * formatting (printf's format parsing was most of a dump's time); memory
 * stays fixed whatever the trace: the buffers, a cache of 1024 formatted
 * line middles, and the pipeline's batches (tools/pipeline/pipe.h).
 *
 * A formatter is used by one thread at a time; fmt_pass() runs two (the
 * second formats ahead with its own caches).
 */
#ifndef KT_TOOLS_FMT_H
#define KT_TOOLS_FMT_H

#include <stdint.h>
#include <stdio.h>

#include <katra/reader.h>

#include "tools/pipeline/drops.h"
#include "tools/pipeline/tables.h"

enum { FMT_TEXT, FMT_JSONL, FMT_CHROME };

/* What a formatting pass prints; read by both threads, written by none. */
struct fmt_job {
	const struct tables *t;
	int kind;                /* FMT_* */
	uint64_t pid;            /* chrome: every object's pid */
	uint64_t from, to;       /* text and jsonl: keep ns in [from, to] */
	const uint32_t *threads; /* text and jsonl: keep only these, when nthreads */
	int nthreads;
	uint64_t printed;        /* chrome: objects written before the events */
	const struct drops *drops; /* text and jsonl: drop records sorted by
				    * time, each printed as a line before the
				    * first event at or after it (nothing is
				    * then formatted ahead); or NULL */
	kt_reader *drops_r;      /* the reader whose ticks they are */
	struct memstats *mem;    /* chrome: the pools' live bytes, for the
				  * memory counters; the writing thread's alone */
};

struct fmt;
struct memstats;

/* fmt_new - a formatter of @job's events (@job must outlive it) into @f.
 * Returns NULL when out of memory. */
struct fmt *fmt_new(const struct fmt_job *job, FILE *f);

/* fmt_event - format one event at @ns (the next of the pass), or skip it
 * when the job's filter says so.  Returns 0 or -ENOMEM. */
int fmt_event(struct fmt *fm, const kt_event *ev, uint64_t ns);

/*
 * fmt_pass - every event of @r, unpaced, through tools/pipeline/pipe.h.  Returns
 * as pipe_run(), and -EIO when a Chrome output could not be written (the
 * pass stops; a text pass goes on, and the stream's error says it).
 */
int fmt_pass(kt_reader *r, struct fmt *fm);

/* fmt_drops_end - the job's drop records not printed yet (after the last
 * event).  Returns 0 or -ENOMEM. */
int fmt_drops_end(struct fmt *fm);

/* fmt_flush - write out what the buffer holds.  Returns 0, or -EIO when a
 * write to the stream has failed (fmt_write_errno() says why). */
int fmt_flush(struct fmt *fm);

/* fmt_free - flush and release; NULL is a no-op. */
void fmt_free(struct fmt *fm);

/* fmt_write_errno - the errno of the first write that failed, or 0. */
int fmt_write_errno(void);

/* What tools/export/chrome.c changes in a Chrome object it writes. */
struct chrome_extra {
	const char *args; /* JSON members added to its args ("" for none) */
	int complete;     /* a zone begin as a complete ("X") event ... */
	uint64_t dur_ns;  /* ... lasting this long */
};

/*
 * fmt_chrome_put - @ev as the next Chrome object (a FMT_CHROME job's), as
 * @x says when not NULL (only for a zone begin or end or an instant).
 * Returns 0, -ENOMEM, or -EIO when a write to the stream failed.
 */
int fmt_chrome_put(struct fmt *fm, const kt_event *ev, uint64_t ns, const struct chrome_extra *x);

/* fmt_chrome_raw - @n bytes of JSON written as they are, in order with
 * the objects.  Returns as fmt_chrome_put(). */
int fmt_chrome_raw(struct fmt *fm, const char *s, size_t n);

#endif
