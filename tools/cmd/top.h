/*
 * top.h - `katra top PID`'s parts: the live page of a process found and
 * mapped (top_data.c), a window of its figures as the difference of two
 * copies (top_data.c), and the screen that shows one (top_screen.c).
 * The command's one thread.
 */
#ifndef KT_TOOLS_TOP_H
#define KT_TOOLS_TOP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "flush/live.h"

/* A process's live page, mapped read-only. */
struct top_source {
	long pid;
	const void *map;
	size_t len;
};

/*
 * top_open - find process @pid's live page and map it.  Return: 0; or
 * EXIT_BAD with one line on stderr saying why (no such process, another
 * user's, no live katra session: not traced, or KATRA_LIVE=1 not set).
 */
int top_open(long pid, struct top_source *src);
void top_close(struct top_source *src);

/* A copy of the page now.  0, or -errno (kt__live_copy()). */
int top_read(const struct top_source *src, struct kt__live_page *out);

struct top_zone {
	const char *name;
	uint64_t count, total_ns, self_ns, p50_ns, p99_ns, max_ns;
};

struct top_thread {
	const struct kt__live_thread *t;
	uint64_t events, dropped, waited_ns;
	double fill;             /* of its ring, at the last drain: 0..1 */
};

/* The figures of the window between two copies. */
struct top_view {
	double secs;             /* the window's length */
	int all;                 /* since the session's start */
	uint64_t events, dropped, bytes, cpu_ns, untimed, other_zones, skipped;
	uint64_t frames, frame_total_ns, frame_p50_ns, frame_p99_ns, frame_max_ns;
	struct top_zone zones[KT__LIVE_ZONES];
	size_t nzones;
	struct top_thread threads[KT__LIVE_THREADS];
	size_t nthreads;
	const struct kt__live_page *now;
};

enum top_sort { TOP_SORT_SELF, TOP_SORT_TOTAL, TOP_SORT_COUNT, TOP_SORT_P99, TOP_SORT_NAME,
		TOP_SORTS };

/*
 * top_window - the figures of @now since @then (NULL: since the session's
 * start), zones whose name holds @filter (NULL: all) sorted by @sort.
 * Points into @now.
 */
void top_window(const struct kt__live_page *now, const struct kt__live_page *then,
		const char *filter, enum top_sort sort, struct top_view *v);

/* Ticks of @p's clock as ns. */
uint64_t top_ns(const struct kt__live_page *p, uint64_t ticks);

/* The view as `--once --json` prints it; NULL without memory. */
json_t *top_json(const struct top_view *v, long pid);

/* The screen's state, its keys' effects. */
struct top_ui {
	long pid;
	int paused, ended, thread;  /* thread: -1 all, else a row of threads[] */
	enum top_sort sort;
	int window;                 /* 0: 1 s, 1: 10 s, 2: since the start */
	char filter[KT__LIVE_NAME];
	unsigned snapshots;         /* taken by the snapshot key */
	char status[192];           /* the last snapshot's line, else "" */
};

extern const char *const top_sort_names[TOP_SORTS];
extern const char *const top_window_names[3];

/*
 * top_follow - `katra record --top`'s screen on process @pid, which this
 * process started: waits for its page while it runs (10 s at most: its
 * session starts as it loads), then the screen until q, a signal, or a
 * key after it ended.  Returns EXIT_OK, or EXIT_BAD / EXIT_USAGE with one
 * line said (no page; not a terminal).
 */
int top_follow(long pid);

/* Draw @v on the screen (curses started); @ui says what was chosen. */
void top_draw(const struct top_view *v, const struct top_ui *ui);

/*
 * top_snapshot - the snapshot key: `katra snapshot`'s snapshot_take() of
 * @ui's process (a flight session listening) into snapshot-PID-N.katra
 * in the current directory, no older than the screen's window; its line
 * (what it wrote, or why not) into @ui->status.  Waits for it (bounded by
 * snapshot.h's timeout and the process's own limits on a snapshot).
 */
void top_snapshot(struct top_ui *ui);

#endif
