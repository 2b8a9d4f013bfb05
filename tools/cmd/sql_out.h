/*
 * sql_out.h - how `katra sql` prints a result: a table for people
 * (columns aligned, numbers right), CSV (a header, RFC 4180 quoting, NULL
 * as an empty field) or JSON lines (one object a row, numbers as numbers,
 * NULL, inf and nan as null).  Every string is escaped as tools/pipeline/text.h
 * says, so a hostile name cannot drive a terminal or forge a line.
 *
 * The command's thread.
 */
#ifndef KT_TOOLS_SQL_OUT_H
#define KT_TOOLS_SQL_OUT_H

#include <stdio.h>

#include "tools/cmd/sql_duck.h"

enum { SQL_TABLE, SQL_CSV, SQL_JSON };

/* sql_print - @res (a materialized result) to @f as @format says.
 * Returns 0 or -ENOMEM. */
int sql_print(duckdb_result *res, int format, FILE *f);

#endif
