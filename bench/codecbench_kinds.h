/* codecbench measure --kinds (codecbench_kinds.c). */
#ifndef KATRA_BENCH_CODECBENCH_KINDS_H
#define KATRA_BENCH_CODECBENCH_KINDS_H

#include <stddef.h>
#include <stdint.h>

#define CB_TYPES 20

struct cb_kind {
	uint64_t count, t, kmiss, kmiss2, v; /* kmiss2: missing both of two successors */
};

struct cb_kinds {
	uint64_t stream[5], head;
	struct cb_kind kind[CB_TYPES];
};

/* Add one chunk: its records @ev (@raw_len bytes) and their compact
 * encoding without LZ4, @enc (@n bytes). */
void cb_kinds_chunk(struct cb_kinds *a, const uint8_t *ev, size_t raw_len, const uint8_t *enc,
		    long n);

void cb_kinds_print(const struct cb_kinds *a, uint64_t events);

#endif
