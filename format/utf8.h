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

/*
 * kt__utf8_repair - @n bytes of @s as well-formed UTF-8 in @out, which has
 * room for @cap bytes (@cap >= 1), NUL included: each byte that is not
 * part of a well-formed character (and each NUL byte) becomes the four
 * characters "\xNN", so free text a caller passed (a stop reason) keeps
 * its bytes visible and never makes a JSON writer refuse it; when @cap
 * runs out the copy ends before a character or an escape, never inside
 * one.  Returns the bytes written, without the NUL.
 */
size_t kt__utf8_repair(const char *s, size_t n, char *out, size_t cap);

#endif
