/*
 * perfetto.h - `katra export --perfetto` of a file in tests/data, decoded
 * with the project's generated protobuf code, for the tests that check
 * what the export draws.
 */
#ifndef KT_TESTS_PERFETTO_H
#define KT_TESTS_PERFETTO_H

#include "cli.h"
#include "tools/export/perfetto_trace.pb-c.h"

/* The decoded export of @file; free it with t_perfetto_free(). */
static inline Perfetto__Protos__Trace *t_perfetto(const char *file)
{
	size_t len = 0;
	uint8_t *bytes = t_export("--perfetto", file, &len);
	Perfetto__Protos__Trace *tr = perfetto__protos__trace__unpack(NULL, len, bytes);
	cr_assert_not_null(tr);
	free(bytes);
	return tr;
}

static inline void t_perfetto_free(Perfetto__Protos__Trace *tr)
{
	perfetto__protos__trace__free_unpacked(tr, NULL);
}

#endif
