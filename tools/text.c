/*
 * text.c - escaping for terminals and repair for JSON; text.h says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/utf8.h"
#include "tools/text.h"

static int is_control(uint32_t cp)
{
	return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0);
}

/* The escape for one control code point, or for one stray byte.  Built by
 * hand: a hostile name may be all escapes, and printf per byte was most of
 * the time of printing one. */
static int put_escape(FILE *f, uint32_t v)
{
	static const char hex[] = "0123456789ABCDEF";
	char b[6] = { '\\' };
	size_t n = 2;
	switch (v) {
	case '\n': b[1] = 'n'; break;
	case '\r': b[1] = 'r'; break;
	case '\t': b[1] = 't'; break;
	case '\\': b[1] = '\\'; break;
	default:
		if (v < 0x100) {
			b[1] = 'x', b[2] = hex[v >> 4], b[3] = hex[v & 15], n = 4;
		} else {
			b[1] = 'u', b[2] = hex[v >> 12 & 15], b[3] = hex[v >> 8 & 15];
			b[4] = hex[v >> 4 & 15], b[5] = hex[v & 15], n = 6;
		}
	}
	return fwrite(b, 1, n, f) == n ? 0 : -1;
}

int text_put(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, plain = 0;   /* [plain, i) is printable, not yet written */
	while (i < n) {
		if (p[i] >= 0x20 && p[i] < 0x7F && p[i] != '\\') {
			i++; /* printable ASCII, most of any text: no decoding */
			continue;
		}
		uint32_t cp;
		size_t len = kt__utf8_char(p + i, n - i, &cp);
		if (len && !is_control(cp) && cp != '\\') {
			i += len;
			continue;
		}
		if (i > plain && fwrite(p + plain, 1, i - plain, f) != i - plain)
			return -1;
		if (put_escape(f, len ? cp : p[i]) < 0)
			return -1;
		i += len ? len : 1;
		plain = i;
	}
	if (i > plain && fwrite(p + plain, 1, i - plain, f) != i - plain)
		return -1;
	return 0;
}

char *text_utf8(const char *s, size_t n, size_t *len)
{
	const unsigned char *p = (const unsigned char *)s;
	/* Each stray byte grows to four: the copy is at most 4n + 1. */
	if (n > (SIZE_MAX - 1) / 4)
		return NULL;
	char *out = malloc(4 * n + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		if (p[i] < 0x80) {
			*o++ = (char)p[i++]; /* ASCII: no decoding, no call */
			continue;
		}
		size_t l = kt__utf8_char(p + i, n - i, NULL);
		if (l) {
			memcpy(o, p + i, l);
			o += l, i += l;
		} else {
			static const char hex[] = "0123456789ABCDEF";
			*o++ = '\\', *o++ = 'x', *o++ = hex[p[i] >> 4], *o++ = hex[p[i] & 15];
			i++;
		}
	}
	*o = 0;
	if (len)
		*len = (size_t)(o - out);
	return out;
}
