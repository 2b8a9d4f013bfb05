/*
 * Tables keyed by a uint32_t id.
 *
 * Ids read from a file come in any order an attacker likes, so the tables
 * the readers keep per thread and per name are hash tables: kt__idmap (an
 * element per id, appended, with a hash index beside it) and kt__idset_add
 * (a set of ids).  Both cost O(1) expected per id whatever the order, and
 * their hash is keyed with a secret drawn once per process, so a file
 * cannot be crafted to make ids collide.  Nothing they return depends on
 * the secret: elements keep their insertion order, or key order after
 * kt__idmap_sort().
 *
 * kt__idtab_get, the sorted array, stays for tables whose ids do not come
 * from a file in an adversary's order; each insertion moves the elements
 * after it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <katra/atomic.h>

#include "format/format.h"

_Thread_local uint64_t kt__idtab_work;
_Thread_local uint64_t kt__alloc_count, kt__alloc_fail_at;

/* ---- the sorted array ------------------------------------------------- */

void *kt__idtab_get(void **arr, size_t *len, size_t *cap, size_t size, uint32_t key,
		    size_t max)
{
	uint8_t *base = *arr;
	size_t lo = 0, hi = *len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint32_t k;
		memcpy(&k, base + mid * size, sizeof(k));
		kt__idtab_work++;
		if (k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < *len) {
		uint32_t k;
		memcpy(&k, base + lo * size, sizeof(k));
		if (k == key)
			return base + lo * size;
	}
	if (*len >= max)
		return NULL;
	if (*len == *cap) {
		size_t n = *cap ? *cap * 2 : 16;
		void *p = realloc(base, n * size);
		if (!p)
			return NULL;
		*arr = base = p;
		*cap = n;
	}
	memmove(base + (lo + 1) * size, base + lo * size, (*len - lo) * size);
	kt__idtab_work += *len - lo;
	memset(base + lo * size, 0, size);
	memcpy(base + lo * size, &key, sizeof(key));
	(*len)++;
	return base + lo * size;
}

int kt__grow(void **arr, size_t *cap, size_t len, size_t size, size_t first)
{
	if (len < *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : first;
	void *p = kt__realloc(*arr, n * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

/* ---- the keyed hash ---------------------------------------------------- */

static uint64_t secret;

/* The process's secret, drawn on first use.  Two threads may both draw
 * one; the compare-exchange keeps the first, and relaxed order is enough:
 * the value alone matters, it publishes nothing else. */
static uint64_t get_secret(void)
{
	uint64_t s = kt__load_stale(&secret);
	if (s)
		return s;
	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s)) {
		/* No entropy yet (early boot): weaker, but never blocks. */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		s = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15u ^ (uint64_t)ts.tv_sec ^
		    (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)&s;
	}
	s |= 1; /* 0 means "not drawn yet" */
	uint64_t expected = 0;
	if (!kt__cas_relaxed(&secret, &expected, s))
		s = expected;
	return s;
}

/* A bijective 64-bit mix of the id and the secret: every output bit
 * depends on every input bit, so probing may use the low bits. */
static size_t hash(uint32_t key, uint64_t seed)
{
	uint64_t x = (uint64_t)key ^ seed;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdu;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53u;
	x ^= x >> 33;
	return (size_t)x;
}

/* ---- kt__idmap ---------------------------------------------------------- */

/* A slot holds the key in its high half and the element's index + 1 in
 * its low half; 0 is empty. */
static uint32_t slot_key(uint64_t s)
{
	return (uint32_t)(s >> 32);
}

static size_t slot_index(uint64_t s)
{
	return (size_t)(uint32_t)s - 1;
}

static uint64_t *map_find_slot(const struct kt__idmap *m, uint32_t key)
{
	size_t i = hash(key, m->seed) & m->mask;
	for (;; i = (i + 1) & m->mask) {
		kt__idtab_work++;
		uint64_t *s = &m->slots[i];
		if (!*s || slot_key(*s) == key)
			return s;
	}
}

/* Rebuild the index over @nslots slots (a power of two, at least twice
 * the elements). */
static int map_reindex(struct kt__idmap *m, size_t nslots)
{
	uint64_t *slots = kt__calloc(nslots, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	free(m->slots);
	m->slots = slots;
	m->mask = nslots - 1;
	if (!m->seed)
		m->seed = get_secret();
	for (size_t i = 0; i < m->len; i++) {
		uint32_t key;
		memcpy(&key, m->items + i * m->size, sizeof(key));
		*map_find_slot(m, key) = (uint64_t)key << 32 | (uint64_t)(i + 1);
	}
	return 0;
}

void kt__idmap_init(struct kt__idmap *m, size_t size)
{
	memset(m, 0, sizeof(*m));
	m->size = size;
}

void *kt__idmap_find(const struct kt__idmap *m, uint32_t key)
{
	if (!m->slots)
		return NULL;
	uint64_t s = *map_find_slot(m, key);
	return s ? m->items + slot_index(s) * m->size : NULL;
}

int kt__idmap_get(struct kt__idmap *m, uint32_t key, size_t max, void **out)
{
	*out = NULL;
	if (m->slots) {
		uint64_t s = *map_find_slot(m, key);
		if (s) {
			*out = m->items + slot_index(s) * m->size;
			return 0;
		}
	}
	if (m->len >= max || m->len >= UINT32_MAX - 1)
		return KT_ETOOBIG;
	if (kt__grow((void **)&m->items, &m->cap, m->len, m->size, 16))
		return -ENOMEM;
	/* At most half full, so a probe meets an empty slot soon. */
	if ((m->len + 1) * 2 > (m->slots ? m->mask + 1 : 0) &&
	    map_reindex(m, m->slots ? (m->mask + 1) * 2 : 32))
		return -ENOMEM;
	uint8_t *e = m->items + m->len * m->size;
	memset(e, 0, m->size);
	memcpy(e, &key, sizeof(key));
	*map_find_slot(m, key) = (uint64_t)key << 32 | (uint64_t)(m->len + 1);
	m->len++;
	*out = e;
	return 1;
}

static int key_cmp(const void *a, const void *b)
{
	uint32_t x, y;
	memcpy(&x, a, sizeof(x));
	memcpy(&y, b, sizeof(y));
	return (x > y) - (x < y);
}

void kt__idmap_sort(struct kt__idmap *m)
{
	if (m->len < 2)
		return;
	qsort(m->items, m->len, m->size, key_cmp);
	kt__idtab_work += m->len;
	/* Same keys, new places: rewrite each slot's index in place. */
	memset(m->slots, 0, (m->mask + 1) * sizeof(*m->slots));
	for (size_t i = 0; i < m->len; i++) {
		uint32_t key;
		memcpy(&key, m->items + i * m->size, sizeof(key));
		*map_find_slot(m, key) = (uint64_t)key << 32 | (uint64_t)(i + 1);
	}
}

void kt__idmap_clear(struct kt__idmap *m)
{
	if (m->slots)
		memset(m->slots, 0, (m->mask + 1) * sizeof(*m->slots));
	m->len = 0;
}

size_t kt__idmap_bytes(const struct kt__idmap *m)
{
	return m->cap * m->size + (m->slots ? (m->mask + 1) * sizeof(*m->slots) : 0);
}

void kt__idmap_free(struct kt__idmap *m)
{
	free(m->items);
	free(m->slots);
	kt__idmap_init(m, m->size);
}

/* ---- kt__idset_add ------------------------------------------------------ */

/*
 * The set is *cap slots (a power of two, 0 = empty) plus one more that
 * says whether id 0, which no slot can hold, is in the set.
 */
static int set_grow(uint32_t **set, size_t *cap, uint64_t seed)
{
	size_t n = *cap ? *cap * 2 : 32;
	uint32_t *s = kt__calloc(n + 1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < *cap; i++) {
		uint32_t id = (*set)[i];
		if (!id)
			continue;
		size_t j = hash(id, seed) & (n - 1);
		while (s[j]) {
			kt__idtab_work++;
			j = (j + 1) & (n - 1);
		}
		s[j] = id;
	}
	if (*cap)
		s[n] = (*set)[*cap];
	free(*set);
	*set = s;
	*cap = n;
	return 0;
}

int kt__idset_add(uint32_t **set, size_t *len, size_t *cap, uint32_t id)
{
	uint64_t seed = get_secret();
	if ((*len + 1) * 2 > *cap && set_grow(set, cap, seed))
		return -ENOMEM;
	uint32_t *s = *set;
	if (!id) {
		if (s[*cap])
			return 0;
		s[*cap] = 1;
		(*len)++;
		return 1;
	}
	for (size_t j = hash(id, seed) & (*cap - 1);; j = (j + 1) & (*cap - 1)) {
		kt__idtab_work++;
		if (s[j] == id)
			return 0;
		if (!s[j]) {
			s[j] = id;
			(*len)++;
			return 1;
		}
	}
}

int kt__idset_has(const uint32_t *set, size_t cap, uint32_t id)
{
	if (!cap)
		return 0;
	if (!id)
		return set[cap] != 0;
	for (size_t j = hash(id, get_secret()) & (cap - 1);; j = (j + 1) & (cap - 1)) {
		kt__idtab_work++;
		if (set[j] == id)
			return 1;
		if (!set[j])
			return 0;
	}
}
