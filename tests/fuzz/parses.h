/*
 * parses.h - for the fuzz targets of the tools: what a command printed as
 * JSON must be JSON, whatever the trace held.
 */
#ifndef KATRA_FUZZ_PARSES_H
#define KATRA_FUZZ_PARSES_H

#include <stddef.h>

#include <jansson.h>

/* Trap unless the @len bytes at @text are one JSON document. */
static inline void must_parse(const char *text, size_t len)
{
	json_t *o = json_loadb(text, len, 0, NULL);
	if (!o)
		__builtin_trap();
	json_decref(o);
}

#endif
