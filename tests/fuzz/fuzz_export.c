/*
 * fuzz_export - `katra export --perfetto` and `--fxt` over any bytes, on
 * their own (fuzz_stats runs them too, after the stats passes, with a
 * smaller share of each run).  What they write must be what a viewer can
 * take whatever the trace's names held: the Perfetto trace decodes with
 * the generated protobuf-c code and every string field in it, at any
 * depth, is well-formed UTF-8 (protobuf's string type; Perfetto's and
 * Python's importers refuse or mangle others); the FXT is whole records
 * whose size words tile it, and every string record's bytes are UTF-8.
 * The compressed Perfetto codecs run too (the batching code).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <katra/reader.h>
#include "tests/fuzz/parses.h"
#include "tools/export/export_fxt.h"
#include "tools/export/export_perfetto.h"
#include "tools/export/perfetto_trace.pb-c.h"
#include "tools/pipeline/tables.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Trap unless every string field of @m (and of every message inside it)
 * is well-formed UTF-8; walked through the descriptors, so a field added
 * to the schema is checked too. */
static void strings_utf8(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *base = (const char *)m;
		size_t n = 1;
		const void *const *items = (const void *)(base + f->offset);
		if (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			memcpy(&n, base + f->quantifier_offset, sizeof(n));
			memcpy(&items, base + f->offset, sizeof(items));
		}
		uint32_t which = f->id;
		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
			memcpy(&which, base + f->quantifier_offset, sizeof(which));
		if (which != f->id)
			continue;
		for (size_t k = 0; k < n; k++) {
			const void *v = items[k];
			if (!v || (f->type == PROTOBUF_C_TYPE_STRING &&
				   v == f->default_value))
				continue;
			if (f->type == PROTOBUF_C_TYPE_MESSAGE)
				strings_utf8(v);
			else if (!is_utf8(v, strlen(v)))
				__builtin_trap();
		}
	}
}

static void check_perfetto(const uint8_t *s, size_t len)
{
	Perfetto__Protos__Trace *tr = perfetto__protos__trace__unpack(NULL, len, s);
	if (!tr)
		__builtin_trap();
	strings_utf8(&tr->base);
	perfetto__protos__trace__free_unpacked(tr, NULL);
}

/* Export @pass (0: FXT, 1: Perfetto, 2: Perfetto deflated) of @r into
 * *@out (free() it).  The pass's result; -1 when no stream. */
static int export_pass(kt_reader *r, const struct tables *t, int pass, char **out, size_t *len)
{
	struct export_result res;
	FILE *m = open_memstream(out, len);
	if (!m)
		return -1;
	kt_reader_rewind(r);
	int rc = pass == 0 ? fxt_run(r, t, m, &res)
		 : perfetto_run(r, t, m, pass == 1 ? PERFETTO_PLAIN : PERFETTO_DEFLATE, &res);
	fclose(m);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kt_reader *r;
	if (kt_reader_open_mem(data, size, NULL, &r))
		return 0;
	/* Half the inputs salvage, as the command does: its skips and
	 * resyncs reach the exports too. */
	kt_reader_set_salvage(r, size % 2);
	struct tables t;
	int loaded = tables_load(r, &t) >= 0;
	for (int pass = 0; loaded && pass < 3; pass++) {
		char *out = NULL;
		size_t len = 0;
		int rc = export_pass(r, &t, pass, &out, &len);
		if (rc == 0 && pass == 0)
			must_tile_fxt((const uint8_t *)out, len);
		else if (rc == 0 && pass == 1)
			check_perfetto((const uint8_t *)out, len);
		free(out);
	}
	tables_free(&t);
	kt_reader_close(r);
	return 0;
}
