/*
 * sql_scan.c - katra_scan(), the table function of tools/cmd/sql_scan.h:
 * binding a view, handing files to DuckDB's threads and filling chunks
 * from tools/cmd/sql_rows.c's cursors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cmd/sql_scan.h"
#include "tools/pipeline/text.h"

/* What a bind chose: the files (the function's extra info) and the view. */
struct scan_bound {
	struct sql_files *files;
	int view;
	size_t from, to;           /* the files it reads: [from, to) */
};

/* One scan of one view over every file: the hand-out of files. */
struct scan_global {
	struct sql_files *files;
	int view;
	size_t next_file, end;     /* next_file under files->lock */
	idx_t ncols;               /* the columns the query reads (projection) */
	idx_t cols[SQL_MAX_COLS];  /* their indices in the view */
};

/* One of DuckDB's threads: the file it reads now. */
struct scan_local {
	struct sql_cursor *cur;
};

int sql_files_init(struct sql_files *f, const char *const *paths, size_t n)
{
	memset(f, 0, sizeof(*f));
	f->paths = paths;
	f->n = n;
	f->damage = calloc(n ? n : 1, sizeof(*f->damage));
	if (!f->damage)
		return -ENOMEM;
	pthread_mutex_init(&f->lock, NULL);
	return 0;
}

void sql_files_free(struct sql_files *f)
{
	if (!f->damage)
		return;
	free(f->damage);
	f->damage = NULL;
	pthread_mutex_destroy(&f->lock);
}

static void scan_bind(duckdb_bind_info info)
{
	duckdb_value v = duck.duckdb_bind_get_parameter(info, 0);
	char *name = v ? duck.duckdb_get_varchar(v) : NULL;
	int view = -1;
	for (int i = 0; name && i < SQL_NVIEWS; i++)
		if (!strcmp(name, sql_views[i].name))
			view = i;
	duck.duckdb_free(name);
	duck.duckdb_destroy_value(&v);
	struct sql_files *files = duck.duckdb_bind_get_extra_info(info);
	v = duck.duckdb_bind_get_parameter(info, 1);
	int64_t only = v ? duck.duckdb_get_int64(v) : -1;
	duck.duckdb_destroy_value(&v);
	if (view < 0 || only < -1 || (only >= 0 && (uint64_t)only >= files->n)) {
		duck.duckdb_bind_set_error(info, "katra_scan: no such view or file");
		return;
	}
	const struct sql_view_def *d = &sql_views[view];
	for (int i = 0; i < d->ncols; i++) {
		duckdb_logical_type t = duck.duckdb_create_logical_type(d->cols[i].type);
		duck.duckdb_bind_add_result_column(info, d->cols[i].name, t);
		duck.duckdb_destroy_logical_type(&t);
	}
	struct scan_bound *b = malloc(sizeof(*b));
	if (!b) {
		duck.duckdb_bind_set_error(info, "katra_scan: out of memory");
		return;
	}
	pthread_mutex_lock(&files->lock); /* read by scan_init(), maybe elsewhere */
	*b = (struct scan_bound){ files, view, only < 0 ? 0 : (size_t)only,
				  only < 0 ? files->n : (size_t)only + 1 };
	pthread_mutex_unlock(&files->lock);
	duck.duckdb_bind_set_bind_data(info, b, free);
}

static void scan_init(duckdb_init_info info)
{
	struct scan_global *g = calloc(1, sizeof(*g));
	if (!g)
		return;
	struct sql_files *files = duck.duckdb_init_get_extra_info(info);
	/* Written under the files' lock, read under it by scan_function() on
	 * DuckDB's threads: DuckDB orders them, but with atomics of its own
	 * that ThreadSanitizer cannot see in an uninstrumented library. */
	pthread_mutex_lock(&files->lock);
	const struct scan_bound *b = duck.duckdb_init_get_bind_data(info);
	g->files = files;
	g->view = b->view;
	g->next_file = b->from;
	g->end = b->to;
	/* A file is read by one thread; files by as many as DuckDB has. */
	duck.duckdb_init_set_max_threads(info, g->end > g->next_file ? g->end - g->next_file : 1);
	g->ncols = duck.duckdb_init_get_column_count(info);
	if (g->ncols > SQL_MAX_COLS)
		g->ncols = SQL_MAX_COLS;
	for (idx_t i = 0; i < g->ncols; i++)
		g->cols[i] = duck.duckdb_init_get_column_index(info, i);
	pthread_mutex_unlock(&files->lock);
	duck.duckdb_init_set_init_data(info, g, free);
}

static void local_free(void *p)
{
	struct scan_local *l = p;
	sql_cursor_close(l->cur);
	free(l);
}

static void scan_local_init(duckdb_init_info info)
{
	struct scan_local *l = calloc(1, sizeof(*l));
	if (l)
		duck.duckdb_init_set_init_data(info, l, local_free);
}

/* A string cell into @vec at @row, made UTF-8 first when it is not
 * (DuckDB's VARCHAR holds UTF-8 only; a trace's names may be any bytes). */
static int put_string(duckdb_vector vec, idx_t row, const struct sql_cell *c)
{
	for (uint32_t i = 0; i < c->len; i++) {
		if ((unsigned char)c->s[i] < 0x80)
			continue;
		size_t n;
		char *u = text_utf8(c->s, c->len, &n);
		if (!u)
			return -ENOMEM;
		duck.duckdb_vector_assign_string_element_len(vec, row, u, n);
		free(u);
		return 0;
	}
	duck.duckdb_vector_assign_string_element_len(vec, row, c->s, c->len);
	return 0;
}

/* Cell @c of column type @type into @vec (whose data is @data) at @row. */
static int put_cell(duckdb_vector vec, void *data, duckdb_type type, idx_t row,
		    const struct sql_cell *c)
{
	if (c->null) {
		duck.duckdb_vector_ensure_validity_writable(vec);
		uint64_t *valid = duck.duckdb_vector_get_validity(vec);
		valid[row / 64] &= ~((uint64_t)1 << (row % 64));
		return 0;
	}
	switch (type) {
	case DUCKDB_TYPE_UBIGINT:
		((uint64_t *)data)[row] = c->u;
		return 0;
	case DUCKDB_TYPE_UINTEGER:
		((uint32_t *)data)[row] = (uint32_t)c->u;
		return 0;
	case DUCKDB_TYPE_BIGINT:
		((int64_t *)data)[row] = c->i;
		return 0;
	case DUCKDB_TYPE_BOOLEAN:
		((bool *)data)[row] = c->u != 0;
		return 0;
	case DUCKDB_TYPE_DOUBLE:
		((double *)data)[row] = c->d;
		return 0;
	default:
		return put_string(vec, row, c);
	}
}

/* The next row of any file for this thread: 1, 0 when every file is
 * read, or a negative code with @why. */
static int scan_row(struct sql_files *files, struct scan_global *g, int view, struct scan_local *l,
		    struct sql_cell *row, char *why, size_t cap)
{
	for (;;) {
		if (l->cur) {
			int rc = sql_cursor_next(l->cur, row, why, cap);
			if (rc)
				return rc;
			sql_cursor_close(l->cur);
			l->cur = NULL;
		}
		pthread_mutex_lock(&files->lock);
		size_t i = g->next_file < g->end ? g->next_file++ : SIZE_MAX;
		pthread_mutex_unlock(&files->lock);
		if (i == SIZE_MAX)
			return 0;
		int rc = sql_cursor_open(files, i, view, &l->cur, why, cap);
		if (rc < 0)
			return rc;
	}
}

static void scan_function(duckdb_function_info info, duckdb_data_chunk out)
{
	struct scan_global *g = duck.duckdb_function_get_init_data(info);
	struct scan_local *l = duck.duckdb_function_get_local_init_data(info);
	if (!g || !l) {
		duck.duckdb_function_set_error(info, "katra_scan: out of memory");
		return;
	}
	struct sql_files *files = duck.duckdb_function_get_extra_info(info);
	struct scan_global gc; /* what scan_init() chose (its comment says why locked) */
	pthread_mutex_lock(&files->lock);
	gc = *g;
	pthread_mutex_unlock(&files->lock);
	const struct sql_view_def *d = &sql_views[gc.view];
	duckdb_vector vec[SQL_MAX_COLS];
	void *data[SQL_MAX_COLS];
	duckdb_type type[SQL_MAX_COLS];
	for (idx_t j = 0; j < gc.ncols; j++) {
		vec[j] = duck.duckdb_data_chunk_get_vector(out, j);
		data[j] = duck.duckdb_vector_get_data(vec[j]);
		type[j] = d->cols[gc.cols[j]].type;
	}
	idx_t max = duck.duckdb_vector_size(), n = 0;
	struct sql_cell row[SQL_MAX_COLS];
	char why[512];
	while (n < max) {
		int rc = scan_row(files, g, gc.view, l, row, why, sizeof(why));
		if (rc < 0) {
			duck.duckdb_function_set_error(info, why);
			return;
		}
		if (!rc)
			break;
		for (idx_t j = 0; j < gc.ncols; j++)
			if (put_cell(vec[j], data[j], type[j], n, &row[gc.cols[j]])) {
				duck.duckdb_function_set_error(info, "katra_scan: out of memory");
				return;
			}
		n++;
	}
	duck.duckdb_data_chunk_set_size(out, n);
}

int sql_register(duckdb_connection con, struct sql_files *files, char *why, size_t cap)
{
	duckdb_table_function f = duck.duckdb_create_table_function();
	duckdb_logical_type vt = duck.duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
	duckdb_logical_type it = duck.duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
	duck.duckdb_table_function_set_name(f, "katra_scan");
	duck.duckdb_table_function_add_parameter(f, vt);
	duck.duckdb_table_function_add_parameter(f, it);
	duck.duckdb_destroy_logical_type(&vt);
	duck.duckdb_destroy_logical_type(&it);
	duck.duckdb_table_function_set_extra_info(f, files, NULL);
	duck.duckdb_table_function_set_bind(f, scan_bind);
	duck.duckdb_table_function_set_init(f, scan_init);
	duck.duckdb_table_function_set_local_init(f, scan_local_init);
	duck.duckdb_table_function_set_function(f, scan_function);
	duck.duckdb_table_function_supports_projection_pushdown(f, true);
	duckdb_state st = duck.duckdb_register_table_function(con, f);
	duck.duckdb_destroy_table_function(&f);
	if (st != DuckDBSuccess) {
		snprintf(why, cap, "DuckDB refused katra_scan()");
		return -1;
	}
	for (int i = 0; i < SQL_NVIEWS; i++) {
		char q[160];
		duckdb_result res;
		snprintf(q, sizeof(q), "CREATE TEMP VIEW %s AS SELECT * FROM katra_scan('%s', -1)",
			 sql_views[i].name, sql_views[i].name);
		st = duck.duckdb_query(con, q, &res);
		if (st != DuckDBSuccess)
			snprintf(why, cap, "%s", duck.duckdb_result_error(&res));
		duck.duckdb_destroy_result(&res);
		if (st != DuckDBSuccess)
			return -1;
	}
	return 0;
}
