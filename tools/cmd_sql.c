/*
 * cmd_sql.c - `katra sql 'QUERY' FILES...`: a query of DuckDB's SQL over
 * katra's views of the traces (tools/sql_scan.h, docs/SQL.md); and
 * `katra export --parquet FILES... DIR`: the same views written by DuckDB
 * as a Parquet dataset partitioned by run id.
 *
 * DuckDB is loaded at run time (tools/sql_duck.h): without it both say
 * what to install and exit 1.  An in-memory database, no extension loaded
 * or installed on its own (so no network), memory within --memory-limit.
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/cli.h"
#include "tools/cmd.h"
#include "tools/sql_duck.h"
#include "tools/sql_out.h"
#include "tools/sql_scan.h"
#include "tools/text.h"

#define MAX_SQL_FILES 4096
#define SQL_GO (-1) /* the words were read: run */

struct sql_args {
	const char *query;   /* sql only */
	const char *files[MAX_SQL_FILES];
	size_t nfiles;
	int format;
	const char *memory_limit;
	const char *threads;
	const char *dir;     /* export: the dataset's */
};

struct sql_db {
	duckdb_database db;
	duckdb_connection con;
	struct sql_files files;
};

static const char sql_help[] =
	"usage: katra sql 'QUERY' [FILE...] [--format table|csv|json]\n"
	"                 [--memory-limit SIZE] [--threads N]\n"
	"DuckDB's SQL over views of the traces: events, zones, frames, counters,\n"
	"memory, drops, threads, captures (docs/SQL.md: their columns, types and\n"
	"units; times in ns); with no FILE they are empty, for queries of Parquet\n"
	"(read_parquet()) alone.  Example:\n"
	"  katra sql \"SELECT name, count(*), quantile_disc(dur_ns, 0.99) FROM zones\n"
	"             GROUP BY name\" run.katra\n"
	"--memory-limit is DuckDB's (\"2GB\", default 80% of RAM).  Needs DuckDB's\n"
	"libduckdb.so (scripts/deps.sh installs it; or KATRA_DUCKDB=PATH).\n"
	"Exit 0; 1 for an error (the query's, with DuckDB's message); 2 usage;\n"
	"3 when a file was cut short or damaged frames were skipped (said).\n";

/* Options anywhere; the first other word is the query (for sql), the
 * rest files.  Returns SQL_GO, or the exit status (after the help, or a
 * usage error said). */
static int sql_parse(const char *cmd, const char *help, int argc, char **argv, int want_query,
		     struct sql_args *a)
{
	for (int i = 1; i < argc; i++) {
		const char *w = argv[i];
		if (!strcmp(w, "-h") || !strcmp(w, "--help")) {
			fputs(help, stdout);
			return EXIT_OK;
		}
		int val = !strcmp(w, "--format") || !strcmp(w, "--memory-limit") ||
			  !strcmp(w, "--threads");
		if (val && i + 1 >= argc)
			return usage_error("%s: %s wants a value", cmd, w);
		if (!strcmp(w, "--format")) {
			const char *v = argv[++i];
			a->format = !strcmp(v, "table") ? SQL_TABLE : !strcmp(v, "csv") ? SQL_CSV
				  : !strcmp(v, "json") ? SQL_JSON : -1;
			if (a->format < 0)
				return usage_error("%s: --format wants table, csv or json", cmd);
		} else if (!strcmp(w, "--memory-limit")) {
			a->memory_limit = argv[++i];
		} else if (!strcmp(w, "--threads")) {
			a->threads = argv[++i];
		} else if (!strcmp(w, "--parquet")) {
			continue; /* export's own word */
		} else if (w[0] == '-' && w[1]) {
			return usage_error("%s: unknown option '%s'", cmd, w);
		} else if (want_query && !a->query) {
			a->query = w;
		} else if (a->nfiles < MAX_SQL_FILES) {
			a->files[a->nfiles++] = w;
		} else {
			return usage_error("%s: more than %d files", cmd, MAX_SQL_FILES);
		}
	}
	if (want_query && !a->query)
		return usage_error("%s: a query is needed", cmd);
	return SQL_GO;
}

/* Say DuckDB's @msg for @cmd: its lines as lines (a query error points
 * at the query's position on a line of its own), each escaped.  Returns
 * EXIT_BAD. */
static int duck_said(const char *cmd, const char *msg)
{
	flush_stdout();
	fprintf(stderr, "katra: %s: ", cmd);
	for (const char *s = msg ? msg : "unknown error", *nl;; s = nl + 1) {
		nl = strchr(s, '\n');
		text_put(stderr, s, nl ? (size_t)(nl - s) : strlen(s));
		fputc('\n', stderr);
		if (!nl || !nl[1])
			break;
	}
	return EXIT_BAD;
}

static void sql_close(struct sql_db *d)
{
	if (d->con)
		duck.duckdb_disconnect(&d->con);
	if (d->db)
		duck.duckdb_close(&d->db);
	sql_files_free(&d->files);
}

static int set_config(duckdb_config cfg, const char *k, const char *v, char *why, size_t cap)
{
	if (duck.duckdb_set_config(cfg, k, v) == DuckDBSuccess)
		return 0;
	snprintf(why, cap, "DuckDB refused %s '%s'", k, v);
	return -1;
}

/* DuckDB loaded, a database open with @a's limits, the views made. */
static int sql_open(const char *cmd, const struct sql_args *a, struct sql_db *d)
{
	char why[1024];
	memset(d, 0, sizeof(*d));
	if (duck_load(why, sizeof(why)))
		return duck_said(cmd, why);
	if (sql_files_init(&d->files, a->files, a->nfiles))
		return duck_said(cmd, "out of memory");
	duckdb_config cfg;
	char *err = NULL;
	if (duck.duckdb_create_config(&cfg) != DuckDBSuccess)
		return duck_said(cmd, "DuckDB: no configuration");
	int bad = set_config(cfg, "autoinstall_known_extensions", "false", why, sizeof(why)) ||
		  (a->memory_limit &&
		   set_config(cfg, "memory_limit", a->memory_limit, why, sizeof(why))) ||
		  (a->threads && set_config(cfg, "threads", a->threads, why, sizeof(why)));
	if (!bad && duck.duckdb_open_ext(NULL, &d->db, cfg, &err) != DuckDBSuccess) {
		snprintf(why, sizeof(why), "%s", err ? err : "DuckDB did not open");
		bad = 1;
	}
	duck.duckdb_free(err);
	duck.duckdb_destroy_config(&cfg);
	if (!bad && duck.duckdb_connect(d->db, &d->con) != DuckDBSuccess) {
		snprintf(why, sizeof(why), "DuckDB: no connection");
		bad = 1;
	}
	if (!bad && sql_register(d->con, &d->files, why, sizeof(why)))
		bad = 1;
	if (bad) {
		sql_close(d);
		return duck_said(cmd, why);
	}
	return 0;
}

/* After the query: say each file's damage as stats does; EXIT_PARTIAL
 * when any, else @result. */
static int damage_said(const struct sql_files *f, int result)
{
	for (size_t i = 0; i < f->n; i++) {
		const struct sql_damage *d = &f->damage[i];
		char *p = text_escape(f->paths[i], strlen(f->paths[i]));
		if (d->skipped)
			say("%s: %" PRIu64 " damaged frames skipped, the first at offset %" PRIu64
			    " (%s); the rest answered", p ? p : "?", d->skipped, d->first_offset,
			    reason(d->first_error, NULL));
		if (d->truncated)
			say("%s: truncated (no summary frame): its complete frames answered",
			    p ? p : "?");
		free(p);
		if ((d->skipped || d->truncated) && result == EXIT_OK)
			result = EXIT_PARTIAL;
	}
	return result;
}

/* Run @q; print its result when @format >= 0.  Returns an exit status. */
static int sql_run(const char *cmd, struct sql_db *d, const char *q, int format)
{
	duckdb_result res;
	int rc = EXIT_OK;
	if (duck.duckdb_query(d->con, q, &res) != DuckDBSuccess)
		rc = duck_said(cmd, duck.duckdb_result_error(&res));
	else if (format >= 0 && sql_print(&res, format, stdout))
		rc = duck_said(cmd, "out of memory");
	duck.duckdb_destroy_result(&res);
	return rc;
}

/* A step of a command: the check before DuckDB opens, or the work. */
typedef int sql_step(struct sql_args *a, struct sql_db *d);

/* Parse, @check (may be NULL), open DuckDB, run @body, say the damage. */
static int sql_command(const char *cmd, const char *help, int want_query, int argc, char **argv,
		       sql_step *check, sql_step *body)
{
	struct sql_args *a = calloc(1, sizeof(*a));
	if (!a)
		return duck_said(cmd, "out of memory");
	int rc = sql_parse(cmd, help, argc, argv, want_query, a);
	if (rc == SQL_GO && check)
		rc = check(a, NULL);
	struct sql_db d;
	if (rc == SQL_GO && !(rc = sql_open(cmd, a, &d))) {
		rc = damage_said(&d.files, body(a, &d));
		sql_close(&d);
	}
	free(a);
	return rc;
}

static int sql_query(struct sql_args *a, struct sql_db *d)
{
	return sql_run("sql", d, a->query, a->format);
}

int cmd_sql(int argc, char **argv)
{
	return sql_command("sql", sql_help, 1, argc, argv, NULL, sql_query);
}

/* ---- export --parquet ------------------------------------------------------ */

static const char parquet_help[] =
	"usage: katra export --parquet FILE... DIR [--memory-limit SIZE] [--threads N]\n"
	"DuckDB writes every view of the traces (docs/SQL.md) as Parquet under DIR,\n"
	"which must not exist: DIR/VIEW/run_id=RUN/*.parquet, one partition per\n"
	"run id (the capture's; a file without one: its name without .katra).\n"
	"Characters other than A-Z a-z 0-9 _ . - in a run id become _.\n";

/* The views a dataset holds: all. */
static int export_views(struct sql_db *d, const char *dir)
{
	/* The partition key of each file: its run id, made a safe directory
	 * name (a header's run id is any bytes; "x/../y" must not climb). */
	int rc = sql_run("export", d,
			 "CREATE TEMP TABLE katra_runs AS SELECT file, regexp_replace("
			 "regexp_replace(coalesce(run_id, regexp_replace(file, '^.*/|\\.katra$', '',"
			 " 'g')), '[^A-Za-z0-9_.-]', '_', 'g'), '^\\.', '_') AS run_id FROM captures",
			 -1);
	char *q = NULL;
	for (int i = 0; !rc && i < SQL_NVIEWS; i++) {
		free(q);
		q = NULL;
		if (asprintf(&q,
			     "COPY (SELECT r.run_id, v.* FROM %s v JOIN katra_runs r USING (file))"
			     " TO '%s/%s' (FORMAT PARQUET, PARTITION_BY (run_id))",
			     sql_views[i].name, dir, sql_views[i].name) < 0)
			return duck_said("export", "out of memory");
		rc = sql_run("export", d, q, -1);
	}
	free(q);
	return rc;
}

/* The last word is DIR, new: made here (as every output is, O_EXCL). */
static int parquet_dir(struct sql_args *a, struct sql_db *d)
{
	(void)d;
	if (a->nfiles < 2)
		return usage_error("export: --parquet wants FILE... and DIR");
	a->dir = a->files[--a->nfiles];
	if (strchr(a->dir, '\''))
		return usage_error("export: --parquet: DIR must not hold a quote");
	if (mkdir(a->dir, 0777)) {
		say("export: %s: %s", a->dir, strerror(errno));
		return EXIT_BAD;
	}
	return SQL_GO;
}

static int parquet_write(struct sql_args *a, struct sql_db *d)
{
	return export_views(d, a->dir);
}

int cmd_export_parquet(int argc, char **argv)
{
	return sql_command("export", parquet_help, 0, argc, argv, parquet_dir, parquet_write);
}
