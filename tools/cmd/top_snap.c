/*
 * top_snap.c - `katra top`'s snapshot key: the flight session's newest
 * window (the screen's 1 s or 10 s, or all the rings hold) into
 * snapshot-PID-N.katra in the current directory, as `katra snapshot`
 * writes it.
 *
 * The snapshot is `katra snapshot` itself, run in a child whose stdout and
 * stderr go to a pipe: its one line (what was written, or why not) is
 * then the screen's status line, and nothing it prints reaches the
 * terminal under curses.  The screen waits for it: the process bounds a
 * snapshot's request and copy (SECURITY.md §5).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/cmd/cmd.h"
#include "tools/cmd/top.h"

/* The child: `katra snapshot PID --out NAME [--max-age NS]`, its output
 * into @fd. */
static void snap_child(const struct top_ui *ui, const char *name, int fd)
{
	static const char *const ages[2] = { "1000000000", "10000000000" };
	char pid[24];
	snprintf(pid, sizeof(pid), "%ld", ui->pid);
	char *argv[7] = { "snapshot", pid, "--out", (char *)name, NULL, NULL, NULL };
	int argc = 4;
	if (ui->window < 2) {
		argv[argc++] = "--max-age";
		argv[argc++] = (char *)ages[ui->window];
	}
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	int rc = cmd_snapshot(argc, argv);
	fflush(NULL);
	_exit(rc);
}

/* The first line of what the child said, at most @cap - 1 bytes. */
static void first_line(int fd, char *out, size_t cap)
{
	size_t got = 0;
	ssize_t n;
	while (got + 1 < cap && (n = read(fd, out + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = 0;
	out[strcspn(out, "\n")] = 0;
	/* The rest, unread, so the child never blocks on a full pipe. */
	char sink[256];
	while (read(fd, sink, sizeof(sink)) > 0)
		;
}

void top_snapshot(struct top_ui *ui)
{
	char name[64], said[160];
	int p[2];
	snprintf(name, sizeof(name), "snapshot-%ld-%u.katra", ui->pid, ++ui->snapshots);
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(ui->status, sizeof(ui->status), "snapshot: %s", strerror(errno));
		return;
	}
	pid_t child = fork();
	if (child == 0)
		snap_child(ui, name, p[1]);
	close(p[1]);
	if (child < 0) {
		close(p[0]);
		snprintf(ui->status, sizeof(ui->status), "snapshot: %s", strerror(errno));
		return;
	}
	first_line(p[0], said, sizeof(said));
	close(p[0]);
	int st = 0;
	while (waitpid(child, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		snprintf(ui->status, sizeof(ui->status), "%s: %.120s", name, said);
	else
		snprintf(ui->status, sizeof(ui->status), "no snapshot: %.170s",
			 strncmp(said, "katra snapshot: ", 16) ? said : said + 16);
}
