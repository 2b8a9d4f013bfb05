/*
 * tools/recover.h - `katra recover`: rebuild the trace of a process that
 * died from its crash directory (ring/crash.h).  Single-threaded.
 */
#ifndef KATRA_TOOLS_RECOVER_H
#define KATRA_TOOLS_RECOVER_H

#include <stdint.h>

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

/* The work one recovery may do, whatever the directory holds. */
struct recover_caps {
	uint32_t slots;          /* ring slots of the control file read */
	uint64_t ring_bytes;     /* ring bytes read, all rings together */
	uint32_t names_bytes;    /* bytes of the names log read */
};

/* The caps of `katra recover`, stated in its --help. */
extern const struct recover_caps recover_caps;

/*
 * recover_dir - what `katra recover DIR` does, with @caps in place of
 * recover_caps (tests and the fuzz target use small ones).  @out and
 * @trace may be NULL (--out and --trace not given).  Messages go to
 * stderr, the result line to stdout.  Return: as cmd_recover().
 */
int recover_dir(const char *dir, const char *out, const char *trace,
		const struct recover_caps *caps);

#endif
