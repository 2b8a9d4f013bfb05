/*
 * idmap.c - seeded open-addressing hash map; idmap.h says why.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "tools/pipeline/idmap.h"

void idmap_init(struct idmap *m)
{
	uint64_t seed[2];
	memset(m, 0, sizeof(*m));
	if (getrandom(seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed)) {
		/* No entropy yet (early boot): the clock still keeps the seed
		 * out of a file author's reach. */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed[0] = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15u ^ (uint64_t)getpid();
		seed[1] = (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)m;
	}
	m->mul = seed[0] | 1;
	m->add = seed[1];
}

static size_t slot_of(const struct idmap *m, uint64_t key)
{
	/* Multiply-shift over a seeded key: the high bits mix every key bit. */
	uint64_t h = (key ^ m->add) * m->mul;
	h ^= h >> 29;
	h *= m->mul;
	return (size_t)(h >> 32) & (m->cap - 1);
}

static size_t probe(const struct idmap *m, uint64_t key)
{
	size_t i = slot_of(m, key);
	while (m->used[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static int rehash(struct idmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct idmap n = *m;
	n.cap = cap;
	n.keys = malloc(cap * sizeof(*n.keys));
	n.vals = malloc(cap * sizeof(*n.vals));
	n.used = calloc(cap, 1);
	if (!n.keys || !n.vals || !n.used) {
		free(n.keys);
		free(n.vals);
		free(n.used);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		size_t j = probe(&n, m->keys[i]);
		n.used[j] = 1;
		n.keys[j] = m->keys[i];
		n.vals[j] = m->vals[i];
	}
	idmap_free(m);
	*m = n;
	return 0;
}

uint32_t *idmap_find(const struct idmap *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	size_t i = probe(m, key);
	return m->used[i] ? &m->vals[i] : NULL;
}

uint32_t *idmap_slot(struct idmap *m, uint64_t key, uint32_t fresh, int *added)
{
	uint32_t *v = idmap_find(m, key);
	*added = 0;
	if (v)
		return v;
	if ((m->len + 1) * 2 > m->cap && rehash(m) < 0)
		return NULL;
	size_t i = probe(m, key);
	m->used[i] = 1;
	m->keys[i] = key;
	m->vals[i] = fresh;
	m->len++;
	*added = 1;
	return &m->vals[i];
}

void idmap_free(struct idmap *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	m->keys = NULL;
	m->vals = NULL;
	m->used = NULL;
	m->cap = m->len = 0;
}
