/*
 * opts.c - reading a subcommand's arguments; opts.h says how.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cmd/cli.h"
#include "tools/cmd/opts.h"

static const struct opt *find(const struct opt *o, const char *name)
{
	for (; o && o->name; o++)
		if (!strcmp(o->name, name))
			return o;
	return NULL;
}

/* The word @a that is not an option: the next free place, or an error. */
static int positional(const struct opts_spec *s, const char **pos, const char *a)
{
	for (int k = 0; k < s->npos; k++) {
		if (!pos[k]) {
			pos[k] = a;
			return OPTS_GO;
		}
	}
	if (s->npos == 1)
		return usage_error("%s: more than one file ('%s')", s->cmd, a);
	return usage_error("%s: unexpected argument '%s'", s->cmd, a);
}

/* After the last word: what is required and missing, in that order. */
static int complete(const struct opts_spec *s, const char **pos, unsigned seen)
{
	unsigned bit = 1;
	for (const struct opt *o = s->opts; o && o->name; o++, bit <<= 1)
		if (o->required && !(seen & bit))
			return usage_error("%s: %s", s->cmd, o->required);
	for (int k = 0; k < s->npos; k++) {
		if (pos[k])
			continue;
		if (s->npos == 1)
			return usage_error("%s: missing FILE", s->cmd);
		return usage_error("%s: needs IN and OUT", s->cmd);
	}
	return OPTS_GO;
}

int opts_parse(const struct opts_spec *s, int argc, char **argv, void *dst, const char **pos)
{
	unsigned seen = 0; /* bit i: s->opts[i] was given */
	for (int k = 0; k < s->npos; k++)
		pos[k] = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const struct opt *o = a[0] == '-' ? find(s->opts, a) : NULL;
		int rc;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(s->help, stdout);
			return EXIT_OK;
		} else if (o && !o->read) {
			*(int *)(void *)((char *)dst + o->offset) = o->flag;
		} else if (o && i + 1 < argc) {
			if ((rc = o->read(s->cmd, o, argv[++i], (char *)dst + o->offset)))
				return rc;
		} else if (a[0] == '-' && a[1]) {
			return usage_error("%s: %s '%s'", s->cmd, s->unknown, a);
		} else if ((rc = positional(s, pos, a)) != OPTS_GO) {
			return rc;
		}
		if (o)
			seen |= 1u << (o - s->opts);
	}
	return complete(s, pos, seen);
}

const struct opt opts_json[] = { { .name = "--json", .flag = 1 }, { .name = NULL } };

int opts_window(const char *cmd, uint64_t from, uint64_t to)
{
	if (from <= to)
		return OPTS_GO;
	return usage_error("%s: --from %" PRIu64 " is after --to %" PRIu64, cmd, from, to);
}

int opt_bad(const char *cmd, const struct opt *o, const char *value)
{
	return usage_error("%s: %s wants %s, not '%s'", cmd, o->name, o->wants, value);
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

int opt_str(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	(void)cmd;
	(void)o;
	*(const char **)dst = value;
	return 0;
}

int opt_ns(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	return parse_u64(value, dst) ? opt_bad(cmd, o, value) : 0;
}

int opt_thread(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	struct thread_list *l = dst;
	uint64_t v;
	if (l->n == MAX_THREAD_ARGS)
		return usage_error("%s: at most %d %s options", cmd, MAX_THREAD_ARGS, o->name);
	if (parse_u64(value, &v) || v == 0 || v > UINT32_MAX)
		return opt_bad(cmd, o, value);
	l->ids[l->n++] = (uint32_t)v;
	return 0;
}
