/*
 * cmd_sql.c - `katra sql 'QUERY' FILES...`: a query of DuckDB's SQL over
 * katra's views of the traces (tools/cmd/sql_scan.h, docs/SQL.md); and
 * `katra export --parquet FILES... DIR`: the same views written by DuckDB
 * as a Parquet dataset partitioned by run id.
 *
 * DuckDB is loaded at run time (tools/cmd/sql_duck.h): without it both say
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

#include <katra/reader.h>
#include "tools/cmd/cli.h"
#include "tools/cmd/cmd.h"
#include "tools/cmd/sql_duck.h"
#include "tools/cmd/sql_out.h"
#include "tools/cmd/sql_scan.h"
#include "tools/pipeline/text.h"

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
	"DuckDB's SQL over views of the traces: events, zones, args, frames,\n"
	"counters, memory, drops, threads, processes, captures (docs/SQL.md: their\n"
	"columns, types and units; times in ns); with no FILE they are empty, for\n"
	"Parquet (read_parquet()) alone.  Example:\n"
	"  katra sql \"SELECT name, count(*), quantile_disc(dur_ns, 0.99) FROM zones\n"
	"             GROUP BY name\" run.katra\n"
	"--memory-limit is DuckDB's (\"2GB\", default 80% of RAM).  Needs DuckDB's\n"
	"libduckdb.so (scripts/deps.sh installs it; or KATRA_DUCKDB=PATH).\n"
	"Exit 0; 1 for an error (the query's, with DuckDB's message); 2 usage;\n"
	"3 when a file was cut short or damaged frames were skipped, or a capture's\n"
	"sidecar does not match its trace (each said).\n";

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
static int damage_said(struct sql_files *f, int result)
{
	for (size_t i = 0; i < f->n; i++) {
		/* Read under the lock the scans wrote it under (scan_init()'s
		 * comment says why). */
		pthread_mutex_lock(&f->lock);
		struct sql_damage dd = f->damage[i], *d = &dd;
		pthread_mutex_unlock(&f->lock);
		char *p = text_escape(f->paths[i], strlen(f->paths[i]));
		if (d->skipped)
			say("%s: %" PRIu64 " damaged frames skipped, the first at offset %" PRIu64
			    " (%s); the rest answered", p ? p : "?", d->skipped, d->first_offset,
			    reason(d->first_error, NULL));
		if (d->truncated)
			say("%s: truncated (no summary frame): its complete frames answered",
			    p ? p : "?");
		if (d->sidecar_bad)
			say("%s.json: capture sidecar does not match %s: %s; its columns in "
			    "captures are empty", p ? p : "?", p ? p : "?", d->sidecar_why);
		free(p);
		if ((d->skipped || d->truncated || d->sidecar_bad) && result == EXIT_OK)
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

/* The partition of file @path into @run (@cap bytes): its run id, or its
 * name without the directory and ".katra"; any byte but A-Z a-z 0-9 _ . -
 * made '_', and a leading '.' too (a header's run id is untrusted bytes:
 * "x/../y" must not climb).  Returns 0 or the exit status said. */
static int run_of(const char *path, char *run, size_t cap)
{
	kt_reader *r;
	kt_reader_error err = { 0 };
	int rc = kt_reader_open(path, &err, &r);
	if (rc < 0)
		return read_failed(path, rc, &err);
	const kt_header *h = kt_reader_get_header(r);
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	const char *id = (h->flags & KT_HDR_CAPTURE) && h->run_id[0] ? h->run_id : base;
	size_t n = strlen(id);
	if (id == base && n > 6 && !strcmp(id + n - 6, ".katra"))
		n -= 6;
	n = n < cap - 1 ? n : cap - 1;
	for (size_t i = 0; i < n; i++) {
		char ch = id[i];
		int ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
			 (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || (ch == '.' && i);
		run[i] = ok ? ch : '_';
	}
	run[n] = 0;
	kt_reader_close(r);
	return n ? 0 : (say("export: %s: no run id and no name", path), EXIT_BAD);
}

/* mkdir @path, an existing directory being fine (DIR itself was new). */
static int dir_made(const char *path)
{
	struct stat st;
	if (!mkdir(path, 0777) || (errno == EEXIST && !lstat(path, &st) && S_ISDIR(st.st_mode)))
		return 0;
	say("export: %s: %s", path, strerror(errno));
	return EXIT_BAD;
}

/* Every view of file @i as DIR/VIEW/run_id=RUN/part-I.parquet: one
 * partition per run id, hive-style, each file written once, without
 * DuckDB's PARTITION_BY (which hashes a key per row: 5 times the CPU). */
static int export_file(struct sql_db *d, const char *dir, size_t i)
{
	char run[256], *path = NULL, *q = NULL;
	int rc = run_of(d->files.paths[i], run, sizeof(run));
	for (int v = 0; !rc && v < SQL_NVIEWS; v++) {
		const char *name = sql_views[v].name;
		free(path);
		free(q);
		q = NULL;
		if (asprintf(&path, "%s/%s/run_id=%s", dir, name, run) < 0 ||
		    asprintf(&q, "COPY (SELECT * FROM katra_scan('%s', %zu)) TO "
				 "'%s/part-%zu.parquet' (FORMAT PARQUET)", name, i, path, i) < 0) {
			path = NULL;
			rc = duck_said("export", "out of memory");
			break;
		}
		*strrchr(path, '/') = 0;
		rc = dir_made(path);
		path[strlen(path)] = '/';
		rc = rc ? rc : dir_made(path);
		rc = rc ? rc : sql_run("export", d, q, -1);
	}
	free(path);
	free(q);
	return rc;
}

static int export_views(struct sql_db *d, const char *dir)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < d->files.n; i++)
		rc = export_file(d, dir, i);
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
