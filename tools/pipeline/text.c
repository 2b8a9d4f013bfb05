/*
 * text.c - escaping for terminals, repair and escaping for JSON; text.h
 * says why.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

#include "format/utf8.h"
#include "tools/pipeline/text.h"

static const char hex[] = "0123456789ABCDEF";

static int is_control(uint32_t cp)
{
	return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0);
}

/* The escape for one control code point, or for one stray byte.  Built by
 * hand: a hostile name may be all escapes, and printf per byte was most of
 * the time of printing one. */
static int put_escape(FILE *f, uint32_t v)
{
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
			*o++ = '\\', *o++ = 'x', *o++ = hex[p[i] >> 4], *o++ = hex[p[i] & 15];
			i++;
		}
	}
	*o = 0;
	if (len)
		*len = (size_t)(o - out);
	return out;
}

char *text_escape(const char *s, size_t n)
{
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);
	if (!m)
		return NULL;
	/* Only this thread sees the stream: no lock per write. */
	__fsetlocking(m, FSETLOCKING_BYCALLER);
	int bad = text_put(m, s, n);
	if (fclose(m) || bad) {
		free(out);
		return NULL;
	}
	return out;
}

/* Length of the C1 control (U+0080..U+009F, two bytes) or DEL at @p. */
static size_t ctl_len(const unsigned char *p)
{
	if (p[0] == 0x7F)
		return 1;
	return p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F ? 2 : 0;
}

/*
 * @s (NUL-terminated JSON text from jansson, which is well-formed UTF-8)
 * with each DEL and C1 control as \u00XX.  Takes @s; returns it or a new
 * string, NULL when out of memory.
 */
static char *ctl_escape(char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t extra = 0, n = strlen(s);
	for (size_t i = 0; i < n; i++)
		extra += ctl_len(p + i) ? 6 : 0;
	if (!extra)
		return s;
	char *out = malloc(n + extra + 1), *o = out;
	if (!out) {
		free(s);
		return NULL;
	}
	for (size_t i = 0; i < n;) {
		size_t l = ctl_len(p + i);
		if (!l) {
			*o++ = s[i++];
			continue;
		}
		unsigned cp = l == 1 ? 0x7F : p[i + 1];
		o += sprintf(o, "\\u%04X", cp);
		i += l;
	}
	*o = 0;
	free(s);
	return out;
}

json_t *text_json_string(const char *s, size_t n)
{
	size_t len;
	char *u = text_utf8(s, n, &len);
	if (!u)
		return NULL;
	json_t *j = json_stringn_nocheck(u, len);
	free(u);
	return j;
}

char *text_json(const char *s, size_t n)
{
	json_t *j = text_json_string(s, n);
	char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	return out ? ctl_escape(out) : NULL;
}

int text_json_print(FILE *f, const json_t *o, size_t flags)
{
	char *s = json_dumps(o, flags);
	if (!s || !(s = ctl_escape(s)))
		return -ENOMEM;
	int rc = fputs(s, f) < 0 || putc('\n', f) < 0 ? -EIO : 0;
	free(s);
	return rc;
}

int text_puts(FILE *f, const char *s)
{
	return text_put(f, s, strlen(s));
}
