/*
 * digits.h - integers as decimal and hex digits into a caller's buffer,
 * two digits per division: the formatters' hot path (tools/pipeline/fmt.c), where
 * printf's format parsing was most of a dump's time.  Pure functions; any
 * thread.
 */
#ifndef KATRA_TOOLS_DIGITS_H
#define KATRA_TOOLS_DIGITS_H

#include <stdint.h>
#include <string.h>

/* Two digits per division: nanosecond stamps have a dozen or more. */
static const char pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* Writes at most 20 bytes: its digits, counted first and written from the
 * last, so there is no copy of a variable length (a call to memcpy). */
static inline char *put_u64(char *d, uint64_t v)
{
	static const uint64_t pow10[20] = {
		1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u, 100000000u,
		1000000000u, 10000000000u, 100000000000u, 1000000000000u, 10000000000000u,
		100000000000000u, 1000000000000000u, 10000000000000000u,
		100000000000000000u, 1000000000000000000u, 10000000000000000000u };
	/* log10 from the bit length (1233/4096 is just over log10(2)): the
	 * count or one less, which the table settles. */
	unsigned t = (unsigned)(64 - __builtin_clzll(v | 1)) * 1233 >> 12;
	char *e = d + t + ((v | 1) >= pow10[t]), *p = e;
	while (v >= 100) {
		unsigned r = (unsigned)(v % 100);
		v /= 100;
		p -= 2;
		memcpy(p, pairs + 2 * r, 2);
	}
	if (v >= 10) {
		p -= 2;
		memcpy(p, pairs + 2 * v, 2);
	} else {
		*--p = (char)('0' + v);
	}
	return e;
}

/* @v as 0x and its hex digits, no leading zeros. */
static inline char *put_hex(char *d, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	int n = v ? (67 - __builtin_clzll(v)) / 4 : 1;
	*d++ = '0';
	*d++ = 'x';
	for (int i = n - 1; i >= 0; i--)
		*d++ = digits[(v >> (4 * i)) & 15];
	return d;
}

static inline char *put_i64(char *d, int64_t v)
{
	if (v < 0) {
		*d++ = '-';
		return put_u64(d, -(uint64_t)v);
	}
	return put_u64(d, (uint64_t)v);
}

/* The eight digits of @v < 1e8, zero-padded, as one word with the first
 * digit in its lowest byte.  Each step splits every lane of the word in
 * two (by 10^4, then 10^2 in each half, then 10), dividing by a multiply
 * with a reciprocal that is exact over the lane's range (checked for
 * every @v): a dozen operations for what takes four table lookups. */
static inline uint64_t digits8_word(uint32_t v)
{
	uint64_t t = (v / 10000) | (uint64_t)(v % 10000) << 32;
	uint64_t q = ((t * 10486) >> 20) & 0x0000007f0000007fu;
	t = q | (t - q * 100) << 16;
	q = ((t * 103) >> 10) & 0x000f000f000f000fu;
	t = q | (t - q * 10) << 8;
	return t | 0x3030303030303030u;
}

/* @x's eight bytes at @d, its lowest first. */
static inline void put_le64(char *d, uint64_t x)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	x = __builtin_bswap64(x);
#endif
	memcpy(d, &x, 8);
}

/* Exactly eight digits, zero-padded: @v < 1e8. */
static inline char *put_8digits(char *d, uint32_t v)
{
	put_le64(d, digits8_word(v));
	return d + 8;
}

/* A time in ns below 1e8 as microseconds with three decimals (Chrome's
 * unit) and a fourth, 3, then a comma: at most 11 bytes.  The 0.3 ns
 * makes a reader that truncates to nanoseconds (Tracy's import-chrome,
 * after a double's rounding below them) and one that rounds (Perfetto's)
 * both read the nanosecond written. */
static inline char *put_small_us_comma(char *d, uint64_t ns)
{
	d = put_u64(d, ns / 1000);
	uint32_t f = (uint32_t)(ns % 1000);
	d[0] = '.';
	d[1] = (char)('0' + f / 100);
	d[2] = pairs[2 * (f % 100)];
	d[3] = pairs[2 * (f % 100) + 1];
	d[4] = '3';
	d[5] = ',';
	return d + 6;
}

/* The last eight digits of a time in ns as the same: five, a point before
 * the last three (put in by shifts), 3, a comma.  Writes 11 bytes. */
static inline char *put_lo_us_comma(char *d, uint32_t lo)
{
	uint64_t x = digits8_word(lo);
	put_le64(d, (x & 0xffffffffffu) | (uint64_t)'.' << 40 | (x >> 40) << 48);
	d[8] = (char)(x >> 56);
	d[9] = '3';
	d[10] = ',';
	return d + 11;
}

#endif
