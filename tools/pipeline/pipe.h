/*
 * pipe.h - a two-thread pipeline for unpaced passes over every event of a
 * trace (dump, replay --max, export, stats).
 *
 * One thread merges and decodes events (kt_reader_next()) into batches;
 * the caller's thread hands them, in order, to the client.  A batch holds
 * copies of its events (and, if the client wants them, their payloads), so
 * the reader's buffers may move on while a batch is used.  A batch is
 * handed over at PIPE_EVENTS events or PIPE_BYTES bytes of payload,
 * whichever comes first, and at most PIPE_SLOTS batches exist: the pass
 * holds a fixed amount of memory whatever the trace.
 *
 * A client that formats text may also format ahead: when every slot is
 * full (the writing thread is behind), the merging thread, rather than
 * wait, formats the newest batch the writer has not reached into that
 * batch's own text buffer (up to PIPE_AHEAD_BUDGET bytes), and the writer
 * then writes that text instead of formatting those events.  So both cores
 * format when formatting is the slower half.  The order, and so the
 * output, is exactly kt_replay()'s.
 */
#ifndef KT_TOOLS_PIPE_H
#define KT_TOOLS_PIPE_H

#include <stddef.h>
#include <stdint.h>

#include <katra/reader.h>

#define PIPE_EVENTS 8192
#define PIPE_BYTES (1u << 20)         /* payload bytes copied per batch */
#define PIPE_SLOTS 8
#define PIPE_RESUME 4                 /* free slots that wake a waiting merger */
#define PIPE_AHEAD_BUDGET (1u << 20)  /* text formatted ahead, per batch */
#define PIPE_PAYLOADS_FIXED 2

/* Text formatted ahead for one batch. */
struct pipe_text {
	char *buf;
	size_t len, cap;
};

struct pipe_client {
	/* On the writing thread, each event in order with its time and its
	 * index in the pass; non-zero stops the pass and is its result. */
	int (*event)(void *ctx, const kt_event *ev, uint64_t ns, uint64_t index);
	/* Optional, to format ahead: state for the merging thread (NULL:
	 * none, so no formatting ahead), and its release. */
	void *(*ahead_begin)(void *ctx);
	void (*ahead_end)(void *state);
	/* On the merging thread: append @ev's text to @t; 0, or non-zero
	 * (nothing of the event kept) to stop formatting this batch. */
	int (*ahead)(void *ctx, void *state, struct pipe_text *t, const kt_event *ev,
		     uint64_t ns, uint64_t index);
	/* On the writing thread: text formatted ahead, in its place in the
	 * order; non-zero stops the pass and is its result. */
	int (*text)(void *ctx, const char *s, size_t n);
	int payloads; /* copy payloads; 0: events come with none;
		       * PIPE_PAYLOADS_FIXED: only those of 16 bytes or fewer
		       * (the fixed-size records), the rest come with none */
	int merge_ns; /* convert times on the merging thread: for a client
		       * whose own work is the longer half */
};

/*
 * pipe_run - every event of @r in kt_reader_next() order to @c, as above;
 * on this thread alone when no thread can start.  Draws the progress bar
 * (tools/pipeline/progress.h) as events are done.
 *
 * Return: 0 after the last event; the client's non-zero result; a negative
 * code from the reader after the events before it; -ENOMEM.
 */
int pipe_run(kt_reader *r, const struct pipe_client *c, void *ctx);

#endif
