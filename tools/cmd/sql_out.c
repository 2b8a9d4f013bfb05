/*
 * sql_out.c - a query's result as a table, CSV or JSON lines; strings as
 * tools/pipeline/text.h makes them safe (a trace's names may be hostile).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cmd/sql_out.h"
#include "tools/pipeline/text.h"

static int numeric(duckdb_type t)
{
	return (t >= DUCKDB_TYPE_BOOLEAN && t <= DUCKDB_TYPE_DOUBLE) ||
	       t == DUCKDB_TYPE_HUGEINT || t == DUCKDB_TYPE_UHUGEINT || t == DUCKDB_TYPE_DECIMAL;
}

/* Cell (@col, @row) as text_escape() makes it; "NULL" for a null (@null
 * set); NULL when out of memory. */
static char *cell_text(duckdb_result *res, idx_t col, idx_t row, int *null)
{
	*null = duck.duckdb_value_is_null(res, col, row);
	if (*null)
		return strdup("NULL");
	char *v = duck.duckdb_value_varchar(res, col, row);
	char *e = text_escape(v ? v : "", v ? strlen(v) : 0);
	duck.duckdb_free(v);
	return e;
}

/* A CSV field: quoted when it holds a comma, a quote or a space. */
static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\" ")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* A column's width in the table: its name's and its first rows' cells'. */
#define WIDTH_ROWS 10000
#define MAX_WIDTH 60
#define MAX_SHOWN 64 /* columns the table shows */

/* How a format prints a header or a cell (@null: a NULL); @w the widths. */
struct out {
	FILE *f;
	int csv;
	duckdb_result *res;
	size_t w[MAX_SHOWN];
};

static void put_field(struct out *o, idx_t c, const char *t, int null, int header)
{
	if (o->csv) {
		if (c)
			fputc(',', o->f);
		if (!null)
			csv_field(o->f, t);
		return;
	}
	int right = !header && numeric(duck.duckdb_column_type(o->res, c));
	fprintf(o->f, "%s%*s", c ? "  " : "", right ? (int)o->w[c] : -(int)o->w[c], t);
}

/* The header, then every row; each string escaped (text_escape()). */
static int put_rows(struct out *o, idx_t ncol, idx_t nrow)
{
	for (idx_t c = 0; c < ncol; c++) {
		const char *n = duck.duckdb_column_name(o->res, c);
		char *h = text_escape(n, strlen(n));
		if (!h)
			return -ENOMEM;
		put_field(o, c, h, 0, 1);
		free(h);
	}
	fputc('\n', o->f);
	for (idx_t r = 0; r < nrow; r++) {
		for (idx_t c = 0; c < ncol; c++) {
			int null;
			char *t = cell_text(o->res, c, r, &null);
			if (!t)
				return -ENOMEM;
			put_field(o, c, t, null, 0);
			free(t);
		}
		fputc('\n', o->f);
	}
	return 0;
}

static int print_table(struct out *o, idx_t ncol, idx_t nrow)
{
	idx_t shown = ncol < MAX_SHOWN ? ncol : MAX_SHOWN;
	for (idx_t c = 0; c < shown; c++) {
		const char *n = duck.duckdb_column_name(o->res, c);
		char *h = text_escape(n, strlen(n));
		o->w[c] = h ? strlen(h) : 0;
		free(h);
		for (idx_t r = 0; r < nrow && r < WIDTH_ROWS; r++) {
			int null;
			char *t = cell_text(o->res, c, r, &null);
			if (!t)
				return -ENOMEM;
			size_t len = strlen(t);
			o->w[c] = len > o->w[c] ? (len < MAX_WIDTH ? len : MAX_WIDTH) : o->w[c];
			free(t);
		}
	}
	return put_rows(o, shown, nrow);
}

/* One JSON object per row, its keys the columns' names. */
static int print_json(duckdb_result *res, idx_t ncol, idx_t nrow, FILE *f)
{
	for (idx_t r = 0; r < nrow; r++) {
		fputc('{', f);
		for (idx_t c = 0; c < ncol; c++) {
			const char *n = duck.duckdb_column_name(res, c);
			char *k = text_json(n, strlen(n)), *v = NULL;
			int null = duck.duckdb_value_is_null(res, c, r);
			char *raw = null ? NULL : duck.duckdb_value_varchar(res, c, r);
			int num = numeric(duck.duckdb_column_type(res, c));
			if (!null && raw)
				v = num ? strdup(raw) : text_json(raw, strlen(raw));
			duck.duckdb_free(raw);
			if (!k || (!null && !v)) {
				free(k);
				free(v);
				return -ENOMEM;
			}
			/* inf and nan have no JSON number: null. */
			int bad = num && v && (strstr(v, "inf") || strstr(v, "nan"));
			fprintf(f, "%s%s:%s", c ? "," : "", k, null || bad ? "null" : v);
			free(k);
			free(v);
		}
		fputs("}\n", f);
	}
	return 0;
}

int sql_print(duckdb_result *res, int format, FILE *f)
{
	idx_t ncol = duck.duckdb_column_count(res), nrow = duck.duckdb_row_count(res);
	if (format == SQL_JSON)
		return print_json(res, ncol, nrow, f);
	struct out o = { .f = f, .csv = format == SQL_CSV, .res = res };
	return o.csv ? put_rows(&o, ncol, nrow) : print_table(&o, ncol, nrow);
}
