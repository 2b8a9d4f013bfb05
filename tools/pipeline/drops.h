/*
 * drops.h - a trace's drop records (SPEC: the drop frame: COUNT events of
 * a thread lost between two ticks), read in one pass over its frames
 * without decoding events, for the commands that show where losses
 * happened: dump's lines, stats' time in drop windows, the exports'
 * marks.
 *
 * Bounded whatever the file: at most DROPS_MAX records are kept (16 bytes
 * of ticks, 8 of count, 4 of thread each); later ones are only counted.
 *
 * One thread per list.
 */
#ifndef KT_TOOLS_DROPS_H
#define KT_TOOLS_DROPS_H

#include <stddef.h>
#include <stdint.h>

#include <katra/reader.h>

#define DROPS_MAX (1u << 16)

/* A drop record: @count events of @thread_id lost between two ticks. */
struct xdrop {
	uint32_t thread_id;
	uint64_t count, first_ts, last_ts;
};

struct drops {
	struct xdrop *d;
	size_t n, cap;
	uint64_t unkept; /* records past DROPS_MAX */
};

/*
 * drops_load - @r's drop records into @d (zeroed first), in file order;
 * @r is rewound before and after.  Returns 0, a reader's negative code,
 * or -ENOMEM (what was read is kept); drops_free() in every case.
 */
int drops_load(kt_reader *r, struct drops *d);

/* drops_add - keep drop frame @f (a KT_FRAME_DROP), or count it past
 * DROPS_MAX.  Returns 0 or -ENOMEM. */
int drops_add(struct drops *d, const kt_trace_frame *f);

/* drops_sort_thread - sort by thread, then first tick. */
void drops_sort_thread(struct drops *d);

/* drops_sort_time - sort by first tick, then thread. */
void drops_sort_time(struct drops *d);

/* drops_thread - the records of thread @id, [*@begin, *@end), in a list
 * sorted by thread. */
void drops_thread(const struct drops *d, uint32_t id, size_t *begin, size_t *end);

void drops_free(struct drops *d);

#endif
