/*
 * Name interning: a string maps to one id for the life of the process.
 * Ids are dense from 1, so the session writes the table in id order.  The
 * lock is fine: callers intern once and keep the id (KT_ZONE caches it).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "ring/private.h"

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static char **by_id;          /* by_id[id], id in [1, count] */
static size_t *lens;
static uint32_t count, id_cap;
static uint32_t *slots;       /* open addressing: id or 0 */
static size_t slot_cap;       /* power of two */
static kt__name_fn log_fn;    /* a backing that keeps names: told of each */
static void *log_ctx;

static size_t slot_of(const char *s, size_t len)
{
	size_t i = (size_t)XXH3_64bits(s, len) & (slot_cap - 1);
	while (slots[i] && !(lens[slots[i]] == len && !memcmp(by_id[slots[i]], s, len)))
		i = (i + 1) & (slot_cap - 1);
	return i;
}

static int rehash(size_t cap)
{
	uint32_t *old = slots;
	size_t old_cap = slot_cap;
	slots = calloc(cap, sizeof(*slots));
	if (!slots) {
		slots = old;
		return -1;
	}
	slot_cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i])
			slots[slot_of(by_id[old[i]], lens[old[i]])] = old[i];
	free(old);
	return 0;
}

/*
 * Tell @fn of name @id, whose key @k is @len bytes.  A call site's key
 * (ring/site.c) holds its name, file and function, each NUL-terminated,
 * then its line and category id: a plain name never holds a zero byte, so
 * the two never meet in the table.
 */
static void report_key(kt__name_fn fn, void *ctx, uint32_t id, const char *k, size_t len)
{
	size_t n = strlen(k);
	if (n == len) {
		fn(ctx, id, k, n, NULL);
		return;
	}
	kt_srcloc loc;
	loc.id = id;
	loc.file = k + n + 1;
	loc.file_len = (uint32_t)strlen(loc.file);
	loc.function = loc.file + loc.file_len + 1;
	loc.function_len = (uint32_t)strlen(loc.function);
	memcpy(&loc.line, k + len - 8, 4);
	memcpy(&loc.category, k + len - 4, 4);
	fn(ctx, id, k, n, &loc);
}

static void report(kt__name_fn fn, void *ctx, uint32_t id)
{
	report_key(fn, ctx, id, by_id[id], lens[id]);
}

uint32_t kt_name(const char *name)
{
	size_t len = name ? strlen(name) : 0;

	if (len == 0 || len > KT_MAX_STRING)
		return 0;
	return kt__intern(name, len);
}

uint32_t kt__intern(const char *name, size_t len)
{
	uint32_t id = 0;

	/* The crash names log's writev() is a cancellation point: a cancel
	 * acting there would leave names_lock held for ever. */
	int cancel;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	pthread_mutex_lock(&names_lock);
	if ((size_t)(count + 1) * 2 > slot_cap && rehash(slot_cap ? slot_cap * 2 : 256))
		goto out;
	size_t i = slot_of(name, len);
	if (slots[i]) {
		id = slots[i];
		goto out;
	}
	if (count + 1 >= id_cap) {
		uint32_t n = id_cap ? id_cap * 2 : 256;
		char **b = realloc(by_id, n * sizeof(*b));
		if (!b)
			goto out;
		by_id = b;
		size_t *l = realloc(lens, n * sizeof(*l));
		if (!l)
			goto out;
		lens = l;
		id_cap = n;
	}
	char *copy = malloc(len + 1);
	if (!copy)
		goto out;
	memcpy(copy, name, len);
	copy[len] = 0;
	id = ++count;
	by_id[id] = copy;
	lens[id] = len;
	slots[i] = id;
	if (log_fn)
		report(log_fn, log_ctx, id);
out:
	pthread_mutex_unlock(&names_lock);
	pthread_setcancelstate(cancel, NULL);
	return id;
}

/*
 * The flusher's @fn writes (and may flush its buffer) for each name: done
 * under names_lock, a producer meeting its first name would wait on that
 * I/O.  So the keys are copied out a batch at a time and told unlocked;
 * a key is never freed nor moved once interned (only by_id, the array of
 * pointers, is reallocated), so its pointer stays good without the lock.
 */
uint32_t kt__names_after(uint32_t after, kt__name_fn fn, void *ctx)
{
	enum { BATCH = 64 };
	const char *keys[BATCH];
	size_t klen[BATCH];

	for (;;) {
		pthread_mutex_lock(&names_lock);
		uint32_t n = 0;
		while (n < BATCH && after + 1 + n <= count) {
			keys[n] = by_id[after + 1 + n];
			klen[n] = lens[after + 1 + n];
			n++;
		}
		pthread_mutex_unlock(&names_lock);
		if (n == 0)
			return after;
		for (uint32_t i = 0; i < n; i++)
			report_key(fn, ctx, after + 1 + i, keys[i], klen[i]);
		after += n;
	}
}

void kt__names_set_log(kt__name_fn fn, void *ctx)
{
	pthread_mutex_lock(&names_lock);
	for (uint32_t id = 1; fn && id <= count; id++)
		report(fn, ctx, id);
	log_fn = fn;
	log_ctx = ctx;
	pthread_mutex_unlock(&names_lock);
}

void kt__names_fork(int phase)
{
	kt__fork_lock(&names_lock, phase);
}
