/*
 * report_page.h - the self-contained HTML pages of `katra report` and
 * `katra diff --html`: one file each, its CSS and script inline and its data
 * a JSON block, so it opens from disk with nothing fetched (the page's
 * Content-Security-Policy forbids every request).
 *
 * Any thread, one page per stream.
 */
#ifndef KT_TOOLS_REPORT_PAGE_H
#define KT_TOOLS_REPORT_PAGE_H

#include <stdio.h>

#include <jansson.h>

/*
 * A page: its @title (not from a file: written as is), CSS added to the
 * shared (or NULL), its @body's markup, and its @script, which runs after
 * the shared prelude: `D` (the data, parsed), `$(id)`, `el(tag, text,
 * cls)` (an element holding text, never markup), `ns(v)` (a duration) and
 * `sortable(table, cols, rows, state, fill)` (a table sorted by a click on
 * a column's header).
 */
struct page {
	const char *title, *css, *body, *script;
};

/*
 * page_write - @p holding @data to @f.  The data is compact ASCII JSON with
 * '<', '>' and '&' written as \u003c, \u003e and \u0026, so no string from a
 * file can end its script element.  Returns 0, -ENOMEM or -EIO.
 */
int page_write(FILE *f, const struct page *p, const json_t *data);

#endif
