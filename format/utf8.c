/*
 * utf8.c - well-formed UTF-8 as the Unicode standard defines it (table
 * 3-7): the second byte's range depends on the first, so overlong forms,
 * surrogates and code points past U+10FFFF are all refused in one place.
 */
#include <string.h>

#include "format/utf8.h"

size_t kt__utf8_char(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char b = s[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xBF;    /* the second byte's range */
	uint32_t c;

	if (b < 0x80) {
		len = 1, c = b;
	} else if (b >= 0xC2 && b <= 0xDF) {
		len = 2, c = b & 0x1F;
	} else if (b >= 0xE0 && b <= 0xEF) {
		len = 3, c = b & 0x0F;
		lo = b == 0xE0 ? 0xA0 : 0x80;
		hi = b == 0xED ? 0x9F : 0xBF;
	} else if (b >= 0xF0 && b <= 0xF4) {
		len = 4, c = b & 0x07;
		lo = b == 0xF0 ? 0x90 : 0x80;
		hi = b == 0xF4 ? 0x8F : 0xBF;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		unsigned char lo_i = i == 1 ? lo : 0x80, hi_i = i == 1 ? hi : 0xBF;
		if (s[i] < lo_i || s[i] > hi_i)
			return 0;
		c = c << 6 | (s[i] & 0x3F);
	}
	if (cp)
		*cp = c;
	return len;
}

size_t kt__utf8_cut(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	size_t cut = max;
	/* At most three continuation bytes end a character early. */
	while (cut > 0 && max - cut < 3 && ((unsigned char)s[cut] & 0xC0) == 0x80)
		cut--;
	return ((unsigned char)s[cut] & 0xC0) == 0x80 ? max : cut;
}

size_t kt__utf8_repair(const char *s, size_t n, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		size_t k = p[i] ? kt__utf8_char(p + i, n - i, NULL) : 0;
		if (o + (k ? k : 4) >= cap)
			break;
		if (k) {
			memcpy(out + o, p + i, k);
			o += k;
			i += k;
		} else {
			out[o++] = '\\', out[o++] = 'x';
			out[o++] = hex[p[i] >> 4], out[o++] = hex[p[i] & 15];
			i++;
		}
	}
	out[o] = 0;
	return o;
}
