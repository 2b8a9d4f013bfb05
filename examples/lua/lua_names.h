/*
 * lua_names.h - lua_hook.c's table from a Lua function's identity to its
 * zone id: fixed at creation, filled once per function, never grown.
 */
#ifndef KATRA_EXAMPLES_LUA_NAMES_H
#define KATRA_EXAMPLES_LUA_NAMES_H

#include <stdint.h>
#include <lua.h>

typedef struct lt_names lt_names;

/* A table for @cap functions (a power of two at least twice @cap slots);
 * NULL when memory ran out. */
lt_names *lt_names_new(uint32_t cap);
void lt_names_free(lt_names *n);

/*
 * lt_names_id - the zone id of the function running at @ar (a hook's
 * lua_Debug after lua_getinfo(L, "S", ar)): a C function is known by its
 * pointer, a Lua function by its chunk's name and first line.  On first sight it is named (its name
 * when Lua knows it, else "chunk:line") and interned; with the table
 * full, or the interning failed, the fallback id is returned and
 * *@fallback set to 1.
 */
uint32_t lt_names_id(lt_names *n, lua_State *L, lua_Debug *ar, int *fallback);

/* Functions interned so far. */
uint32_t lt_names_count(const lt_names *n);

#endif
