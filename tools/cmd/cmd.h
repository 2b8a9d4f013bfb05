/*
 * cmd.h - the katra subcommands, one file each (tools/cmd/cmd_<name>.c), as
 * tools/cmd/main.c's table runs them.
 *
 * Each takes the words from its own name on (@argv[0] is "verify", ...),
 * reads them with tools/cmd/opts.h, computes its result and prints it as text
 * or JSON, and returns the exit status (tools/cmd/cli.h: 0 success, 1 error or
 * corrupt file, 2 usage, 3 truncated file).  `katra recover` is
 * cmd_recover() in tools/cmd/recover.h.
 *
 * The command's one thread.
 */
#ifndef KT_TOOLS_CMD_H
#define KT_TOOLS_CMD_H

int cmd_info(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_compress(int argc, char **argv);
int cmd_decompress(int argc, char **argv);
int cmd_slice(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_sql(int argc, char **argv); /* and export --parquet: cmd_export_parquet() */
int cmd_export_parquet(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_merge(int argc, char **argv);

#endif
