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

/* The escape for one control code point, or for one stray byte. */
static int put_escape(FILE *f, uint32_t v)
{
	switch (v) {
	case '\n': return fputs("\\n", f) < 0 ? -1 : 0;
	case '\r': return fputs("\\r", f) < 0 ? -1 : 0;
	case '\t': return fputs("\\t", f) < 0 ? -1 : 0;
	case '\\': return fputs("\\\\", f) < 0 ? -1 : 0;
	default:   return fprintf(f, v < 0x100 ? "\\x%02X" : "\\u%04X", (unsigned)v) < 0 ? -1 : 0;
	}
}

int text_put(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, plain = 0;   /* [plain, i) is printable, not yet written */
	while (i < n) {
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
