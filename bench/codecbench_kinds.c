/*
 * codecbench measure --kinds: where the compact codec's bytes go, per
 * stream (exact: the sizes its payload head states, with LZ4 off) and per
 * record type (the T varints exactly; the K and V misses by running the
 * codec's predictors over the records again, SPEC §4.1.1, with no
 * dictionary limit: the corpus never reaches 4096 keys in a chunk).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <katra/katra.h>
#include "bench/codecbench.h"
#include "bench/codecbench_kinds.h"

static size_t vlen(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80)
		v >>= 7, n++;
	return n;
}

static uint64_t zz(uint64_t v)
{
	return (v << 1) ^ (uint64_t)-(int64_t)(v >> 63);
}

/* The predictors' state of one key, found by a small open hash. */
struct key {
	uint64_t key, last, step, second;
	int32_t next, next2; /* the predicted successor, and the one before it */
};

#define KEYS 8192u
static struct key keys[KEYS];

static int32_t key_slot(uint64_t k)
{
	uint32_t h = (uint32_t)((k * 0x9E3779B97F4A7C15u) >> 51);
	for (;; h = (h + 1) & (KEYS - 1)) {
		if (keys[h].key == k)
			return (int32_t)h;
		if (keys[h].key == UINT64_MAX) {
			keys[h] = (struct key){ .key = k, .next = (int32_t)h, .next2 = -1 };
			return (int32_t)h;
		}
	}
}

/* A value's literal bytes under its key's prediction: 0 for a hit. */
static size_t value_cost(struct key *s, uint8_t type, uint64_t v)
{
	size_t c = 0;
	if (type == KT_EV_COUNTER_F64 || type == KT_EV_ARG_F64) {
		uint64_t x = v ^ s->last;
		c = x ? 2 + 8 - (size_t)(__builtin_clzll(x) / 8) - (size_t)(__builtin_ctzll(x) / 8) : 0;
	} else if (v != s->last + s->step) {
		c = 1 + vlen(zz(v - s->last - s->step));
	}
	s->step = v - s->last;
	s->last = v;
	return c;
}

void cb_kinds_chunk(struct cb_kinds *a, const uint8_t *ev, size_t raw_len, const uint8_t *enc,
		    long n)
{
	/* The head: flags, then the stored lengths of T, K, V and L. */
	const uint8_t *p = enc + 1;
	size_t head = 1, sum = 0;
	for (int i = 0; i < 4; i++) {
		uint64_t v = 0;
		for (int sh = 0;; sh += 7) {
			v |= (uint64_t)(*p & 0x7f) << sh;
			head++;
			if (!(*p++ & 0x80))
				break;
		}
		a->stream[i] += v;
		sum += v;
	}
	a->stream[4] += (uint64_t)n - head - sum;
	a->head += head;
	memset(keys, 0xff, sizeof(keys));
	int32_t ctx = -1;
	uint64_t prev = 0;
	for (size_t at = 0; at < raw_len;) {
		const uint8_t *r = ev + at;
		uint64_t ts = kt__get64(r), meta = kt__get64(r + 8);
		uint8_t type = r[12];
		uint16_t plen = (uint16_t)(meta >> 48);
		struct cb_kind *k = &a->kind[type < CB_TYPES ? type : 0];
		k->count++;
		k->t += vlen(ts - prev);
		prev = ts;
		int32_t s = key_slot(meta & UINT64_C(0xffffffffffff));
		if (ctx < 0 || keys[ctx].next != s) {
			k->kmiss++;
			/* What a second successor per key would have caught. */
			k->kmiss2 += ctx < 0 || keys[ctx].next2 != s;
			if (ctx >= 0) {
				keys[ctx].next2 = keys[ctx].next;
				keys[ctx].next = s;
			}
		}
		ctx = s;
		if (plen == 8 && type != KT_EV_MESSAGE && type != KT_EV_USER &&
		    type != KT_EV_ARG_STR) {
			k->v += value_cost(&keys[s], type, kt__get64(r + 16));
		} else if (plen == 16) {
			k->v += value_cost(&keys[s], type, kt__get64(r + 16));
			uint64_t second = kt__get64(r + 24);
			if (second != keys[s].second)
				k->v += 1 + vlen(zz(second - keys[s].second));
			keys[s].second = second;
		} else if (plen) {
			k->v += plen;
		}
		at += KT__EVENT_HEAD + kt__align8(plen);
	}
}

void cb_kinds_print(const struct cb_kinds *a, uint64_t events)
{
	static const char *const st[5] = { "T", "K", "V", "L", "P" };
	double ev = (double)events;
	printf("  compact-nolz4 streams, bytes/event:");
	for (int i = 0; i < 5; i++)
		printf(" %s %.3f", st[i], (double)a->stream[i] / ev);
	printf(" head %.4f\n", (double)a->head / ev);
	printf("  %-18s %7s %9s %9s %9s %9s %9s\n", "record type", "share", "T B/rec", "K miss",
	       "K miss2", "V B/rec", "T+V B/ev");
	for (int t = 0; t < CB_TYPES; t++) {
		const struct cb_kind *k = &a->kind[t];
		if (!k->count)
			continue;
		double c = (double)k->count;
		printf("  %-18s %6.1f%% %9.3f %8.1f%% %8.1f%% %9.3f %9.3f\n",
		       kt_event_type_name((uint8_t)t), 100 * c / ev, (double)k->t / c,
		       100 * (double)k->kmiss / c, 100 * (double)k->kmiss2 / c, (double)k->v / c,
		       (double)(k->t + k->v) / ev);
	}
}
