/*
 * lua_names.c - a Lua function's identity to its zone id (lua_names.h).
 *
 * Open addressing over a fixed array, filled to half at most so that a
 * miss ends soon.  A Lua function is known by its chunk's source string
 * (a pointer, checked against a copy of the string's start: a chunk
 * collected may leave its address to another) and its first line; a C
 * function by its pointer, which lives as long as the program.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <katra/katra.h>

#include "lua_hook.h"
#include "lua_names.h"

#define LT_SRC 16 /* bytes of a chunk's source kept to check its pointer */

struct slot {
	uintptr_t key; /* 0: free */
	int32_t line;  /* first line; -1 for a C function */
	uint32_t id;
	size_t srclen;
	char src[LT_SRC];
};

struct lt_names {
	uint32_t mask, cap, count, fallback_id;
	struct slot *s;
};

lt_names *lt_names_new(uint32_t cap)
{
	lt_names *n = calloc(1, sizeof(*n));
	uint32_t slots = 16;
	while (slots < 2 * cap)
		slots *= 2;
	if (n)
		n->s = calloc(slots, sizeof(*n->s));
	if (!n || !n->s) {
		free(n);
		return NULL;
	}
	n->mask = slots - 1;
	n->cap = cap;
	n->fallback_id = kt_name(LT_FALLBACK_NAME);
	return n;
}

void lt_names_free(lt_names *n)
{
	if (n)
		free(n->s);
	free(n);
}

uint32_t lt_names_count(const lt_names *n)
{
	return n->count;
}

static uint32_t slot_of(uintptr_t key, int32_t line)
{
	uint64_t x = (uint64_t)key ^ ((uint64_t)(uint32_t)line << 40);
	x *= 0x9e3779b97f4a7c15ull;
	return (uint32_t)(x >> 32);
}

/* Whether slot @s is the function with @key, @line and source @ar. */
static int same(const struct slot *s, uintptr_t key, int32_t line, const lua_Debug *ar)
{
	if (s->key != key || s->line != line)
		return 0;
	if (line < 0)
		return 1;
	if (s->srclen != ar->srclen)
		return 0;
	/* A constant length the compiler inlines: most chunk names are longer. */
	if (ar->srclen >= 16)
		return !memcmp(s->src, ar->source, 16);
	return !memcmp(s->src, ar->source, ar->srclen);
}

/* Intern the function at @ar, named on first sight: its name when Lua
 * knows it, else where it is defined.  0 when interning failed. */
static uint32_t intern(lua_State *L, lua_Debug *ar)
{
	char where[sizeof(ar->short_src) + 16];
	int line = ar->linedefined > 0 ? ar->linedefined : 0;
	lua_getinfo(L, "n", ar);
	const char *name = ar->name;
	if (!name || !*name) {
		snprintf(where, sizeof(where), "%s:%d", ar->short_src, line);
		name = where;
	}
	kt_site site = { name, ar->short_src, name, NULL, (uint32_t)line, 0, &kt__flag_on };
	return kt_site_id(&site);
}

uint32_t lt_names_id(lt_names *n, lua_State *L, lua_Debug *ar, int *fallback)
{
	int is_c = ar->what[0] == 'C';
	uintptr_t key = (uintptr_t)ar->source;
	int32_t line = is_c ? -1 : ar->linedefined;
	if (is_c) { /* every C function's source is "=[C]": its pointer instead */
		lua_getinfo(L, "f", ar);
		key = (uintptr_t)lua_tocfunction(L, -1);
		if (!key)
			key = (uintptr_t)lua_topointer(L, -1);
		lua_pop(L, 1);
	}
	uint32_t i = slot_of(key, line) & n->mask;
	for (; n->s[i].key; i = (i + 1) & n->mask)
		if (same(&n->s[i], key, line, ar))
			return n->s[i].id;
	uint32_t id = n->count < n->cap ? intern(L, ar) : 0;
	if (!id) {
		*fallback = 1;
		return n->fallback_id;
	}
	struct slot *s = &n->s[i];
	*s = (struct slot){ .key = key, .line = line, .id = id };
	if (!is_c) {
		s->srclen = ar->srclen;
		memcpy(s->src, ar->source, ar->srclen < LT_SRC ? ar->srclen : LT_SRC);
	}
	n->count++;
	return id;
}
