/*
 * progress.c - the progress bar; progress.h says when it shows.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/pipeline/progress.h"

static int progress_on, progress_shown;
static uint64_t progress_last;
static kt_reader *progress_reader; /* merged passes: the total comes from it */
static uint64_t progress_total;

void progress_init(int prints_events, kt_reader *r)
{
	progress_on = isatty(2) && !(prints_events && isatty(1));
	progress_shown = 0;
	progress_last = 0;
	progress_total = 0;
	progress_reader = r;
}

void progress(uint64_t done, uint64_t total)
{
	if (!progress_on || !total)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (done < total && now - progress_last < 100000000u)
		return;
	progress_last = now;
	unsigned pct = (unsigned)(done >= total ? 100 : done * 100 / total);
	char bar[31];
	memset(bar, '#', pct * 30 / 100);
	memset(bar + pct * 30 / 100, ' ', 30 - pct * 30 / 100);
	bar[30] = 0;
	fprintf(stderr, "\r[%s] %3u%%", bar, pct);
	progress_shown = 1;
}

void progress_events(uint64_t done)
{
	if (!progress_on || !progress_reader)
		return;
	if (!progress_total) {
		kt_reader_status st;
		kt_reader_get_status(progress_reader, &st);
		progress_total = st.events;
	}
	progress(done, progress_total);
}

void progress_end(void)
{
	if (progress_shown)
		fputs("\r\033[K", stderr);
	progress_shown = 0;
	progress_reader = NULL;
}
