/*
 * text.h - strings from a trace or from the command line (names, notes,
 * messages, paths) made safe for the two places the tools print them.  A
 * trace may be hostile: a name holding ESC [ 2 J would clear the user's
 * screen, a "\n" would forge an output line, and bytes that are not UTF-8
 * make JSON libraries refuse the whole string.
 *
 * Terminal text: text_put()'s rules, to a stream or as a string in memory.
 * JSON keeps every byte visible (text_utf8()) and escapes, beyond what JSON
 * requires, DEL and the C1 controls, so that a JSON line printed on a
 * terminal cannot drive it either.  The JSON stays equivalent: only
 * escapes are added.
 *
 * Any thread; no state.
 */
#ifndef KT_TOOLS_TEXT_H
#define KT_TOOLS_TEXT_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/*
 * text_put - write @n bytes of @s to @f for a terminal or a text file:
 * well-formed, printable UTF-8 as it is; a backslash as "\\"; \n, \r and
 * \t as those two-character escapes; any other control character (C0, DEL,
 * C1) and every byte that is not part of well-formed UTF-8 as "\xNN".
 * Returns 0, or -1 when a write to @f failed.
 */
int text_put(FILE *f, const char *s, size_t n);

/* text_puts - text_put() of a NUL-terminated string.  Returns as text_put(). */
int text_puts(FILE *f, const char *s);

/* text_escape - @n bytes of @s as text_put() would write them, NUL-terminated.
 * Returns the copy (free() it) or NULL when out of memory. */
char *text_escape(const char *s, size_t n);

/*
 * text_utf8 - a NUL-terminated copy of @s that is well-formed UTF-8, for
 * JSON: each byte that is not part of a well-formed character becomes the
 * four characters "\xNN", so the bytes stay visible and the key stays in
 * the output.  Control characters are kept (the JSON writer escapes them).
 * Returns the copy (free() it), its length in *@len when @len is not NULL,
 * or NULL when out of memory.
 */
char *text_utf8(const char *s, size_t n, size_t *len);

/* text_json - @n bytes of @s as a JSON string literal, quotes included.
 * Returns the literal (free() it) or NULL when out of memory. */
char *text_json(const char *s, size_t n);

/* text_json_string - @n bytes of @s as a jansson string (text_utf8() first,
 * so it always exists).  Returns a new reference or NULL when out of memory. */
json_t *text_json_string(const char *s, size_t n);

/* text_json_print - json_dumps(@o, @flags) with DEL and C1 escaped, and a
 * newline, to @f.  Returns 0, -ENOMEM, or -EIO when the write failed. */
int text_json_print(FILE *f, const json_t *o, size_t flags);

#endif
