/*
 * idmap.h - a hash map from 64-bit keys (ids from a file, or pairs of
 * them) to 32-bit values, for passes that look an id up per event.
 *
 * Room follows the keys present, never their values.  The hash is keyed by
 * a random seed drawn per map, so a file cannot choose ids that collide:
 * expected O(1) per operation whatever the ids.  Open addressing, load at
 * most 1/2, doubling.
 *
 * Not shared: one thread per map.
 */
#ifndef KT_TOOLS_IDMAP_H
#define KT_TOOLS_IDMAP_H

#include <stddef.h>
#include <stdint.h>

struct idmap {
	uint64_t *keys;
	uint32_t *vals;
	uint8_t *used;
	size_t cap, len;   /* cap is 0 or a power of two */
	uint64_t mul, add; /* the seed: mul is odd */
};

/* idmap_init - an empty map with a fresh seed. */
void idmap_init(struct idmap *m);

/*
 * idmap_slot - the value of @key, inserted as @fresh when absent (*@added
 * then set to 1, else 0).  Returns a pointer valid until the next insert,
 * or NULL when out of memory.
 */
uint32_t *idmap_slot(struct idmap *m, uint64_t key, uint32_t fresh, int *added);

/* idmap_find - the value of @key, or NULL when absent. */
uint32_t *idmap_find(const struct idmap *m, uint64_t key);

void idmap_free(struct idmap *m);

#endif
