/*
 * text.h - strings from a trace (names, notes, messages, paths) made safe
 * for the two places the tools print them.  A trace may be hostile: a name
 * holding ESC [ 2 J would clear the user's screen, a "\n" would forge an
 * output line, and bytes that are not UTF-8 make JSON libraries refuse the
 * whole string.
 *
 * Any thread; no state.
 */
#ifndef KT_TOOLS_TEXT_H
#define KT_TOOLS_TEXT_H

#include <stddef.h>
#include <stdio.h>

/*
 * text_put - write @n bytes of @s to @f for a terminal or a text file:
 * well-formed, printable UTF-8 as it is; a backslash as "\\"; \n, \r and
 * \t as those two-character escapes; any other control character (C0, DEL,
 * C1) and every byte that is not part of well-formed UTF-8 as "\xNN".
 * Returns 0, or -1 when a write to @f failed.
 */
int text_put(FILE *f, const char *s, size_t n);

/*
 * text_utf8 - a NUL-terminated copy of @s that is well-formed UTF-8, for
 * JSON: each byte that is not part of a well-formed character becomes the
 * four characters "\xNN", so the bytes stay visible and the key stays in
 * the output.  Control characters are kept (the JSON writer escapes them).
 * Returns the copy (free() it), its length in *@len when @len is not NULL,
 * or NULL when out of memory.
 */
char *text_utf8(const char *s, size_t n, size_t *len);

#endif
