/*
 * sql_side.h - a capture's sidecar (format/SPEC.md §9) as the captures
 * view of `katra sql` reads it (tools/cmd/sql_scan.h, docs/SQL.md):
 * believed only when it matches its trace.  In the pipeline, not with the
 * commands, so that the fuzz target (tests/fuzz/fuzz_sidecar.c), which
 * links katra_tools, reaches it.  Any thread; no state of its own.
 */
#ifndef KT_TOOLS_SQL_SIDE_H
#define KT_TOOLS_SQL_SIDE_H

#include <stddef.h>
#include <stdint.h>

#include <katra/reader.h>

/* Which of struct sql_sidecar's numbers the sidecar gave. */
enum { SIDE_COMPLETE, SIDE_REQUESTED, SIDE_SPAN, SIDE_HEAD, SIDE_TAIL };

/* A capture's sidecar (format/SPEC.md §9), FILE.json beside the trace. */
struct sql_sidecar {
	int match;             /* 0 none; 1 it matches the trace; -1 it does not (why) */
	char why[256];
	/* Only when it matches: */
	char state[32], code[48];
	int complete;
	uint64_t requested_span_ns, capture_span_ns, head_loss_ns, tail_excess_ns;
	unsigned have;         /* 1 << SIDE_*: given as a non-negative integer/boolean */
};

/*
 * sql_sidecar_match - check the sidecar's @len bytes of JSON @json against
 * its trace: named @base (no directory), @bytes long, hashing to @sha256,
 * whose header is @h.  It matches when kt__sidecar_check() passes
 * (schema, published, the trace's name, size and SHA-256) and its run id,
 * epoch and capture id are @h's; then @s gets its fields, else @s->why.
 * @s->match is set 1 or -1.
 */
void sql_sidecar_match(const char *json, size_t len, const char *base, const char *sha256,
		       uint64_t bytes, const kt_header *h, struct sql_sidecar *s);

/*
 * sql_sidecar_read - the sidecar of the trace at @path (@path.json), whose
 * header is @h, into @s.  It is the capture manager's when its schema
 * says so or @h says the trace was captured; it matches when
 * kt__sidecar_check() passes (published, the trace's name, size and
 * SHA-256) and its run id, epoch and capture id are @h's.  The file is
 * read as untrusted: no link followed, no FIFO waited on, 64 KiB at most;
 * the trace is hashed whole (linear in its size).
 */
void sql_sidecar_read(const char *path, const kt_header *h, struct sql_sidecar *s);

#endif
