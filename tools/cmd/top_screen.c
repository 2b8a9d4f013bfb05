/*
 * top_screen.c - `katra top`'s screen, drawn with curses: a header of the
 * session's figures, the frame intervals as a graph of ASCII bars, the
 * zones of the window, the threads and the counters, as many rows of each
 * as the terminal holds; a terminal under 12 rows or 60 columns gets the
 * header and the zones only.  ASCII only, no colour: bold and reverse,
 * which curses leaves out where the terminal has none.  Every string from
 * the page is written escaped (names are another process's bytes).
 */
#define _GNU_SOURCE
#include <curses.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tools/cmd/top.h"

/* @s with anything but printable ASCII as '?', into @out (@cap bytes). */
static const char *clean(const char *s, char *out, size_t cap)
{
	size_t i = 0;
	for (; s[i] && i + 1 < cap; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	out[i] = 0;
	return out;
}

/* A duration in a unit that keeps it short. */
static const char *dur(uint64_t ns, char *b, size_t cap)
{
	if (ns >= 10000000000u)
		snprintf(b, cap, "%.1fs", (double)ns / 1e9);
	else if (ns >= 10000000u)
		snprintf(b, cap, "%.1fms", (double)ns / 1e6);
	else if (ns >= 10000u)
		snprintf(b, cap, "%.1fus", (double)ns / 1e3);
	else
		snprintf(b, cap, "%" PRIu64 "ns", ns);
	return b;
}

static double per_s(uint64_t n, double secs)
{
	return secs > 0 ? (double)n / secs : 0;
}

/* One line at row @y, cut to the screen's width. */
__attribute__((format(printf, 3, 4))) static void line(int y, int cols, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	mvaddnstr(y, 0, buf, cols);
}

static void header(const struct top_view *v, const struct top_ui *ui, int cols)
{
	char f[64], a[16], b[16], c[16];
	attron(A_REVERSE);
	line(0, cols, "katra top  pid %ld  window %s  sort %s  filter '%s'%s%s%*s", ui->pid,
	     top_window_names[ui->window], top_sort_names[ui->sort],
	     clean(ui->filter, f, sizeof(f)), ui->paused ? "  PAUSED" : "",
	     ui->ended ? "  ENDED" : "", cols, "");
	attroff(A_REVERSE);
	line(1, cols,
	     "events %.0f/s  dropped %" PRIu64 "  written %.1f KiB/s  flusher cpu %.1f%%%s",
	     per_s(v->events, v->secs), v->dropped, per_s(v->bytes, v->secs) / 1024,
	     v->secs > 0 ? 100.0 * (double)v->cpu_ns / (v->secs * 1e9) : 0,
	     v->skipped ? "  (flusher behind: zones in part)" : "");
	line(2, cols, "frames %" PRIu64 "  p50 %s  p99 %s  slowest %s", v->frames,
	     dur(v->frame_p50_ns, a, sizeof(a)), dur(v->frame_p99_ns, b, sizeof(b)),
	     dur(v->frame_max_ns, c, sizeof(c)));
}

/* The last frames' intervals as bars, the newest on the right; the
 * slowest of them marked with '!'. */
static void graph(const struct kt__live_page *p, int y, int h, int cols)
{
	uint32_t n = p->frame_head < KT__LIVE_FRAMES ? p->frame_head : KT__LIVE_FRAMES;
	uint32_t w = (uint32_t)cols < n ? (uint32_t)cols : n;
	uint64_t top = 1;
	uint32_t slow = 0;
	for (uint32_t i = 0; i < w; i++) {
		uint64_t iv = p->frames[(p->frame_head - w + i) % KT__LIVE_FRAMES];
		if (iv > top) {
			top = iv;
			slow = i;
		}
	}
	for (uint32_t i = 0; i < w; i++) {
		uint64_t iv = p->frames[(p->frame_head - w + i) % KT__LIVE_FRAMES];
		int bar = (int)((iv * (uint64_t)h + top - 1) / top);
		for (int r = 0; r < h; r++)
			mvaddch(y + h - 1 - r, (int)i, r < bar ? (i == slow ? '!' : '#') : ' ');
	}
}

static int zones(const struct top_view *v, int y, int rows, int cols)
{
	char n[KT__LIVE_NAME], a[16], b[16], c[16], d[16];
	attron(A_BOLD);
	line(y++, cols, "%-28s %9s %10s %10s %9s %9s", "ZONE", "COUNT", "TOTAL", "SELF", "P50",
	     "P99");
	attroff(A_BOLD);
	for (size_t i = 0; i < v->nzones && y < rows; i++) {
		const struct top_zone *z = &v->zones[i];
		line(y++, cols, "%-28.28s %9" PRIu64 " %10s %10s %9s %9s", clean(z->name, n, sizeof(n)),
		     z->count, dur(z->total_ns, a, sizeof(a)), dur(z->self_ns, b, sizeof(b)),
		     dur(z->p50_ns, c, sizeof(c)), dur(z->p99_ns, d, sizeof(d)));
	}
	return y;
}

static int threads(const struct top_view *v, const struct top_ui *ui, int y, int rows, int cols)
{
	char n[KT__LIVE_NAME];
	attron(A_BOLD);
	line(y++, cols, "%-20s %8s %12s %8s %6s %7s", "THREAD", "TID", "EVENTS/S", "DROPPED", "FILL",
	     "WAITED");
	attroff(A_BOLD);
	for (size_t i = 0; i < v->nthreads && y < rows; i++) {
		const struct top_thread *t = &v->threads[i];
		if (ui->thread >= 0 && (size_t)ui->thread != i)
			continue;
		/* Waited: the share of the window the thread spent waiting
		 * for room in its ring (the WAIT policy slowing it). */
		line(y++, cols, "%-20.20s %8" PRIu32 " %12.0f %8" PRIu64 " %5.1f%% %6.1f%%",
		     clean(t->t->name[0] ? t->t->name : "-", n, sizeof(n)), t->t->os_tid,
		     per_s(t->events, v->secs), t->dropped, 100 * t->fill,
		     v->secs > 0 ? 100 * (double)t->waited_ns / 1e9 / v->secs : 0.0);
	}
	return y;
}

static int counters(const struct kt__live_page *p, int y, int rows, int cols)
{
	char n[KT__LIVE_NAME];
	for (uint32_t i = 0; i < p->ncounters && y < rows; i++) {
		const struct kt__live_counter *c = &p->counters[i];
		if (c->is_float)
			line(y++, cols, "counter %-28.28s %.6g", clean(c->name, n, sizeof(n)), c->f);
		else
			line(y++, cols, "counter %-28.28s %" PRId64, clean(c->name, n, sizeof(n)), c->i);
	}
	return y;
}

void top_draw(const struct top_view *v, const struct top_ui *ui)
{
	int rows, cols;
	getmaxyx(stdscr, rows, cols);
	erase();
	if (rows < 3 || cols < 20) {
		line(0, cols, "katra top: terminal too small");
		refresh();
		return;
	}
	header(v, ui, cols);
	int small = rows < 12 || cols < 60, y = 3;
	if (!small) {
		int h = rows >= 30 ? 6 : 3;
		graph(v->now, y, h, cols);
		y += h;
	}
	int zrows = small ? rows - 1 : y + 1 + (rows - y - 2) / 2;
	y = zones(v, y, zrows, cols);
	if (!small) {
		y = threads(v, ui, y, rows - 1, cols);
		counters(v->now, y, rows - 1, cols);
	}
	attron(A_REVERSE);
	line(rows - 1, cols, "%s%*s",
	     ui->ended   ? "the session ended (the process exited or stopped it): press any key"
	     : ui->status[0] ? ui->status
			     : "q quit  p pause  s sort  / filter  t thread  w window  S snapshot",
	     cols, "");
	attroff(A_REVERSE);
	refresh();
}
