/*
 * tools/recover.h - `katra recover`: rebuild the trace of a process that
 * died from its crash directory (ring/crash.h).
 */
#ifndef KATRA_TOOLS_RECOVER_H
#define KATRA_TOOLS_RECOVER_H

/*
 * cmd_recover - `katra recover DIR [--out OUT]` and `katra recover --list
 * [PARENT]`; @argv[0] is "recover".
 *
 * Return: the exit status: 0 recovered with no problem found; 3 recovered,
 * but parts were damaged or missing (each problem was printed with its file
 * and offset); 1 nothing written (the process is alive, DIR is not a crash
 * directory, or OUT could not be written); 2 usage.
 */
int cmd_recover(int argc, char **argv);

#endif
