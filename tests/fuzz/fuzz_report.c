/*
 * fuzz_report - `katra report` over any bytes: the one pass (stats hooks,
 * the flame tree, frame points, time bins), the page's data and the page.
 * It must never crash or leak, and the data block must hold no '<' (so no
 * string from the file can close its script element) and parse as JSON.
 * The frame points then go through diff's bootstrap (tools/analysis/diff.h) as
 * both sides, which must find no change.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <katra/reader.h>
#include "tests/fuzz/parses.h"
#include "tools/analysis/diff.h"
#include "tools/analysis/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_page(const char *s, size_t len)
{
	static const char open[] = "<script type=\"application/json\" id=\"data\">";
	const char *from = strstr(s, open); /* open_memstream() ends it with a NUL */
	if (!from)
		__builtin_trap();
	from += sizeof(open) - 1;
	const char *to = memchr(from, '<', len - (size_t)(from - s));
	if (!to || strncmp(to, "</script>", 9))
		__builtin_trap();
	must_parse(from, (size_t)(to - from));
}

static void frames_diff(const struct report *rep)
{
	uint64_t a[REPORT_POINTS], b[REPORT_POINTS];
	for (size_t i = 0; i < rep->npoints; i++)
		a[i] = b[i] = rep->points[i].len;
	struct diff_row row;
	if (!diff_compare(a, rep->npoints, b, rep->npoints, 0.99, 0, 2, &row) &&
	    row.verdict != DIFF_SAME && row.verdict != DIFF_TOO_FEW)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kt_reader *r;
	if (kt_reader_open_mem(data, size, NULL, &r))
		return 0;
	struct report *rep = calloc(1, sizeof(*rep));
	if (rep && !report_collect(r, rep)) {
		json_t *d = report_json(rep, kt_reader_get_header(r), NULL, "fuzz</script>.katra");
		char *text = NULL;
		size_t len = 0;
		FILE *m = d ? open_memstream(&text, &len) : NULL;
		int rc = m ? report_page(m, d) : -1;
		if (m)
			fclose(m);
		if (rc == 0)
			check_page(text, len);
		free(text);
		json_decref(d);
		frames_diff(rep);
	}
	if (rep)
		report_free(rep);
	free(rep);
	kt_reader_close(r);
	return 0;
}
