/*
 * top_snap.c - `katra top`'s snapshot key: the flight session's newest
 * window (the screen's 1 s or 10 s, or all the rings hold) into
 * snapshot-PID-N.katra in the current directory, as `katra snapshot`
 * writes it.
 *
 * The snapshot is `katra snapshot`'s own snapshot_take(), called here
 * with its timeout (snapshot.h), its one line (what was written, or why
 * not) handed back in place of printed: it is the screen's status line,
 * and nothing reaches the terminal under curses.  The screen waits for
 * it: the request and the copy are bounded (the timeout here, the
 * process's own limits on a snapshot: SECURITY.md §5).
 */
#include <stdio.h>
#include <string.h>

#include "tools/cmd/cli.h"
#include "tools/cmd/snapshot.h"
#include "tools/cmd/top.h"

void top_snapshot(struct top_ui *ui)
{
	static const uint64_t ages[2] = { 1000000000ull, 10000000000ull };
	char name[64], said[160] = "";
	snprintf(name, sizeof(name), "snapshot-%ld-%u.katra", ui->pid, ++ui->snapshots);
	struct snap_args a = { .out = name, .said = said, .said_cap = sizeof(said) };
	if (ui->window < 2)
		a.max_age_ns = ages[ui->window];
	if (snapshot_take(ui->pid, name, &a, 0) == EXIT_OK)
		snprintf(ui->status, sizeof(ui->status), "%s: %.120s", name, said);
	else
		snprintf(ui->status, sizeof(ui->status), "no snapshot: %.170s",
			 strncmp(said, "katra snapshot: ", 16) ? said : said + 16);
}
