/*
 * when.c - a command's time window, as when.h says it is written.
 */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include <katra/record.h>
#include "tools/cmd/cli.h"
#include "tools/cmd/when.h"

#define NS_PER_S UINT64_C(1000000000)

struct unit {
	const char *name;
	uint64_t ns;
};

static const struct unit units[] = {
	{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", NS_PER_S },
};

/* @*v * @m + @a, or -1 on overflow. */
static int mul_add(uint64_t *v, uint64_t m, uint64_t a)
{
	if (*v > (UINT64_MAX - a) / m)
		return -1;
	*v = *v * m + a;
	return 0;
}

/* Digits from @s up to @end into @v; how many, or -1 on overflow. */
static int digits(const char *s, const char *end, uint64_t *v)
{
	int n = 0;
	for (*v = 0; s + n < end && s[n] >= '0' && s[n] <= '9'; n++)
		if (mul_add(v, 10, (uint64_t)(s[n] - '0')))
			return -1;
	return n;
}

/* The unit @s names, from its end to @end; NULL if none. */
static const struct unit *unit_of(const char *s, const char *end)
{
	for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++)
		if ((size_t)(end - s) == strlen(units[k].name) &&
		    !memcmp(s, units[k].name, (size_t)(end - s)))
			return &units[k];
	return NULL;
}

/* [@s, @end) as a time; 0, or -1 when it is not one. */
static int parse_when(const char *s, const char *end, struct when *w)
{
	w->kind = WHEN_ABS;
	if (s < end && *s == '+') {
		w->kind = WHEN_REL;
		s++;
	}
	uint64_t whole, frac = 0;
	int n = digits(s, end, &whole), nf = 0;
	if (n <= 0)
		return -1;
	s += n;
	if (s < end && *s == '.') {
		/* Up to 9 decimals are ns of a second; more would be below 1 ns. */
		if ((nf = digits(++s, end, &frac)) <= 0 || nf > 9)
			return -1;
		s += nf;
	}
	const struct unit *u = s < end ? unit_of(s, end) : NULL;
	if (s < end && !u)
		return -1;
	if (u)
		w->kind = WHEN_REL;
	else if (nf)
		return -1; /* a fraction of a nanosecond */
	uint64_t scale = u ? u->ns : 1, f = frac * scale;
	for (int k = 0; k < nf; k++)
		f /= 10;
	w->v = whole;
	return mul_add(&w->v, scale, f);
}

int opt_when(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	struct when *w = dst;
	if (parse_when(value, value + strlen(value), w))
		return opt_bad(cmd, o, value);
	w->given = 1;
	return 0;
}

/* "A..B" into @a and @b's words; -1 without "..". */
static int split(const char *value, const char **mid)
{
	*mid = strstr(value, "..");
	return *mid ? 0 : -1;
}

int opt_when_window(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	struct when_window *w = dst;
	const char *mid;
	if (split(value, &mid) || parse_when(value, mid, &w->from) ||
	    parse_when(mid + 2, value + strlen(value), &w->to))
		return opt_bad(cmd, o, value);
	w->from.given = w->to.given = 1;
	return 0;
}

int opt_when_frames(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	struct when_window *w = dst;
	const char *mid, *end = value + strlen(value);
	if (split(value, &mid) || digits(value, mid, &w->from.v) != mid - value ||
	    mid == value || digits(mid + 2, end, &w->to.v) != end - (mid + 2) ||
	    mid + 2 == end || w->from.v > w->to.v)
		return opt_bad(cmd, o, value);
	w->from.kind = w->to.kind = WHEN_FRAME;
	w->from.given = w->to.given = 1;
	return 0;
}

int when_early(const char *cmd, const struct when_window *w)
{
	int ends_in_frames = (w->from.kind == WHEN_FRAME) + (w->to.kind == WHEN_FRAME);
	if (ends_in_frames == 1)
		return usage_error("%s: --frames takes no --from, --to or --window", cmd);
	if (!w->from.given || !w->to.given || w->from.kind != w->to.kind || ends_in_frames)
		return OPTS_GO;
	return opts_window(cmd, w->from.v, w->to.v);
}

/*
 * One pass for --frames @a..@b: @from is the mark before the first mark
 * numbered @a or more (0, the trace's start, if it is the first mark);
 * @to the last mark numbered @b or less after it.  Returns 1 when both
 * were found, 0 when not, or the reader's negative code.
 */
static int frames(kt_reader *r, uint64_t a, uint64_t b, uint64_t *from, uint64_t *to)
{
	kt_event ev;
	kt_value v;
	uint64_t prev = 0;
	int rc, have_from = 0, have_to = 0;
	while ((rc = kt_reader_next(r, &ev)) > 0) {
		if (!kt_event_get_value(&ev, &v) || v.kind != KT_VALUE_FRAME)
			continue;
		uint64_t n = v.u64, ns = kt_reader_get_time_ns(r, ev.ts);
		if (!have_from && n >= a) {
			*from = prev;
			have_from = 1;
		}
		if (have_from && n <= b) {
			*to = ns;
			have_to = 1;
		}
		prev = ns;
	}
	/* Frames found before a bad chunk still cut the window; the pass
	 * that follows says what was wrong. */
	return have_to ? 1 : rc;
}

static uint64_t at(const struct when *w, uint64_t start, uint64_t open)
{
	if (!w->given)
		return open;
	if (w->kind == WHEN_ABS)
		return w->v;
	return w->v > UINT64_MAX - start ? UINT64_MAX : start + w->v;
}

int when_resolve(const char *cmd, const char *path, const struct when_window *w,
		 kt_reader *r, uint64_t *from, uint64_t *to)
{
	if (w->from.given && w->from.kind == WHEN_FRAME) {
		int rc = frames(r, w->from.v, w->to.v, from, to);
		if (rc < 0)
			return pass_failed(path, r, rc);
		kt_reader_rewind(r);
		if (rc == 0)
			return usage_error("%s: %s has no frames %" PRIu64 "..%" PRIu64, cmd,
					   path, w->from.v, w->to.v);
		return OPTS_GO;
	}
	uint64_t start = kt_reader_get_header(r)->start_mono_ns;
	*from = at(&w->from, start, 0);
	*to = at(&w->to, start, UINT64_MAX);
	return opts_window(cmd, *from, *to);
}
