/*
 * codecbench's alternatives to the compact codec, measured beside it for
 * their size (bench/RESULTS.md, issue #14): fields without prediction
 * through LZ4, and T in nibbles against each key's last delta.
 */
#include <stdint.h>
#include <string.h>

#include <lz4.h>

#include "bench/codecbench.h"

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* A per-chunk map from a record's key to a small index, for the
 * alternatives; indexes past 4095 all share one. */
struct keymap {
	uint64_t key[8192];
	uint16_t idx[8192];
	uint32_t n;
};

static unsigned keymap_get(struct keymap *m, uint64_t key)
{
	uint32_t h = (uint32_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 51);
	for (;; h = (h + 1) & 8191) {
		if (m->key[h] == key)
			return m->idx[h];
		if (m->key[h] == UINT64_MAX) {
			if (m->n >= 4096)
				return 4095;
			m->key[h] = key;
			m->idx[h] = (uint16_t)m->n;
			return m->n++;
		}
	}
}

static struct keymap alt_map;

static void keymap_reset(struct keymap *m)
{
	memset(m->key, 0xff, sizeof(m->key));
	m->n = 0;
}

/*
 * Streams without prediction, each through LZ4: T as varints, one key
 * index per record (a byte, or 0xff and two more), the 8-byte values
 * whole, and each variable payload's length (varint) and bytes.
 */
long alt_fields_lz4(struct ctx *c, const uint8_t *ev, size_t raw_len, uint8_t *out, size_t cap)
{
	size_t n = raw_len / 16 + 1;
	uint8_t *base[4] = { c->tmp, c->tmp + 10 * n, c->tmp + 13 * n, c->tmp + 21 * n };
	uint8_t *s[4] = { base[0], base[1], base[2], base[3] };
	uint64_t prev = 0;

	keymap_reset(&alt_map);
	for (size_t at = 0; at < raw_len;) {
		const uint8_t *r = ev + at;
		uint64_t ts = kt__get64(r), meta = kt__get64(r + 8);
		uint16_t plen = (uint16_t)(meta >> 48);
		s[0] = put_varint(s[0], ts - prev);
		prev = ts;
		unsigned k = keymap_get(&alt_map, meta & UINT64_C(0xffffffffffff));
		if (k < 255) {
			*s[1]++ = (uint8_t)k;
		} else {
			*s[1]++ = 0xff;
			*s[1]++ = (uint8_t)k;
			*s[1]++ = (uint8_t)(k >> 8);
		}
		if (r[12] >= KT_EV_MESSAGE) {
			s[3] = put_varint(s[3], plen);
			memcpy(s[3], r + 16, plen);
			s[3] += plen;
		} else if (plen) {
			memcpy(s[2], r + 16, 8);
			s[2] += 8;
		}
		at += KT__EVENT_HEAD + kt__align8(plen);
	}
	long total = 0;
	for (int i = 0; i < 4; i++) {
		int z = LZ4_compress_fast((const char *)base[i], (char *)out + total,
					  (int)(s[i] - base[i]), (int)(cap - (size_t)total), 1);
		if (z <= 0 && s[i] > base[i])
			return -1;
		total += z + 4; /* each stream's length */
	}
	return total;
}

/*
 * The compact codec with T packed in nibbles: each delta minus the delta
 * that last preceded a record of the same key, zigzagged, in 4 bits where
 * it is under 15, else 15 and a varint.  Only its size is computed (the
 * compact size with T's bytes swapped): the cost column is not its own.
 */
long alt_nibble_ts(struct ctx *c, const uint8_t *ev, size_t raw_len, uint8_t *out, size_t cap)
{
	static uint64_t lastd[4096];
	long n = kt__compact_encode(c->enc0, ev, raw_len, out, cap);
	uint64_t prev = 0;
	size_t tbytes = 0, nib = 0, esc = 0;
	if (n < 0)
		return n;
	keymap_reset(&alt_map);
	memset(lastd, 0, sizeof(lastd));
	for (size_t at = 0; at < raw_len;) {
		const uint8_t *r = ev + at;
		uint64_t ts = kt__get64(r), d = ts - prev;
		unsigned k = keymap_get(&alt_map, kt__get64(r + 8) & UINT64_C(0xffffffffffff));
		uint64_t res = d - lastd[k], z = (res << 1) ^ (uint64_t)-(int64_t)(res >> 63);
		tbytes += varint_len(d);
		nib++;
		if (z >= 15)
			esc += varint_len(z);
		lastd[k] = d;
		prev = ts;
		at += KT__EVENT_HEAD + kt__align8(kt__get16(r + 14));
	}
	return n - (long)tbytes + (long)((nib + 1) / 2 + esc);
}
