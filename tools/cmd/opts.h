/*
 * opts.h - the one way a katra subcommand reads its arguments.
 *
 * A command describes its options in a table (name, how a value is read,
 * where it is stored) and opts_parse() reads the words in order: the first
 * problem ends the reading and is the one usage error said, so a command
 * never reports a later word before an earlier one.  A word that starts
 * with '-' (a lone "-" is a file) is an option; one that takes a value
 * takes the next word, whatever it looks like; -h and --help print the
 * command's help and end the reading.  Any other word is the command's
 * FILE, or its IN then its OUT.
 *
 * The command's one thread.
 */
#ifndef KT_TOOLS_OPTS_H
#define KT_TOOLS_OPTS_H

#include <stddef.h>
#include <stdint.h>

struct opt;

/*
 * Read @value, the word after option @o of command @cmd, into @dst.
 * Returns 0, or the exit status of the usage error it said (opt_bad()).
 */
typedef int opt_read_fn(const char *cmd, const struct opt *o, const char *value, void *dst);

struct opt {
	const char *name;      /* "--json"; NULL ends a table */
	opt_read_fn *read;     /* NULL: a flag, which stores @flag as an int */
	size_t offset;         /* where in the command's options it is stored */
	int flag;
	const char *wants;     /* the value it wants, for opt_bad() */
	const char *required;  /* when not NULL, an option that must be given:
				* the words said when it is not */
};

struct opts_spec {
	const char *cmd;       /* "dump" */
	const char *help;      /* printed for -h or --help */
	const struct opt *opts;
	int npos;              /* 1: FILE; 2: IN and OUT */
	/* The words for an option the command does not know, or one whose
	 * value is missing: "unknown option or missing value", or "unknown
	 * option" (as compress, verify, ... have always said it). */
	const char *unknown;
};

#define OPTS_GO (-1)

/*
 * opts_parse - read @argv[1..@argc) (@argv[0] is the command) as @s says:
 * options into @dst, the other words into @pos[0..s->npos).
 *
 * Return: OPTS_GO to run the command; EXIT_OK after printing the help;
 * EXIT_USAGE after saying the first usage error.
 */
int opts_parse(const struct opts_spec *s, int argc, char **argv, void *dst, const char **pos);

/* opt_bad - say "CMD: OPTION wants WANTS, not 'VALUE'".  Returns EXIT_USAGE. */
int opt_bad(const char *cmd, const struct opt *o, const char *value);

/* opt_str - the word itself, as a const char *. */
opt_read_fn opt_str;
/* opt_ns - a uint64_t of nanoseconds, in decimal. */
opt_read_fn opt_ns;

/* opts_window - a usage error when --from @from is after --to @to, which
 * could only select nothing.  Returns OPTS_GO or EXIT_USAGE. */
int opts_window(const char *cmd, uint64_t from, uint64_t to);

#define MAX_THREAD_ARGS 64

/* Thread ids given with --thread, in order. */
struct thread_list {
	uint32_t ids[MAX_THREAD_ARGS];
	int n;
};

/* opt_thread - one more thread id (1 to UINT32_MAX) into a struct thread_list. */
opt_read_fn opt_thread;

/* The options of a command whose one option is --json, kept as an int (1)
 * at the start of its options. */
extern const struct opt opts_json[];

/* The options dump and slice share, stored at @off. */
#define OPT_THREAD(off) { "--thread", opt_thread, (off), .wants = "a thread id (1 to 4294967295)" }
#define OPT_FROM(off) { "--from", opt_ns, (off), .wants = "nanoseconds" }
#define OPT_TO(off) { "--to", opt_ns, (off), .wants = "nanoseconds" }

#endif
