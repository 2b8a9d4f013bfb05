/*
 * main.c - katra, the offline tool: verify, inspect, export and rewrite
 * .katra trace files, and recover the trace of a process that died.
 *
 * One table names the subcommands (tools/cmd/cmd.h, one file each), runs them
 * and writes `katra --help` from their summaries.  Every file and string a
 * subcommand reads may be hostile: tools/cmd/cli.h says how inputs, outputs
 * and messages are kept safe; time and memory follow the file's size,
 * never a number in it.
 *
 * Exit codes: 0 success / valid, 1 error (out of memory, I/O) or corrupt
 * file, 2 usage error, 3 partial: a truncated file (a valid prefix), or
 * damaged frames stats and export skipped.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <katra/version.h>
#include "tools/cmd/cli.h"
#include "tools/cmd/cmd.h"
#include "tools/pipeline/fmt.h"
#include "tools/cmd/recover.h"

/* flush/autostart.c: a script under `katra record` that runs katra does
 * not trace katra itself. */
extern const int kt__record_exempt;
const int kt__record_exempt = 1;

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *synopsis; /* its words, as `katra --help` shows them */
	const char *summary;  /* what it does: a line, or lines split by \n */
};

/* In the order `katra --help` lists them. */
static const struct command commands[] = {
	{ "info", cmd_info, "info FILE", "header, clock, threads, names, counts, time span" },
	{ "verify", cmd_verify, "verify FILE [--json]",
	  "check every frame and checksum\n"
	  "exit 0 valid, 1 corrupt, 3 truncated (valid prefix)" },
	{ "stats", cmd_stats, "stats FILE [--json]",
	  "per thread, per name (zone durations), frame times" },
	{ "report", cmd_report, "report IN [-o OUT.html]",
	  "one self-contained HTML page: frame times,\n"
	  "zones, flame graph of self time, threads, counters" },
	{ "diff", cmd_diff, "diff A B [--json]",
	  "zone and frame times of B against A: change,\n"
	  "interval, verdict [--fail-on slower --threshold 5%]" },
	{ "sql", cmd_sql, "sql 'QUERY' FILE...",
	  "DuckDB's SQL over views of the traces (zones,\n"
	  "frames, ...) [--format table|csv|json]" },
	{ "dump", cmd_dump, "dump FILE",
	  "events of all threads in timestamp order\n"
	  "[--format text|jsonl] [--thread T] [--from NS --to NS]" },
	{ "replay", cmd_replay, "replay FILE",
	  "the same, paced to the original timing\n"
	  "[--speed X | --max] [--max-gap S] [--format text|jsonl]" },
	{ "export", cmd_export, "export --chrome IN OUT.json",
	  "Chrome Trace Event Format (Perfetto UI)\n"
	  "[--collapsed | --perfetto | --fxt] IN OUT" },
	{ "decompress", cmd_decompress, "decompress IN OUT", "rewrite LZ4 chunks raw" },
	{ "compress", cmd_compress, "compress IN OUT",
	  "rewrite chunks with LZ4 (timestamps delta-coded)" },
	{ "slice", cmd_slice, "slice IN OUT",
	  "a smaller valid trace [--from NS] [--to NS] [--thread T]" },
	{ "snapshot", cmd_snapshot, "snapshot PID [--out OUT]",
	  "ask a running process's flight session for its\n"
	  "newest window (your own processes only)" },
	{ "top", cmd_top, "top PID", "a running process's frames, zones and threads,\n"
	  "live (your own processes only)" },
	{ "record", cmd_record, "record -- CMD ARGS...",
	  "run CMD with tracing on, no session code needed:\n"
	  "it and every katra-linked process it starts\n"
	  "[-o OUT] [--dir DIR] [--flight] [--crash-dir D]" },
	{ "merge", cmd_merge, "merge A B ... -o OUT",
	  "one trace of several processes' traces, each\n"
	  "process's threads under it, on one clock" },
	{ "recover", cmd_recover, "recover DIR [--out OUT]",
	  "rebuild the trace of a process that died from\n"
	  "its crash directory; --list finds leftovers" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))
#define SYNOPSIS_WIDTH 20 /* a wider synopsis is followed by three spaces */

/* One command's lines: its synopsis, then its summary in a column. */
static void usage_command(FILE *f, const struct command *c)
{
	const char *line = c->summary, *nl;
	int wide = strlen(c->synopsis) > SYNOPSIS_WIDTH;
	fprintf(f, "  %-*s%s", SYNOPSIS_WIDTH, c->synopsis, wide ? "   " : " ");
	while ((nl = strchr(line, '\n'))) {
		fprintf(f, "%.*s\n%*s", (int)(nl - line), line, SYNOPSIS_WIDTH + 3, "");
		line = nl + 1;
	}
	fprintf(f, "%s\n", line);
}

static void usage_main(FILE *f)
{
	fputs("usage: katra <command> [options] FILE\n\ncommands:\n", f);
	for (size_t i = 0; i < NCOMMANDS; i++)
		usage_command(f, &commands[i]);
	fputs("\n"
	      "options:\n"
	      "  -h, --help           this text; `katra <command> --help` for one command\n"
	      "  -V, --version        the tool, library and format versions\n"
	      "\n"
	      "exit: 0 success, 1 error or corrupt file, 2 usage, 3 partial (a\n"
	      "truncated file; damaged frames stats and export skipped, said on stderr).\n"
	      "Strings from files are printed escaped (\\n, \\xNN, ...).\n",
	      f);
}

static int run(int argc, char **argv)
{
	if (argc < 2) {
		usage_main(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage_main(stdout);
		return EXIT_OK;
	}
	if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
		printf("katra %s (library %s, trace format %u)\n", KT_VERSION_STRING,
		       kt_version_string(), KT_FORMAT_VERSION);
		return EXIT_OK;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(cmd, commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	return usage_error("unknown command '%s'", cmd);
}

int main(int argc, char **argv)
{
	int rc = run(argc, argv);
	/* Output that never arrived (a full disk, /dev/full) is a failure to
	 * say, not a success: every command's stdout ends here. */
	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		int e = fmt_write_errno() ? fmt_write_errno()
			: stdout_errno() ? stdout_errno() : errno ? errno : EIO;
		fprintf(stderr, "katra: standard output: %s\n", strerror(e));
		return rc == EXIT_USAGE ? rc : EXIT_BAD;
	}
	return rc;
}
