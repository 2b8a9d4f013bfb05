/*
 * parses.h - for the fuzz targets of the tools: what a command printed as
 * JSON must be JSON, an FXT must be whole records with UTF-8 strings,
 * whatever the trace held.
 */
#ifndef KATRA_FUZZ_PARSES_H
#define KATRA_FUZZ_PARSES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

/* Trap unless the @len bytes at @text are one JSON document. */
static inline void must_parse(const char *text, size_t len)
{
	json_t *o = json_loadb(text, len, 0, NULL);
	if (!o)
		__builtin_trap();
	json_decref(o);
}

/* Whether @n bytes at @s are well-formed UTF-8 (no overlong form, no
 * surrogate, nothing past U+10FFFF). */
static inline int is_utf8(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		size_t k = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
			 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
		if (!k || i + k > n)
			return 0;
		for (size_t j = 1; j < k; j++)
			if ((s[i + j] & 0xC0) != 0x80)
				return 0;
		if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] > 0x9F) ||
		    (c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] > 0x8F))
			return 0;
		i += k;
	}
	return 1;
}

/* Trap unless FXT records whose size words (bits 4-15, never 0) tile
 * @len bytes exactly, each string record's bytes (type 2: its length in
 * bits 32-46, after the header) well-formed UTF-8. */
static inline void must_tile_fxt(const uint8_t *s, size_t len)
{
	if (len % 8)
		__builtin_trap();
	for (size_t at = 0; at < len;) {
		uint64_t h;
		memcpy(&h, s + at, 8);
		size_t words = (h >> 4) & 0xFFF;
		size_t n = (h >> 32) & 0x7FFF;
		if (!words || at + words * 8 > len)
			__builtin_trap();
		if ((h & 0xF) == 2 && (8 + n > words * 8 || !is_utf8(s + at + 8, n)))
			__builtin_trap();
		at += words * 8;
	}
}

#endif
