/*
 * esc.c - whole-string escaping for terminals and JSON; esc.h says why.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

#include "tools/esc.h"
#include "tools/text.h"

char *esc_text(const char *s, size_t n)
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

json_t *esc_json_string(const char *s, size_t n)
{
	size_t len;
	char *u = text_utf8(s, n, &len);
	if (!u)
		return NULL;
	json_t *j = json_stringn_nocheck(u, len);
	free(u);
	return j;
}

char *esc_json(const char *s, size_t n)
{
	json_t *j = esc_json_string(s, n);
	char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	return out ? ctl_escape(out) : NULL;
}

int esc_json_print(FILE *f, const json_t *o, size_t flags)
{
	char *s = json_dumps(o, flags);
	if (!s || !(s = ctl_escape(s)))
		return -ENOMEM;
	int rc = fputs(s, f) < 0 || putc('\n', f) < 0 ? -EIO : 0;
	free(s);
	return rc;
}

int esc_puts(FILE *f, const char *s)
{
	return text_put(f, s, strlen(s));
}
