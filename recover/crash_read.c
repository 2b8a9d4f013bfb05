/*
 * Crash files, the reading side: decode and check a control header, a ring
 * slot and a ring's records from bytes a dead process left (recover/crash.h).
 * No I/O and no trust: every length and position is checked before use,
 * since the bytes may be damaged.  `katra recover` and fuzz_control use it.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "format/format.h"
#include "recover/crash.h"
#include "ring/ring.h"

__attribute__((format(printf, 4, 5))) static int say(char *why, size_t cap, int rc,
						      const char *fmt, ...)
{
	va_list ap;
	if (cap) {
		va_start(ap, fmt);
		vsnprintf(why, cap, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* The fields every version has, after magic, version and slot size. */
static void ctl_fields(const uint8_t *p, kt__ctl *c)
{
	c->pid = kt__get64(p + KT__CTL_O_PID);
	c->gen = kt__get64(p + KT__CTL_O_GEN);
	c->start_wall_ns = kt__get64(p + KT__CTL_O_WALL);
	c->start_mono_ns = kt__get64(p + KT__CTL_O_MONO);
	c->clock.source = p[KT__CTL_O_CLOCK_SRC];
	c->clock.tick_hz = kt__get64(p + KT__CTL_O_TICK_HZ);
	c->clock.ticks = kt__get64(p + KT__CTL_O_TICKS0);
	c->clock.mono_ns = kt__get64(p + KT__CTL_O_NS0);
	c->ring_size = kt__get64(p + KT__CTL_O_RING_SIZE);
	c->overflow = p[KT__CTL_O_OVERFLOW];
	c->codec = p[KT__CTL_O_CODEC];
	c->io = p[KT__CTL_O_IO];
	c->level = (int32_t)kt__get32(p + KT__CTL_O_LEVEL);
	c->trace_off = kt__get64(p + KT__CTL_O_TRACE_OFF);
	if (c->version >= 2) {
		c->flags = kt__get32(p + KT__CTL_O_FLAGS);
		c->start_time = kt__get64(p + KT__CTL_O_START);
		memcpy(c->boot_id, p + KT__CTL_O_BOOT_ID, sizeof(c->boot_id));
	}
}

/* The trace path: where it is and how long it may be depend on the
 * version.  Return: 1 (with @why) when its length is out of range. */
static int ctl_path(const uint8_t *p, kt__ctl *c, char *why, size_t cap)
{
	size_t at = c->version >= 2 ? KT__CTL_O_PATH : KT__CTL_V1_O_PATH;
	uint32_t n = kt__get32(p + KT__CTL_O_PATH_LEN);
	int damaged = 0;
	if (n >= KT__CTL_HEADER - at || memchr(p + at, 0, n)) {
		damaged = say(why, cap, 1, "offset %d: trace path length %u is out of range",
			      KT__CTL_O_PATH_LEN, n);
		n = 0;
	}
	memcpy(c->trace_path, p + at, n);
	c->trace_path[n] = 0;
	return damaged;
}

int kt__ctl_parse(const uint8_t *p, size_t len, kt__ctl *c, char *why, size_t cap)
{
	memset(c, 0, sizeof(*c));
	if (len < KT__CTL_HEADER)
		return say(why, cap, KT_ETRUNCATED,
			   "offset %zu: the control file ends inside its %u-byte header", len,
			   KT__CTL_HEADER);
	if (memcmp(p, KT__CTL_MAGIC, 8))
		return say(why, cap, KT_EMAGIC, "offset 0: not a katra control file (bad magic)");
	c->version = kt__get32(p + KT__CTL_O_VERSION);
	if (c->version != KT__CTL_VERSION && c->version != KT__CTL_VERSION_1)
		return say(why, cap, KT_EVERSION, "offset %d: control file version %u, this katra "
			   "reads %u and %u", KT__CTL_O_VERSION, c->version, KT__CTL_VERSION_1,
			   KT__CTL_VERSION);
	c->slot_size = kt__get32(p + KT__CTL_O_SLOT_SIZE);
	if (c->slot_size < KT__CTL_HEADER || c->slot_size > (1u << 20) ||
	    (c->slot_size & (c->slot_size - 1)))
		return say(why, cap, KT_EHEADER, "offset %d: slot size %u is not a page size",
			   KT__CTL_O_SLOT_SIZE, c->slot_size);
	ctl_fields(p, c);
	int damaged = ctl_path(p, c, why, cap);
	uint8_t copy[KT__CTL_HEADER];
	memcpy(copy, p, sizeof(copy));
	memset(copy + KT__CTL_O_CHECKSUM, 0, 8);
	uint64_t want = kt__get64(p + KT__CTL_O_CHECKSUM);
	if (!damaged && kt__xxh3(copy, sizeof(copy)) != want)
		damaged = say(why, cap, 1, "offset %d: control header checksum mismatch: "
			      "its fields may be wrong", KT__CTL_O_CHECKSUM);
	if (!damaged && (c->clock.tick_hz == 0 || c->clock.source < KT_CLOCK_TSC ||
			 c->clock.source > KT_CLOCK_MONOTONIC))
		damaged = say(why, cap, 1, "offset %d: no usable clock calibration",
			      KT__CTL_O_CLOCK_SRC);
	return damaged;
}

int kt__stat_start_time(const char *line, size_t len, uint64_t *start)
{
	/* The command name (field 2) is in parentheses and may hold any
	 * byte, ')' and ' ' too: the fields resume after the last ')'. */
	const char *p = NULL;
	for (size_t i = len; i > 0; i--)
		if (line[i - 1] == ')') {
			p = line + i;
			break;
		}
	if (!p)
		return -1;
	const char *end = line + len;
	/* Fields 3 to 22, each after one space. */
	for (int field = 3; field <= 22; field++) {
		if (p == end || *p != ' ')
			return -1;
		const char *f = ++p;
		while (p < end && *p != ' ' && *p != '\n')
			p++;
		if (field < 22)
			continue;
		uint64_t v = 0;
		if (f == p || p - f > 19)
			return -1;
		for (; f < p; f++) {
			if (*f < '0' || *f > '9')
				return -1;
			v = v * 10 + (uint64_t)(*f - '0');
		}
		*start = v;
	}
	return 0;
}

/* A slot's u64 fields as they are, before any check: where each sits in
 * kt__slot and in the slot's bytes. */
static const struct {
	size_t field;
	uint16_t at;
} slot_u64[] = {
	{ offsetof(kt__slot, size), KT__SLOT_O_SIZE },
	{ offsetof(kt__slot, head), KT__SLOT_O_HEAD },
	{ offsetof(kt__slot, tail), KT__SLOT_O_TAIL },
	{ offsetof(kt__slot, lost), KT__SLOT_O_LOST },
	{ offsetof(kt__slot, lost_base), KT__SLOT_O_LOST_BASE },
	{ offsetof(kt__slot, pending_first), KT__SLOT_O_PENDING_FIRST },
	{ offsetof(kt__slot, pending_last), KT__SLOT_O_PENDING_LAST },
	{ offsetof(kt__slot, refused), KT__SLOT_O_REFUSED },
	{ offsetof(kt__slot, refused_first), KT__SLOT_O_REFUSED_FIRST },
	{ offsetof(kt__slot, refused_last), KT__SLOT_O_REFUSED_LAST },
};

int kt__slot_parse(const uint8_t *p, size_t len, uint32_t index, uint32_t flags, kt__slot *s,
		   char *why, size_t cap)
{
	memset(s, 0, sizeof(*s));
	s->index = index;
	if (len < KT__SLOT_O_INDEX + 4)
		return say(why, cap, KT_ETRUNCATED, "slot %u: %zu bytes, shorter than a slot", index,
			   len);
	static const uint8_t zero[8];
	/* A ring being created when the process died: nothing published. */
	if (!memcmp(p + KT__SLOT_O_MAGIC, zero, 8) ||
	    (!memcmp(p + KT__SLOT_O_MAGIC, KT__SLOT_MAGIC, 8) &&
	     !kt__get32(p + KT__SLOT_O_THREAD) && !kt__get64(p + KT__SLOT_O_HEAD)))
		return say(why, cap, 1, "slot %u: not in use yet", index);
	if (memcmp(p + KT__SLOT_O_MAGIC, KT__SLOT_MAGIC, 8))
		return say(why, cap, KT_EFRAME,
			   "slot %u: offset %d: no slot mark (empty, or damaged)", index,
			   KT__SLOT_O_MAGIC);
	if (kt__get32(p + KT__SLOT_O_INDEX) != index)
		return say(why, cap, KT_EFRAME, "slot %u: offset %d: says it is slot %u", index,
			   KT__SLOT_O_INDEX, kt__get32(p + KT__SLOT_O_INDEX));
	s->thread_id = kt__get32(p + KT__SLOT_O_THREAD);
	s->os_tid = kt__get32(p + KT__SLOT_O_OS_TID);
	for (size_t i = 0; i < sizeof(slot_u64) / sizeof(slot_u64[0]); i++) {
		/* memcpy: the field is a uint64_t (the table's offsetof says
		 * so), but a cast of the byte pointer could not show it. */
		uint64_t v = kt__get64(p + slot_u64[i].at);
		memcpy((char *)s + slot_u64[i].field, &v, sizeof(v));
	}
	const uint8_t *ck = p + KT__SLOT_O_CK + 32 * (kt__get64(p + KT__SLOT_O_CK_SEQ) & 1);
	s->ck_tail = kt__get64(ck);
	s->ck_events = kt__get64(ck + 8);
	s->ck_marked = kt__get64(ck + 16);
	s->ck_refused = kt__get64(ck + 24);
	if (s->thread_id == 0)
		return say(why, cap, KT_EFRAME, "slot %u: offset %d: thread id 0", index,
			   KT__SLOT_O_THREAD);
	if (s->size < KT_RING_MIN || s->size > KT_RING_MAX || (s->size & (s->size - 1)))
		return say(why, cap, KT_EFRAME, "slot %u: offset %d: ring size %llu is not a power "
			   "of two in [%u, %u]", index, KT__SLOT_O_SIZE,
			   (unsigned long long)s->size, KT_RING_MIN, KT_RING_MAX);
	/* Positions only grow, the tails trail head by at most one ring; in
	 * a flight session they stay where it began, laps behind. */
	int flight = (flags & KT__CTL_F_FLIGHT) != 0;
	const char *bad = (s->head | s->tail | s->ck_tail) & 7 ? "not multiples of 8"
			  : s->tail > s->head || s->ck_tail > s->head ? "a tail is past head"
			  : !flight && (s->head - s->tail > s->size || s->head - s->ck_tail > s->size)
				  ? "more than one ring apart"
				  : NULL;
	if (bad)
		return say(why, cap, KT_EFRAME, "slot %u: offset %d: head %llu, tail %llu and "
			   "checkpoint tail %llu are out of range: %s", index, KT__SLOT_O_HEAD,
			   (unsigned long long)s->head, (unsigned long long)s->tail,
			   (unsigned long long)s->ck_tail, bad);
	s->from = s->over_end = s->ck_tail;
	return flight ? kt__flight_window(p, s, why, cap) : 0;
}

/* The overwritten count of the slot page @p: its whole slot (the one
 * the sequence names), or zero when it is not of the session that began
 * at @s->tail or its end is not a position of it up to head. */
static void flight_count(const uint8_t *p, kt__slot *s, uint64_t *counted)
{
	uint64_t seq = kt__get64(p + KT__SLOT_O_FL_SEQ);
	const uint8_t *c = p + KT__SLOT_O_FL_COUNT + 40 * ((seq >> 1) & 1);
	*counted = kt__get64(c + 8);
	if (kt__get64(c) != s->tail || *counted < s->tail || *counted > s->head ||
	    (*counted & 7)) {
		*counted = s->tail;
		return;
	}
	s->over = kt__get64(c + 16);
	s->over_first = kt__get64(c + 24);
	s->over_last = kt__get64(c + 32);
}

int kt__flight_window(const uint8_t *p, kt__slot *s, char *why, size_t cap)
{
	uint64_t counted, bound = kt__get64(p + KT__SLOT_O_FL_BOUND);
	flight_count(p, s, &counted);
	/* Below lo nothing is sure to be whole: a lap below head is the
	 * producer's own older bytes, and it may have been writing anywhere
	 * below its bound when it died, over the lap below that. */
	uint64_t lo = s->head > s->size ? s->head - s->size : 0;
	if (bound > s->size && bound - s->size > lo)
		lo = bound - s->size;
	if (lo > s->head)
		return say(why, cap, KT_EFRAME, "slot %u: offset %d: flight bound %llu is more "
			   "than a ring past head %llu", s->index, KT__SLOT_O_FL_BOUND,
			   (unsigned long long)bound, (unsigned long long)s->head);
	lo = lo > s->tail ? lo : s->tail;
	lo = lo > counted ? lo : counted;
	/* The first record start at or past lo that the page names. */
	uint64_t from = s->head;
	const uint64_t known[2] = { s->tail, counted };
	for (unsigned i = 0; i < 2 + KT__PAGE_FL_MARKS; i++) {
		uint64_t m = i < 2 ? known[i] : kt__get64(p + KT__SLOT_O_FL_MARK + 8 * (i - 2));
		if (m >= lo && m < from && !(m & 7))
			from = m;
	}
	s->from = from;
	/* Events between the count's end and the window were overwritten
	 * too, but nobody counted them: the count says what it knows. */
	s->over_end = counted;
	return 0;
}

/* One record at @p, @left bytes.  Return: 0 when whole and valid (@rec
 * filled); 1 with *@end set otherwise. */
static int record(const uint8_t *p, size_t left, kt__ring_rec *rec, enum kt__walk_end *end,
		  char *why, size_t cap)
{
	int rc = kt__ring_decode(p, left, rec->pos, rec);
	*end = rc < 0 ? KT__WALK_BAD : KT__WALK_MORE;
	if (rc < 0)
		return say(why, cap, 1, "position %llu: malformed drop marker",
			   (unsigned long long)rec->pos);
	if (rc == 0)
		return 1;
	if (rec->bytes && kt__event_check(p, left) < 0) {
		*end = KT__WALK_BAD;
		return say(why, cap, 1, "position %llu: malformed event record",
			   (unsigned long long)rec->pos);
	}
	return 0;
}

size_t kt__ring_records(const uint8_t *p, size_t len, uint64_t pos,
			int (*fn)(void *ctx, const kt__ring_rec *rec), void *ctx,
			enum kt__walk_end *end, char *why, size_t cap)
{
	for (size_t off = 0;;) {
		kt__ring_rec rec = { .pos = pos + off };
		if (record(p + off, len - off, &rec, end, why, cap))
			return off;
		if (fn(ctx, &rec)) {
			*end = KT__WALK_STOP;
			return off;
		}
		off += rec.size;
	}
}

int kt__site_parse(const uint8_t *p, uint32_t len, uint32_t id, kt_srcloc *loc)
{
	if (len < KT__SITE_FIXED)
		return -1;
	uint32_t file_len = kt__get32(p + 8);
	if (file_len > len - KT__SITE_FIXED)
		return -1;
	*loc = (kt_srcloc){ .id = id, .line = kt__get32(p), .category = kt__get32(p + 4),
			    .file_len = file_len,
			    .function_len = len - KT__SITE_FIXED - file_len,
			    .file = (const char *)p + KT__SITE_FIXED };
	loc->function = loc->file + file_len;
	if (!id || loc->file_len > KT_MAX_STRING || loc->function_len > KT_MAX_STRING ||
	    memchr(loc->file, 0, loc->file_len) || memchr(loc->function, 0, loc->function_len))
		return -1;
	return 0;
}

int kt__track_parse(const uint8_t *p, size_t len, uint32_t index, kt_track_def *t,
		    kt_track_pair *pairs, char *why, size_t cap)
{
	memset(t, 0, sizeof(*t));
	if (len < KT__TRK_O_PAIRS)
		return say(why, cap, KT_EFRAME, "track slot %u: %zu bytes, shorter than its entry",
			   index, len);
	t->id = kt__get32(p + KT__TRK_O_ID);
	if (!t->id)
		return 1;
	t->name_id = kt__get32(p + KT__TRK_O_NAME);
	t->clock_hz = kt__get64(p + KT__TRK_O_HZ);
	uint64_t state = kt__get64(p + KT__TRK_O_STATE);
	t->pair_count = (uint32_t)state;
	unsigned buf = (unsigned)(state >> 32);
	size_t need = KT__TRK_O_PAIRS + (size_t)buf * KT__TRK_BUF + 16 * (size_t)t->pair_count;
	if (t->id != index + 1 || buf > 1 || t->pair_count > KT_MAX_TRACK_PAIRS ||
	    kt__get64(p + KT__TRK_O_RESERVED))
		return say(why, cap, KT_EFRAME, "track slot %u: id %u, state 0x%llx: not this "
			   "slot's track", index, t->id, (unsigned long long)state);
	if (len < need)
		return say(why, cap, KT_EFRAME, "track slot %u: %zu bytes, its %u pairs end at %zu",
			   index, len, t->pair_count, need);
	const uint8_t *q = p + KT__TRK_O_PAIRS + (size_t)buf * KT__TRK_BUF;
	for (uint32_t i = 0; i < t->pair_count; i++)
		pairs[i] = (kt_track_pair){ kt__get64(q + 16 * i), kt__get64(q + 16 * i + 8) };
	t->pairs = pairs;
	const char *bad = kt__track_bad(t);
	return bad ? say(why, cap, KT_EFRAME, "track slot %u: %s", index, bad) : 0;
}
