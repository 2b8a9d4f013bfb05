/*
 * katra recover - the command: its arguments, the output file, and what it
 * prints.  The rebuilding itself is recover/'s (recover/recover.h); this
 * file names OUT (never from the directory's contents), creates it beside
 * its final name (tools/pipeline/outfile.h) and renames it when complete, and
 * escapes every message, since they may hold strings from the directory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <katra/error.h>
#include "recover/recover.h"
#include "tools/cmd/cli.h"
#include "tools/cmd/recover.h"

struct opts {
	const char *dir, *out, *trace;
	int list;
};

static void help(void)
{
	printf("usage: katra recover DIR [--out OUT] [--trace TRACE]\n"
	       "       katra recover --list [PARENT]\n"
	       "Rebuilds the trace of a process that died from its crash directory\n"
	       "(PARENT/katra-<pid>, kept when a session runs with crash files):\n"
	       "the trace file's complete frames, the rings' records it lacks,\n"
	       "names and threads, and a summary marked recovered.  OUT defaults\n"
	       "to DIR's last name with .recovered.katra, in the current directory\n"
	       "(never a name from the directory's files); it is created beside its\n"
	       "name and renamed when complete.  Refuses the directory of a process\n"
	       "that still runs.  --trace names the trace file when the control file\n"
	       "cannot.  --list names the leftovers of dead processes in PARENT\n"
	       "(default: $KT_CRASH_DIR, else /dev/shm) that you could recover.\n"
	       "Trust: DIR and its files must be yours, not writable by others, and\n"
	       "not symbolic links; its files must be regular files (a FIFO is never\n"
	       "opened).  The trace path its control file names is read only when it\n"
	       "has no symbolic link, '.' or '..' and names a regular file of yours.\n"
	       "Caps per directory: %u ring slots, %u MiB of ring bytes, %u MiB\n"
	       "of names log and as much of sites log, %u track slots, %u\n"
	       "categories; the trace file is read once, front to back.\n"
	       "exit 0: recovered; 3: recovered, with damage reported; 1: nothing\n"
	       "written; 2: usage.\n",
	       kt__recover_caps.slots, (unsigned)(kt__recover_caps.ring_bytes >> 20),
	       kt__recover_caps.names_bytes >> 20, KT_MAX_TRACKS, KT_MAX_CATEGORIES);
}

static int usage(const char *what, const char *arg)
{
	fprintf(stderr, "katra: recover: %s", what);
	text_put(stderr, arg, strlen(arg));
	fprintf(stderr, "\nTry 'katra recover --help'.\n");
	return EXIT_USAGE;
}

/* Return: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			help();
			return EXIT_OK;
		} else if (!strcmp(a, "--list")) {
			o->list = 1;
		} else if (!strcmp(a, "--out") || !strcmp(a, "--trace")) {
			if (++i == argc)
				return usage(a, " wants a file name");
			*(!strcmp(a, "--out") ? &o->out : &o->trace) = argv[i];
		} else if (a[0] == '-' && a[1]) {
			return usage("unknown option ", a);
		} else if (o->dir) {
			return usage("more than one directory: ", a);
		} else {
			o->dir = a;
		}
	}
	return -1;
}

/* A message of the rebuild on stderr, escaped whole (say() does): it may
 * hold names from the files. */
static void say_line(void *ctx, const char *msg)
{
	(void)ctx;
	say("recover: %s", msg);
}

/*
 * OUT when not given: the name the user typed for DIR, in the current
 * directory ("/dev/shm/katra-42/" gives "katra-42.recovered.katra"); never
 * a name from the directory's contents.  NULL when DIR has no last name
 * ("/", ".", "..") or out of memory.
 */
static char *default_out(const char *dir)
{
	size_t n = strlen(dir), b;
	while (n > 1 && dir[n - 1] == '/')
		n--;
	for (b = n; b > 0 && dir[b - 1] != '/'; b--)
		;
	const char *base = dir + b;
	size_t len = n - b;
	char *out = NULL;
	if (!len || (len <= 2 && !strncmp(base, "..", len)))
		return NULL;
	if (asprintf(&out, "%.*s.recovered.katra", (int)len, base) < 0)
		return NULL;
	return out;
}

static const char *out_error(int rc)
{
	return rc == -EEXIST ? "it is the trace file being recovered: choose another OUT"
	       : rc == -EINVAL ? "not a regular file, device or FIFO"
	       : rc == -ESTALE ? "replaced while it was opened; refusing to write into it"
			       : strerror(-rc);
}

/* The result line, on stdout, escaped whole like the messages. */
static void result_line(kt__recovery *rv, const char *dir, const char *out)
{
	kt__recover_result res;
	char line[8192], over[64] = "";
	kt__recover_result_get(rv, &res);
	if (res.flight)
		snprintf(over, sizeof(over), ", %" PRIu64 " overwritten", res.overwritten);
	snprintf(line, sizeof(line), "%s: recovered %" PRIu64 " events (%" PRIu64 " from the trace "
		 "file, %" PRIu64 " from the rings), %" PRIu64 " dropped%s, %zu threads: %s",
		 dir, res.from_file + res.from_rings, res.from_file, res.from_rings, res.dropped,
		 over, res.threads, out);
	text_put(stdout, line, strlen(line));
	putchar('\n');
}

/* Write OUT (@out, or named from @dir) from the open recovery.  Return:
 * the exit status. */
static int write_out(kt__recovery *rv, const char *dir, const char *out_arg)
{
	char *out = out_arg ? strdup(out_arg) : default_out(dir);
	if (!out) {
		say("recover: %s: no name to make OUT from: give --out", dir);
		return EXIT_BAD;
	}
	outfile of;
	int rc = outfile_open(&of, out, kt__recover_input(rv));
	const char *err = rc ? out_error(rc) : (rc = kt__recover_write(rv, of.fd))
						      ? kt_strerror(rc) : NULL;
	if (!err && (rc = outfile_commit(&of)))
		err = strerror(-rc);
	if (err) {
		say("recover: %s: %s", out, err);
		outfile_abort(&of);
		free(out);
		return EXIT_BAD;
	}
	result_line(rv, dir, out);
	free(out);
	kt__recover_result res;
	kt__recover_result_get(rv, &res);
	return res.problems ? EXIT_PARTIAL : EXIT_OK;
}

int recover_dir(const char *dir, const char *out, const char *trace,
		const struct kt__recover_caps *caps)
{
	kt__recovery *rv;
	int rc = kt__recover_open(&rv, dir, trace, caps, say_line, NULL) ? EXIT_BAD
									  : write_out(rv, dir, out);
	kt__recover_close(rv);
	return rc;
}

/* One leftover of --list: the directory, the pid and the trace path. */
static void list_line(void *ctx, const char *name, uint64_t pid, const char *trace)
{
	const char *parent = ctx;
	text_put(stdout, parent, strlen(parent));
	putchar('/');
	text_put(stdout, name, strlen(name));
	printf("\tpid %" PRIu64 "\t", pid);
	if (*trace)
		text_put(stdout, trace, strlen(trace));
	else
		fputs("(no trace path)", stdout);
	putchar('\n');
}

/* `katra recover --list PARENT`.  Return: the exit status. */
static int list(const char *parent)
{
	unsigned long skipped;
	long found = kt__recover_list(parent, list_line, (void *)parent, &skipped);
	if (found < 0) {
		fprintf(stderr, "katra: recover: ");
		text_put(stderr, parent, strlen(parent));
		fprintf(stderr, ": %s\n", strerror((int)-found));
		return EXIT_BAD;
	}
	if (!found) {
		fputs("katra: recover: no leftovers of dead processes in ", stderr);
		text_put(stderr, parent, strlen(parent));
		fputc('\n', stderr);
	}
	if (skipped)
		fprintf(stderr, "katra: recover: %lu katra-* entries skipped: not yours, not "
			"crash directories, or unsafe ('katra recover DIR' says why)\n", skipped);
	return EXIT_OK;
}

int cmd_recover(int argc, char **argv)
{
	struct opts o = { 0 };
	int rc = parse_args(argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (o.list) {
		const char *env = getenv("KT_CRASH_DIR");
		return list(o.dir ? o.dir : env && *env ? env : "/dev/shm");
	}
	if (!o.dir)
		return usage("missing DIR", "");
	return recover_dir(o.dir, o.out, o.trace, &kt__recover_caps);
}
