/*
 * digits.h - integers as decimal and hex digits into a caller's buffer,
 * two digits per division: the formatters' hot path (tools/fmt.c), where
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

/* Writes at most 20 bytes. */
static inline char *put_u64(char *d, uint64_t v)
{
	char b[20];
	char *e = b + sizeof(b), *p = e;
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
	memcpy(d, p, (size_t)(e - p));
	return d + (e - p);
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

/* Exactly eight digits, zero-padded: @v < 1e8. */
static inline char *put_8digits(char *d, uint32_t v)
{
	uint32_t a = v / 10000, b = v % 10000;
	memcpy(d, pairs + 2 * (a / 100), 2);
	memcpy(d + 2, pairs + 2 * (a % 100), 2);
	memcpy(d + 4, pairs + 2 * (b / 100), 2);
	memcpy(d + 6, pairs + 2 * (b % 100), 2);
	return d + 8;
}

/* A time in ns below 1e8 as microseconds with three decimals (Chrome's
 * unit), then a comma: at most 10 bytes. */
static inline char *put_small_us_comma(char *d, uint64_t ns)
{
	d = put_u64(d, ns / 1000);
	uint32_t f = (uint32_t)(ns % 1000);
	d[0] = '.';
	d[1] = (char)('0' + f / 100);
	d[2] = pairs[2 * (f % 100)];
	d[3] = pairs[2 * (f % 100) + 1];
	d[4] = ',';
	return d + 5;
}

/* The last eight digits of a time in ns as the same: five, a point before
 * the last three, a comma.  Writes 10 bytes. */
static inline char *put_lo_us_comma(char *d, uint32_t lo)
{
	put_8digits(d, lo);
	d[8] = d[7];
	d[7] = d[6];
	d[6] = d[5];
	d[5] = '.';
	d[9] = ',';
	return d + 10;
}

#endif
