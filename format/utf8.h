/*
 * utf8.h - UTF-8 at the byte level, for the strings katra reads from files
 * and callers (names, notes, messages, stop reasons) and must pass on as
 * valid text: JSON wants UTF-8, a terminal wants no stray control bytes.
 *
 * Pure functions over byte ranges; any thread.
 */
#ifndef KT_FORMAT_UTF8_H
#define KT_FORMAT_UTF8_H

#include <stddef.h>
#include <stdint.h>

/*
 * kt__utf8_char - the length (1 to 4) of the well-formed UTF-8 character
 * that starts at @s, within @n bytes; 0 when the bytes there are not one
 * (a stray continuation byte, an overlong form, a surrogate, a code point
 * above U+10FFFF, or a character cut by @n).  @n is at least 1.
 * On success *@cp, when not NULL, is the code point.
 */
size_t kt__utf8_char(const unsigned char *s, size_t n, uint32_t *cp);

/*
 * kt__utf8_cut - the largest length <= @max at which @s (of @n bytes) may
 * be cut without splitting a character: @n when @n <= @max, else @max
 * moved back over the continuation bytes of a character it would cut.
 */
size_t kt__utf8_cut(const char *s, size_t n, size_t max);

#endif
