/*
 * Call sites and categories (katra/zone.h).
 *
 * A site is interned as a key in the names table (ring/names.c): its
 * name, file and function, each NUL-terminated, then its line and its
 * category's name id as two u32.  Equal sites get one id; a plain name
 * never holds a zero byte, so it never meets a key.
 *
 * Categories are a fixed array of flag bytes: sites cache a pointer into
 * it, so it never moves, and a process names at most KT_MAX_CATEGORIES.
 * A backing that keeps categories (crash files) is told of each state as
 * it changes, under the lock, so what it keeps is the last state set.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ring/private.h"

const uint8_t kt__flag_on = 1;

static pthread_mutex_t cat_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t cat_flags[KT_MAX_CATEGORIES];
static uint8_t cat_start[KT_MAX_CATEGORIES]; /* state at the session's start */
static uint32_t cat_ids[KT_MAX_CATEGORIES];  /* name ids, to find and to write */
static uint32_t cat_count;
typedef void (*cat_log_fn)(void *ctx, uint32_t index, uint32_t id, uint32_t flags);
static struct kt__log cat_log;

/* Under cat_lock: category @i's KT_CATEGORY_ON_* flags now.  Stale is
 * enough: every store to a flag is made under cat_lock too. */
static uint32_t cat_state(uint32_t i)
{
	return (cat_start[i] ? KT_CATEGORY_ON_START : 0) |
	       (kt__load_stale(&cat_flags[i]) ? KT_CATEGORY_ON_STOP : 0);
}

/* Under cat_lock: tell the log of category @i. */
static void log_cat(uint32_t i)
{
	if (cat_log.fn)
		((cat_log_fn)cat_log.fn)(cat_log.ctx, i, cat_ids[i], cat_state(i));
}

/* Whether KT_CATEGORIES lists @name (1 "name", -1 "-name", 0 not), and in
 * *@any_on whether it names any category to enable. */
static int env_says(const char *name, int *any_on)
{
	const char *env = getenv("KT_CATEGORIES");
	size_t n = strlen(name);
	int says = 0;
	*any_on = 0;
	while (env && *env) {
		const char *end = strchr(env, ',');
		size_t len = end ? (size_t)(end - env) : strlen(env);
		int neg = len && *env == '-';
		*any_on |= !neg && len;
		if (len - neg == n && !memcmp(env + neg, name, n))
			says = neg ? -1 : 1;
		env = end ? end + 1 : NULL;
	}
	return says;
}

static uint8_t env_default(const char *name)
{
	int any_on, says = env_says(name, &any_on);
	return says ? says > 0 : !any_on;
}

/* Under cat_lock: the slot of @name (interned as @id), registered if new;
 * -1 when the table is full. */
static long cat_slot(const char *name, uint32_t id)
{
	for (uint32_t i = 0; i < cat_count; i++)
		if (cat_ids[i] == id)
			return i;
	if (cat_count == KT_MAX_CATEGORIES)
		return -1;
	cat_ids[cat_count] = id;
	/* Relaxed: sites read the flag relaxed; it only needs to be whole. */
	kt__store_relaxed(&cat_flags[cat_count], env_default(name));
	cat_start[cat_count] = cat_flags[cat_count];
	log_cat(cat_count);
	return cat_count++;
}

static long cat_find(const char *name)
{
	uint32_t id = kt_name(name);
	if (!id)
		return -EINVAL;
	int cancel = kt__lock_nocancel(&cat_lock);
	long i = cat_slot(name, id);
	kt__unlock_nocancel(&cat_lock, cancel);
	return i < 0 ? -ENOSPC : i;
}

const uint8_t *kt_category(const char *name)
{
	long i = cat_find(name);
	return i < 0 ? &kt__flag_on : &cat_flags[i];
}

int kt_category_enable(const char *name, int on)
{
	long i = cat_find(name);
	if (i < 0)
		return (int)i;
	/* Under the lock with its log, so the state logged last is the one
	 * set last.  Relaxed: sites read the flag relaxed; the lock orders
	 * only the log. */
	int cancel = kt__lock_nocancel(&cat_lock);
	kt__store_relaxed(&cat_flags[i], (uint8_t)(on != 0));
	log_cat((uint32_t)i);
	kt__unlock_nocancel(&cat_lock, cancel);
	return 0;
}

int kt_category_get_enabled(const char *name)
{
	long i = cat_find(name);
	if (i == -EINVAL)
		return -EINVAL;
	return i < 0 ? 1 : kt__load_stale(&cat_flags[i]);
}

void kt__categories_start(void)
{
	int cancel = kt__lock_nocancel(&cat_lock);
	for (uint32_t i = 0; i < cat_count; i++) {
		cat_start[i] = kt__load_stale(&cat_flags[i]);
		log_cat(i);
	}
	kt__unlock_nocancel(&cat_lock, cancel);
}

void kt__categories_set_log(void (*fn)(void *ctx, uint32_t index, uint32_t id, uint32_t flags),
			    void *ctx)
{
	kt__log_set(&cat_lock, &cat_log, (void (*)(void))fn, ctx, &cat_count, log_cat);
}

void kt__categories_fork(int phase)
{
	kt__fork_lock(&cat_lock, phase);
}

void kt__categories_each(void (*fn)(void *ctx, uint32_t id, uint32_t flags), void *ctx)
{
	pthread_mutex_lock(&cat_lock);
	for (uint32_t i = 0; i < cat_count; i++)
		fn(ctx, cat_ids[i], cat_state(i));
	pthread_mutex_unlock(&cat_lock);
}

/* The key of @s into @buf (at least @cap bytes); its length, 0 when a
 * string is out of range or it does not fit. */
static size_t site_key(const kt_site *s, uint32_t cat, char *buf, size_t cap)
{
	const char *file = s->file ? s->file : "", *fn = s->function ? s->function : "";
	size_t n = s->name ? strlen(s->name) : 0, f = strlen(file), g = strlen(fn);
	if (!n || n > KT_MAX_STRING || f > KT_MAX_STRING || g > KT_MAX_STRING ||
	    n + f + g + 11 > cap)
		return 0;
	char *d = buf;
	memcpy(d, s->name, n + 1);
	d += n + 1;
	memcpy(d, file, f + 1);
	d += f + 1;
	memcpy(d, fn, g + 1);
	d += g + 1;
	memcpy(d, &s->line, 4);
	memcpy(d + 4, &cat, 4);
	return (size_t)(d + 8 - buf);
}

uint32_t kt_site_id(kt_site *s)
{
	uint32_t cat = 0;
	const uint8_t *flag = &kt__flag_on;
	if (s->category && *s->category) {
		cat = kt_name(s->category);
		flag = kt_category(s->category);
	}
	/* Three strings of at most 65535 bytes each, two u32 and NULs: on
	 * the heap, not on a stack that may be a small one. */
	size_t cap = 3 * (KT_MAX_STRING + 1) + 8;
	char *key = malloc(cap);
	if (!key)
		return 0;
	size_t len = site_key(s, cat, key, cap);
	uint32_t id = len ? kt__intern(key, len) : 0;
	free(key);
	if (!id)
		return 0;
	/* Relaxed: the flag pointer first, then the id.  A thread that sees
	 * the id but an older pointer reads kt__flag_on and records the site
	 * once while its category is off; nothing worse. */
	kt__store_relaxed(&s->enabled, flag);
	kt__store_relaxed(&s->id, id);
	return id;
}
