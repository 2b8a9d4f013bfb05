/*
 * cmd_top.c - `katra top PID [--once --json] [--window 1|10|all]
 * [--sort KEY] [--filter TEXT] [--at-end]`: a running process's frames,
 * zones, threads and counters, live, from its session's live page
 * (flush/live.h; tools/cmd/top_data.c reads it, tools/cmd/top_screen.c draws it).
 *
 * The screen is refreshed four times a second from a copy of the page
 * taken then; a window is the difference between that copy and the one
 * taken 1 s or 10 s before (or the session's start).  The terminal is
 * given back on q, on Ctrl-C, SIGTERM and SIGHUP; a process that exits
 * leaves its last screen up until a key.
 */
#define _GNU_SOURCE
#include <curses.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/cmd/cli.h"
#include "tools/cmd/cmd.h"
#include "tools/cmd/opts.h"
#include "tools/cmd/top.h"

#define HISTORY 48      /* copies kept: 12 s at TICK_MS */
#define TICK_MS 250

struct top_args {
	int window, sort;       /* -1: not given */
	int once, json, at_end;
	char filter[KT__LIVE_NAME];
};

static int opt_window(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	int w = !strcmp(value, "1") ? 0 : !strcmp(value, "10") ? 1 : !strcmp(value, "all") ? 2 : -1;
	*(int *)dst = w;
	return w < 0 ? opt_bad(cmd, o, value) : 0;
}

static int opt_sort(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	for (int i = 0; i < TOP_SORTS; i++)
		if (!strcmp(value, top_sort_names[i])) {
			*(int *)dst = i;
			return 0;
		}
	return opt_bad(cmd, o, value);
}

static int opt_filter(const char *cmd, const struct opt *o, const char *value, void *dst)
{
	if (strlen(value) >= KT__LIVE_NAME)
		return opt_bad(cmd, o, value);
	memcpy(dst, value, strlen(value) + 1);
	return 0;
}

static const struct opts_spec top_spec = {
	.cmd = "top", .npos = 1, .unknown = "unknown option or missing value",
	.opts = (const struct opt[]){
		{ "--once", NULL, offsetof(struct top_args, once), .flag = 1 },
		{ "--json", NULL, offsetof(struct top_args, json), .flag = 1 },
		{ "--at-end", NULL, offsetof(struct top_args, at_end), .flag = 1 },
		{ "--window", opt_window, offsetof(struct top_args, window), .wants = "1, 10 or all" },
		{ "--sort", opt_sort, offsetof(struct top_args, sort),
		  .wants = "self, total, count, p99 or name" },
		{ "--filter", opt_filter, offsetof(struct top_args, filter),
		  .wants = "text of at most 47 bytes" },
		{ .name = NULL } },
	.help = "usage: katra top PID [--window 1|10|all] [--sort KEY] [--filter TEXT]\n"
		"       katra top PID --once --json [--at-end]\n"
		"Shows process PID's session (recording or flight) live: frame times,\n"
		"the zones of the last 1 s or 10 s (or since the start) by self time,\n"
		"threads (events/s, drops, ring fill, the share of time waited for room)\n"
		"and counters.  Keys: q quit, p pause, s sort, / filter by name, t thread,\n"
		"w window, S snapshot (a flight session's newest window, as `katra\n"
		"snapshot` writes it, into snapshot-PID-N.katra here).  --once prints one refresh (since the start unless --window)\n"
		"and exits; --json as JSON; --at-end first waits for the session to stop\n"
		"and prints its last figures, the whole session's.  Your own processes\n"
		"only; KATRA_LIVE=1 in a process's environment turns its figures on.\n",
};

static volatile sig_atomic_t quit_signal;

static void on_signal(int sig)
{
	quit_signal = sig;
}

static int parse_pid(const char *word, long *pid)
{
	char *end;
	errno = 0;
	*pid = strtol(word, &end, 10);
	if (errno || end == word || *end || *pid <= 0)
		return usage_error("top: PID wants a process id, not '%s'", word);
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Has @pid exited: gone, or a zombie (katra record --top's child, not
 * yet waited for)? */
static int exited(long pid)
{
	char path[48], buf[512];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* The state follows the name's closing parenthesis, the last one. */
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'Z';
}

static int gone(const struct kt__live_page *p, long pid)
{
	return p->ended || (kill((pid_t)pid, 0) < 0 && errno == ESRCH);
}

/* --once: one copy (the last, with --at-end), printed. */
static int top_once(const struct top_source *src, const struct top_args *a, int win, int sort)
{
	static struct kt__live_page now, then;
	int rc = top_read(src, &now);
	while (!rc && a->at_end && !gone(&now, src->pid)) {
		sleep_ms(50);
		rc = top_read(src, &now);
	}
	if (!rc && win < 2) {
		then = now;
		sleep_ms(win ? 10000 : 1000);
		rc = top_read(src, &now);
	}
	if (rc) {
		fprintf(stderr, "katra top: process %ld: the live page could not be read\n",
			src->pid);
		return EXIT_BAD;
	}
	static struct top_view v;
	top_window(&now, win < 2 ? &then : NULL, a->filter, (enum top_sort)sort, &v);
	json_t *j = top_json(&v, src->pid);
	if (!j)
		return EXIT_BAD;
	if (a->json) {
		json_dumpf(j, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
	} else {
		for (size_t i = 0; i < v.nzones; i++)
			printf("%s %llu\n", v.zones[i].name, (unsigned long long)v.zones[i].count);
	}
	json_decref(j);
	return fflush(stdout) ? EXIT_BAD : EXIT_OK;
}

/* The copy a window of @win starts at: the newest at least that old, or
 * the oldest there is; NULL for the whole session. */
static const struct kt__live_page *window_start(const struct kt__live_page *hist, size_t n,
						size_t head, int win)
{
	if (win == 2 || n < 2)
		return NULL;
	const struct kt__live_page *now = &hist[(head + HISTORY - 1) % HISTORY];
	uint64_t want = win ? 10000000000u : 1000000000u;
	for (size_t k = 2; k <= n; k++) {
		const struct kt__live_page *p = &hist[(head + HISTORY - k) % HISTORY];
		if (now->published_ns - p->published_ns >= want || k == n)
			return p;
	}
	return NULL;
}

static void read_filter(struct top_ui *ui)
{
	int rows, cols;
	getmaxyx(stdscr, rows, cols);
	(void)cols;
	move(rows - 1, 0);
	clrtoeol();
	addstr("filter: ");
	echo();
	timeout(-1);
	char buf[KT__LIVE_NAME] = "";
	if (getnstr(buf, sizeof(buf) - 1) == ERR)
		buf[0] = 0;
	noecho();
	timeout(TICK_MS);
	snprintf(ui->filter, sizeof(ui->filter), "%s", buf);
}

/* One key's effect; 1 to quit. */
static int key(int ch, struct top_ui *ui, const struct top_view *v)
{
	switch (ch) {
	case 'q': case 'Q': return 1;
	case 'p': ui->paused = !ui->paused; break;
	case 's': ui->sort = (enum top_sort)((ui->sort + 1) % TOP_SORTS); break;
	case 'w': ui->window = (ui->window + 1) % 3; break;
	case '/': read_filter(ui); break;
	case 'S':
		snprintf(ui->status, sizeof(ui->status), "taking a snapshot...");
		top_draw(v, ui);
		top_snapshot(ui);
		break;
	case 't':
		ui->thread = ui->thread + 1 >= (int)v->nthreads ? -1 : ui->thread + 1;
		break;
	default: break;
	}
	return 0;
}

static void screen_start(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	initscr();
	cbreak();
	noecho();
	curs_set(0);
	keypad(stdscr, TRUE);
	timeout(TICK_MS);
}

/* The screen until q, a signal, or a key after the process exited. */
static int top_live(const struct top_source *src, struct top_ui *ui)
{
	struct kt__live_page *hist = calloc(HISTORY, sizeof(*hist));
	struct top_view *v = calloc(1, sizeof(*v));
	size_t head = 0, n = 0;
	if (!hist || !v) {
		free(hist);
		free(v);
		fprintf(stderr, "katra top: out of memory\n");
		return EXIT_BAD;
	}
	screen_start();
	while (!quit_signal) {
		if (!ui->paused && !ui->ended && top_read(src, &hist[head]) == 0) {
			ui->ended = gone(&hist[head], src->pid);
			head = (head + 1) % HISTORY;
			n += n < HISTORY;
		}
		if (n) {
			const struct kt__live_page *now = &hist[(head + HISTORY - 1) % HISTORY];
			top_window(now, window_start(hist, n, head, ui->window), ui->filter, ui->sort,
				   v);
			top_draw(v, ui);
		}
		if (ui->ended)
			timeout(-1);
		int ch = getch();
		if ((ui->ended && ch != ERR && ch != KEY_RESIZE) || (ch != ERR && key(ch, ui, v)))
			break;
	}
	endwin();
	if (ui->ended)
		printf("katra top: process %ld: %s\n", src->pid,
		       exited(src->pid) ? "exited" : "its session ended");
	free(hist);
	free(v);
	return EXIT_OK;
}

int top_follow(long pid)
{
	if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
		fprintf(stderr, "katra record: --top: not a terminal: no screen\n");
		return EXIT_USAGE;
	}
	int fd = -ENOENT;
	for (int i = 0; i < 200 && (fd = kt__live_find(pid)) < 0 && !exited(pid); i++)
		sleep_ms(50);
	if (fd >= 0)
		close(fd);
	struct top_source src;
	int rc = top_open(pid, &src);
	if (rc)
		return rc;
	struct top_ui ui = { .pid = pid, .thread = -1, .sort = TOP_SORT_SELF };
	rc = top_live(&src, &ui);
	top_close(&src);
	return rc;
}

int cmd_top(int argc, char **argv)
{
	struct top_args a = { .window = -1, .sort = TOP_SORT_SELF };
	const char *pos[1] = { NULL };
	int rc = opts_parse(&top_spec, argc, argv, &a, pos);
	if (rc != OPTS_GO)
		return rc;
	long pid;
	if ((rc = parse_pid(pos[0], &pid)))
		return rc;
	int win = a.window >= 0 ? a.window : a.once ? 2 : 0, sort = a.sort;
	struct top_source src;
	if ((rc = top_open(pid, &src)))
		return rc;
	if (a.once) {
		rc = top_once(&src, &a, win, sort);
	} else if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
		fprintf(stderr, "katra top: not a terminal (--once --json prints one refresh)\n");
		rc = EXIT_USAGE;
	} else {
		struct top_ui ui = { .pid = pid, .thread = -1, .sort = (enum top_sort)sort,
				     .window = win };
		memcpy(ui.filter, a.filter, sizeof(ui.filter));
		rc = top_live(&src, &ui);
	}
	top_close(&src);
	return rc;
}
