/*
 * sql_scan.h - katra's traces as DuckDB tables: one table function,
 * katra_scan('VIEW', FILE), read by `katra sql` and `katra export --parquet`
 * (docs/SQL.md gives every view's columns, types and units).
 *
 * A scan reads each file with katra's public reader (katra/reader.h):
 * one pass over the frames for names and threads (tools/pipeline/tables.h), then
 * kt_reader_next()'s merged events, turned into rows as DuckDB asks for
 * chunks of them (at most duckdb_vector_size() rows a call), so a trace is
 * never held whole: a scan holds the reader's own buffers, the file's name
 * tables and, for zones, the open zones of each thread.  Files are handed
 * to DuckDB's threads one at a time (a mutex guards the hand-out), so a
 * query over many files reads them in parallel.
 *
 * Damage is read as `katra stats` reads it: with kt_reader_set_salvage()
 * on, damaged frames are skipped and the rest answered; what was skipped,
 * and files cut short, are noted in struct sql_files for the command to
 * say (exit 3).  A file that cannot be opened or read on fails the query
 * with the reader's message.
 */
#ifndef KT_TOOLS_SQL_SCAN_H
#define KT_TOOLS_SQL_SCAN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/cmd/sql_duck.h"

enum sql_view {
	SQL_EVENTS,
	SQL_ZONES,
	SQL_FRAMES,
	SQL_COUNTERS,
	SQL_MEMORY,
	SQL_DROPS,
	SQL_THREADS,
	SQL_CAPTURES,
	SQL_ARGS,
	SQL_PROCESSES,
	SQL_NVIEWS
};

#define SQL_MAX_COLS 24

struct sql_col {
	const char *name;
	duckdb_type type;
};

struct sql_view_def {
	const char *name;
	const struct sql_col *cols; /* ncols of them */
	int ncols;
};

/* The views, by enum sql_view. */
extern const struct sql_view_def sql_views[SQL_NVIEWS];

/* What a file's scans met: the worst of all its scans. */
struct sql_damage {
	uint64_t skipped;      /* frames salvage skipped (most of any one scan) */
	uint64_t first_offset; /* where the first was */
	int first_error;
	int truncated;         /* the file ended before its summary */
	int sidecar_bad;       /* its sidecar does not match it: why in sidecar_why */
	char sidecar_why[256];
};

/* The files of one command: DuckDB's threads share it. */
struct sql_files {
	const char *const *paths;
	size_t n;
	struct sql_damage *damage; /* n of them, under lock */
	pthread_mutex_t lock;
};

/* sql_files_init - @paths (@n of them, kept by the caller).  0 or -ENOMEM. */
int sql_files_init(struct sql_files *f, const char *const *paths, size_t n);
void sql_files_free(struct sql_files *f);

/*
 * sql_register - register katra_scan(VIEW, FILE) on @con for @files (which
 * must outlive the connection): view VIEW of file FILE (an index in
 * @files), or of every file when FILE is -1; and a temporary view per
 * entry of sql_views (SELECT * FROM katra_scan('zones', -1), ...).  Returns 0, or -1 with DuckDB's
 * message in @why (@cap bytes).
 */
int sql_register(duckdb_connection con, struct sql_files *files, char *why, size_t cap);

/* One row as a cursor makes it: a cell per column of its view. */
struct sql_cell {
	uint64_t u;     /* UBIGINT, UINTEGER */
	int64_t i;      /* BIGINT */
	double d;       /* DOUBLE */
	const char *s;  /* VARCHAR: len bytes, valid until the cursor's next row */
	uint32_t len;
	uint8_t null;
};

struct sql_cursor;

/*
 * sql_cursor_open - a cursor over view @view of file @index of @files.
 * Returns 0 with *@out set, or a negative code with @why (@cap bytes).
 */
int sql_cursor_open(struct sql_files *files, size_t index, int view, struct sql_cursor **out,
		    char *why, size_t cap);

/*
 * sql_cursor_next - the next row into @row (SQL_MAX_COLS cells).
 * Returns 1 with a row, 0 after the last (the file's damage then noted in
 * its struct sql_files), or a negative code with @why.
 */
int sql_cursor_next(struct sql_cursor *c, struct sql_cell *row, char *why, size_t cap);

void sql_cursor_close(struct sql_cursor *c);

#endif
