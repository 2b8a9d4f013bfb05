/*
 * samples_chrome.c - samples as the Chrome document's "samples" and
 * "stackFrames" members; samples.h says how.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/analysis/samples.h"
#include "tools/pipeline/export_state.h"
#include "tools/pipeline/text.h"

struct chs {
	FILE *f;
	const struct tables *t;
	uint64_t pid, n, nf; /* samples, frames written */
};

static int put_sample(void *ctx, uint64_t ns, uint32_t thread, uint32_t node)
{
	struct chs *c = ctx;
	int w = fprintf(c->f,
			"%s\n{\"pid\":%" PRIu64 ",\"tid\":%u,\"ts\":%" PRIu64 ".%03u3,\"name\":"
			"\"sample\",\"sf\":%u,\"weight\":1}",
			c->n++ ? "," : ",\"samples\":[", export_pid(c->t, thread, c->pid),
			export_os_tid(c->t, thread), ns / 1000, (unsigned)(ns % 1000), node);
	return w < 0 ? -EIO : 0;
}

/* One entry of "stackFrames": a zone or a function; a thread's root is
 * none (its children have no parent). */
static int put_frame(void *ctx, size_t i, const struct samples_node *x)
{
	struct chs *c = ctx;
	if (x->parent == SAMPLES_ROOT || !c->n)
		return 0;
	size_t len = 0;
	const char *s = x->zone ? tables_name(c->t, x->zone, &len) : x->fn;
	if (s && !x->zone)
		len = strlen(s);
	char *lit = text_json(s ? s : "?", s ? len : 1), parent[32] = "";
	if (!lit)
		return -ENOMEM;
	if (!x->top)
		snprintf(parent, sizeof(parent), ",\"parent\":\"%u\"", x->parent);
	int w = fprintf(c->f, "%s\n\"%zu\":{\"name\":%s,\"category\":\"%s\"%s}",
			c->nf++ ? "," : "\n],\"stackFrames\":{", i, lit, x->zone ? "zone" : "function",
			parent);
	free(lit);
	return w < 0 ? -EIO : 0;
}

int samples_chrome(kt_reader *r, const struct tables *t, FILE *f, uint64_t pid)
{
	struct chs c = { f, t, pid, 0, 0 };
	struct samples_filter flt = { .sample = put_sample, .ctx = &c };
	struct samples_result res;
	/* The samples as they come, then the tree they name. */
	int rc = samples_walk(r, &flt, put_frame, &c, &res);
	if (!rc && c.n && fprintf(f, "%s\n}", c.nf ? "" : "\n],\"stackFrames\":{") < 0)
		rc = -EIO;
	return rc;
}
