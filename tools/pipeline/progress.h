/*
 * progress.h - a progress bar on stderr for long operations, only when
 * stderr is a terminal (and, for commands that print events, stdout is not
 * the same screen); nothing otherwise.  Redrawn at most every 100 ms,
 * erased at the end.
 *
 * Process-wide state: the pipeline's writing thread (tools/pipeline/pipe.h) and the
 * command's thread draw it, never both at once.
 */
#ifndef KT_TOOLS_PROGRESS_H
#define KT_TOOLS_PROGRESS_H

#include <stdint.h>

#include <katra/reader.h>

/* progress_init - start a bar for a pass; @prints_events: the command
 * prints events on stdout.  @r, when not NULL, gives the total of
 * progress_events() (the events its index pass saw). */
void progress_init(int prints_events, kt_reader *r);

/* progress - @done of @total. */
void progress(uint64_t done, uint64_t total);

/* progress_events - @done events of the reader given to progress_init();
 * only on the thread that drives that reader (it reads the reader's
 * status). */
void progress_events(uint64_t done);

/* progress_end - erase the bar, if it was drawn. */
void progress_end(void);

#endif
