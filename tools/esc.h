/*
 * esc.h - strings from a trace or from the command line, made ready for
 * the tools' outputs as whole strings in memory (tools/text.h writes them
 * to a stream).  Terminal text follows text_put()'s rules; JSON keeps every
 * byte visible (text_utf8()) and escapes, beyond what JSON requires, DEL
 * and the C1 controls, so that a JSON line printed on a terminal cannot
 * drive it either.  The JSON stays equivalent: only escapes are added.
 *
 * Any thread; no state.
 */
#ifndef KT_TOOLS_ESC_H
#define KT_TOOLS_ESC_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* esc_text - @n bytes of @s as text_put() would write them, NUL-terminated.
 * Returns the copy (free() it) or NULL when out of memory. */
char *esc_text(const char *s, size_t n);

/* esc_json - @n bytes of @s as a JSON string literal, quotes included.
 * Returns the literal (free() it) or NULL when out of memory. */
char *esc_json(const char *s, size_t n);

/* esc_json_string - @n bytes of @s as a jansson string (text_utf8() first,
 * so it always exists).  Returns a new reference or NULL when out of memory. */
json_t *esc_json_string(const char *s, size_t n);

/* esc_json_print - json_dumps(@o, @flags) with DEL and C1 escaped, and a
 * newline, to @f.  Returns 0, -ENOMEM, or -EIO when the write failed. */
int esc_json_print(FILE *f, const json_t *o, size_t flags);

/* esc_puts - text_put() of a NUL-terminated string.  Returns as text_put(). */
int esc_puts(FILE *f, const char *s);

#endif
