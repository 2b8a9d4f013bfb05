/*
 * pipe.c - the two-thread pipeline of unpaced passes; pipe.h says how.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tools/pipeline/pipe.h"
#include "tools/pipeline/progress.h"

struct pipe_ev {
	uint64_t ns;           /* with merge_ns: its time, converted */
	kt_event ev;           /* payload fixed up on use: */
	union {
		size_t off;    /* where in the arena, or */
		uint8_t in[8]; /* the payload itself, up to 8 bytes (most are) */
	} payload;
};

struct pipe_batch {
	struct pipe_ev ev[PIPE_EVENTS];
	size_t n;
	uint64_t first;        /* the pass's index of ev[0] */
	uint8_t *arena;
	size_t arena_len, arena_cap;
	struct pipe_text text; /* ev[0, ahead) formatted by the merging thread */
	size_t ahead;
	int claimed;           /* the merging thread is formatting it */
	int tried;             /* formatted ahead already, maybe none of it (the
				* client refused its first event) */
};

struct pipe {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct pipe_batch slots[PIPE_SLOTS];
	size_t head, tail;     /* filled batches are [tail, head) */
	int done, rc, cancel;
	int full;              /* the merging thread waits for PIPE_RESUME free slots */
	kt_reader *r;
	struct pipe_batch *fill;
	uint64_t count;        /* events collected */
	uint64_t total;        /* events the index pass saw, for the bar */
	const struct pipe_client *c;
	void *ctx;
	void *ahead;           /* the merging thread's formatting state, or NULL */
};

static inline kt_event batch_event(const struct pipe_batch *b, size_t i)
{
	kt_event ev = b->ev[i].ev;
	if (ev.payload_len)
		ev.payload = ev.payload_len <= 8 ? b->ev[i].payload.in
						 : b->arena + b->ev[i].payload.off;
	return ev;
}

/* On the merging thread, lock not held: text for @b, up to the budget. */
static void pipe_format_ahead(struct pipe *p, struct pipe_batch *b)
{
	size_t i;
	for (i = 0; i < b->n && b->text.len < PIPE_AHEAD_BUDGET; i++) {
		kt_event ev = batch_event(b, i);
		if (p->c->ahead(p->ctx, p->ahead, &b->text, &ev, kt_reader_get_time_ns(p->r, ev.ts),
				b->first + i))
			break;
	}
	b->ahead = i;
	b->tried = 1;
}

/* With the lock held: the newest filled batch not formatted yet, past the
 * one the writing thread is on (the oldest, at tail). */
static struct pipe_batch *pipe_unclaimed(struct pipe *p)
{
	for (size_t k = p->head; k-- > p->tail + 1;) {
		struct pipe_batch *b = &p->slots[k % PIPE_SLOTS];
		if (!b->claimed && !b->tried)
			return b;
	}
	return NULL;
}

/* Copy @ev's payload into @b's arena; 0 or -ENOMEM. */
static int arena_copy(struct pipe_batch *b, struct pipe_ev *e, const kt_event *ev)
{
	if (b->arena_len + ev->payload_len > b->arena_cap) {
		/* Bounded: a batch is handed over once it holds PIPE_BYTES. */
		size_t n = b->arena_cap ? b->arena_cap * 2 : 1 << 16;
		while (n < b->arena_len + ev->payload_len)
			n *= 2;
		void *q = realloc(b->arena, n);
		if (!q)
			return -ENOMEM;
		b->arena = q;
		b->arena_cap = n;
	}
	e->payload.off = b->arena_len;
	memcpy(b->arena + b->arena_len, ev->payload, ev->payload_len);
	b->arena_len += ev->payload_len;
	return 0;
}

/* Hand the filled batch over; while no slot is empty, format ahead.
 * Returns 1 when the writer cancelled the pass. */
static int pipe_hand_over(struct pipe *p)
{
	pthread_mutex_lock(&p->lock);
	if (!p->total) {
		kt_reader_status st;
		kt_reader_get_status(p->r, &st);
		p->total = st.events;
	}
	p->count += p->fill->n;
	p->head++;
	pthread_cond_broadcast(&p->cond);
	p->full = p->head - p->tail == PIPE_SLOTS;
	while (p->full && !p->cancel) {
		struct pipe_batch *a = p->ahead ? pipe_unclaimed(p) : NULL;
		if (!a) {
			pthread_cond_wait(&p->cond, &p->lock);
			p->full = PIPE_SLOTS - (p->head - p->tail) < PIPE_RESUME;
			continue;
		}
		a->claimed = 1;
		pthread_mutex_unlock(&p->lock);
		pipe_format_ahead(p, a);
		pthread_mutex_lock(&p->lock);
		a->claimed = 0;
		pthread_cond_broadcast(&p->cond);
		p->full = p->head - p->tail == PIPE_SLOTS;
	}
	p->full = 0;
	int cancel = p->cancel;
	p->fill = &p->slots[p->head % PIPE_SLOTS];
	p->fill->first = p->count;
	pthread_mutex_unlock(&p->lock);
	p->fill->n = 0;
	p->fill->arena_len = 0;
	return cancel;
}

static int pipe_collect(struct pipe *p, const kt_event *ev)
{
	struct pipe_batch *b = p->fill;
	struct pipe_ev *e = &b->ev[b->n];
	/* The time is converted by whichever thread uses the event (the
	 * merging thread has the longer share of the work), unless the client
	 * says its own is the longer. */
	if (p->c->merge_ns)
		e->ns = kt_reader_get_time_ns(p->r, ev->ts);
	e->ev = *ev;
	e->ev.payload = NULL;
	if (!p->c->payloads || (p->c->payloads == PIPE_PAYLOADS_FIXED && ev->payload_len > 16))
		e->ev.payload_len = 0;
	else if (!ev->payload_len)
		; /* most events (zones): no call to copy nothing */
	else if (ev->payload_len == 8)
		memcpy(e->payload.in, ev->payload, 8); /* a constant size: no call */
	else if (ev->payload_len < 8)
		memcpy(e->payload.in, ev->payload, ev->payload_len);
	else if (arena_copy(b, e, ev))
		return -ENOMEM;
	if (++b->n < PIPE_EVENTS && b->arena_len < PIPE_BYTES)
		return 0;
	return pipe_hand_over(p);
}

/* The merging side: events in kt_reader_next() order. */
static void *pipe_producer(void *arg)
{
	struct pipe *p = arg;
	kt_event ev;
	int rc;
	while ((rc = kt_reader_next(p->r, &ev)) > 0)
		if ((rc = pipe_collect(p, &ev)) != 0)
			break;
	pthread_mutex_lock(&p->lock);
	if (!p->total) {
		kt_reader_status st;
		kt_reader_get_status(p->r, &st);
		p->total = st.events;
	}
	if (p->fill->n)
		p->head++; /* the last, partly filled batch */
	p->rc = rc;
	p->done = 1;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* On the writing thread: the batch's text formatted ahead, then the rest. */
static int pipe_write(struct pipe *p, struct pipe_batch *b)
{
	int rc = 0;
	if (b->ahead && b->text.len)
		rc = p->c->text(p->ctx, b->text.buf, b->text.len);
	for (size_t i = b->ahead; i < b->n && !rc; i++) {
		/* An event without a payload is handed as the batch holds it
		 * (its payload NULL): no copy to fix up. */
		kt_event fixed;
		const kt_event *ev = &b->ev[i].ev;
		if (ev->payload_len) {
			fixed = batch_event(b, i);
			ev = &fixed;
		}
		uint64_t ns = p->c->merge_ns ? b->ev[i].ns : kt_reader_get_time_ns(p->r, ev->ts);
		rc = p->c->event(p->ctx, ev, ns, b->first + i);
	}
	return rc;
}

/* As pipe_run(), on this thread alone. */
static int pipe_here(kt_reader *r, const struct pipe_client *c, void *ctx)
{
	kt_event ev;
	uint64_t i = 0;
	int rc;
	while ((rc = kt_reader_next(r, &ev)) > 0) {
		if ((rc = c->event(ctx, &ev, kt_reader_get_time_ns(r, ev.ts), i)) != 0)
			return rc;
		progress_events(++i);
	}
	return rc;
}

/* The writing side: batches in order until the producer is done. */
static int pipe_consume(struct pipe *p)
{
	int rc = 0;
	for (;;) {
		pthread_mutex_lock(&p->lock);
		while (p->tail == p->head && !p->done)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->tail == p->head) {
			pthread_mutex_unlock(&p->lock);
			return rc;
		}
		struct pipe_batch *b = &p->slots[p->tail % PIPE_SLOTS];
		while (b->claimed)
			pthread_cond_wait(&p->cond, &p->lock);
		uint64_t total = p->total;
		pthread_mutex_unlock(&p->lock);
		rc = pipe_write(p, b);
		progress(b->first + b->n, total);
		pthread_mutex_lock(&p->lock);
		b->ahead = 0;
		b->tried = 0;
		b->text.len = 0;
		p->tail++;
		if (rc)
			p->cancel = 1;
		/* A merging thread waiting for room is woken once PIPE_RESUME
		 * slots are free, not at each: a wake-up costs about what
		 * collecting a batch does. */
		if (rc || !p->full || PIPE_SLOTS - (p->head - p->tail) >= PIPE_RESUME)
			pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		if (rc)
			return rc;
	}
}

static void pipe_free(struct pipe *p)
{
	for (int i = 0; i < PIPE_SLOTS; i++) {
		free(p->slots[i].arena);
		free(p->slots[i].text.buf);
	}
	if (p->ahead)
		p->c->ahead_end(p->ahead);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}

int pipe_run(kt_reader *r, const struct pipe_client *c, void *ctx)
{
	struct pipe *p = calloc(1, sizeof(*p));
	if (!p)
		return pipe_here(r, c, ctx);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->r = r;
	p->c = c;
	p->ctx = ctx;
	p->fill = &p->slots[0];
	/* No state (or no memory for it): the writer formats everything. */
	p->ahead = c->ahead_begin ? c->ahead_begin(ctx) : NULL;
	pthread_t th;
	if (pthread_create(&th, NULL, pipe_producer, p)) {
		pipe_free(p);
		return pipe_here(r, c, ctx);
	}
	/* The merge state (and with it the calibration) must exist before
	 * both threads touch the reader: the producer creates it on its
	 * first kt_reader_next(), and the writer reads it only after a batch
	 * has been handed over under the lock. */
	int rc = pipe_consume(p);
	pthread_join(th, NULL);
	if (!rc)
		rc = p->rc < 0 ? p->rc : 0;
	pipe_free(p);
	return rc;
}
