/*
 * tools/cmd/recover.h - `katra recover` (tools/cmd/cmd_recover.c): rebuild the
 * trace of a process that died from its crash directory (recover/).
 * Single-threaded.
 */
#ifndef KATRA_TOOLS_RECOVER_H
#define KATRA_TOOLS_RECOVER_H

#include "recover/recover.h"

/*
 * cmd_recover - `katra recover DIR [--out OUT] [--trace TRACE]` and
 * `katra recover --list [PARENT]`; @argv[0] is "recover".
 *
 * Return: the exit status: 0 recovered with no problem found; 3 recovered,
 * but parts were damaged, missing or refused (each problem was printed
 * with its file and offset); 1 nothing written (the process is alive, DIR
 * is not a crash directory it may read, or OUT could not be written); 2
 * usage.
 */
int cmd_recover(int argc, char **argv);

/*
 * recover_dir - what `katra recover DIR` does, with @caps in place of
 * kt__recover_caps (tests and the fuzz target use small ones).  @out and
 * @trace may be NULL (--out and --trace not given).  Messages go to
 * stderr, the result line to stdout.  Return: as cmd_recover().
 */
int recover_dir(const char *dir, const char *out, const char *trace,
		const struct kt__recover_caps *caps);

#endif
