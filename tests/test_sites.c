/*
 * KT_FRAME, KT_COUNTER and KT_MESSAGE (issue #29): the name interned at
 * the call site, the value's type choosing the record (a _Generic
 * selection), a frame site numbering its marks - from the producer
 * through a session's file to the reader.  Their C++ side is
 * examples/particles.cpp, checked by test_example.c.
 */
#include "helpers.h"

#include <criterion/criterion.h>

#include <katra/katra.h>
#include <katra/reader.h>

#define PER_PASS 7

static void t_path(char *buf, size_t n, const char *tag)
{
	snprintf(buf, n, "/tmp/katra-sites-%s-%d.katra", tag, (int)getpid());
}

/* One pass: PER_PASS events, the same sites each time. */
static void pass(int i)
{
	short s = (short)(60 + i);
	KT_COUNTER("fps", s);                /* an integer: i64 */
	KT_COUNTER("big", UINT64_C(1) << 40); /* an unsigned one: i64 too */
	KT_COUNTER("ms", 16.5 + i);          /* a double: f64 */
	KT_COUNTER("ratio", 0.25f);          /* a float: f64 */
	KT_MESSAGE("log", "hello");          /* NUL-terminated */
	KT_MESSAGE("log", "hello world", 5); /* a length */
	KT_FRAME("frame");
}

struct rec {
	uint8_t type, flags;
	uint32_t name;
	uint16_t len;
	uint8_t payload[16];
};

static size_t read_all(const char *path, struct rec *out, size_t cap)
{
	kt_reader *r;
	kt_event ev;
	size_t n = 0;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	while (kt_reader_next(r, &ev) > 0) {
		cr_assert_lt(n, cap);
		out[n] = (struct rec){ ev.type, ev.flags, ev.name_id, (uint16_t)ev.payload_len, { 0 } };
		memcpy(out[n].payload, ev.payload, ev.payload_len < 16 ? ev.payload_len : 16);
		n++;
	}
	kt_reader_close(r);
	return n;
}

static int64_t i64_at(const struct rec *r)
{
	int64_t v;
	memcpy(&v, r->payload, 8);
	return v;
}

static double f64_at(const struct rec *r)
{
	double v;
	memcpy(&v, r->payload, 8);
	return v;
}

static void check_pass(const struct rec *r, int i, uint64_t frame_no)
{
	cr_assert_eq(r[0].type, KT_EV_COUNTER_I64);
	cr_assert_eq(r[0].name, kt_name("fps"), "the site's id is kt_name()'s");
	cr_assert_eq(i64_at(&r[0]), 60 + i);
	cr_assert_eq(r[1].type, KT_EV_COUNTER_I64);
	cr_assert_eq(i64_at(&r[1]), INT64_C(1) << 40);
	cr_assert_eq(r[2].type, KT_EV_COUNTER_F64);
	cr_assert_eq(r[2].name, kt_name("ms"));
	cr_assert_eq(f64_at(&r[2]), 16.5 + i);
	cr_assert_eq(r[3].type, KT_EV_COUNTER_F64);
	cr_assert_eq(f64_at(&r[3]), 0.25);
	for (int m = 4; m <= 5; m++) {
		cr_assert_eq(r[m].type, KT_EV_MESSAGE);
		cr_assert_eq(r[m].name, kt_name("log"));
		cr_assert_eq(r[m].len, 5);
		cr_assert_eq(memcmp(r[m].payload, "hello", 5), 0);
	}
	cr_assert_eq(r[6].type, KT_EV_FRAME);
	cr_assert_eq(r[6].name, kt_name("frame"));
	cr_assert_eq(r[6].flags, 0, "a loop's frame mark, not a begin or end");
	cr_assert_eq((uint64_t)i64_at(&r[6]), frame_no);
}

/* Passes outside a session write nothing and count no frame; in one, the
 * records come in order with their values, and the frame site numbers its
 * marks 0, 1, 2, then goes on counting in the next session. */
Test(sites, frame_counter_and_message_records)
{
	char path[128];
	struct rec r[4 * PER_PASS];
	t_path(path, sizeof(path), "one");
	pass(-1); /* no session: interned, nothing written or counted */
	for (int round = 0; round < 2; round++) {
		kt_session *s;
		unlink(path);
		cr_assert_eq(kt_session_start(path, NULL, &s), 0);
		for (int i = 0; i < 3; i++)
			pass(i);
		cr_assert_eq(kt_session_stop(s, NULL), 0);
		cr_assert_eq(read_all(path, r, 4 * PER_PASS), 3 * PER_PASS);
		for (int i = 0; i < 3; i++)
			check_pass(&r[i * PER_PASS], i, (uint64_t)(round * 3 + i));
	}
	unlink(path);
}

/* Two sites of one name are one counter: the same id, kt_name()'s. */
Test(sites, two_sites_of_one_name_share_it)
{
	char path[128];
	struct rec r[4];
	kt_session *s;
	t_path(path, sizeof(path), "two");
	unlink(path);
	cr_assert_eq(kt_session_start(path, NULL, &s), 0);
	KT_COUNTER("shared", 1);
	KT_COUNTER("shared", 2.5);
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	cr_assert_eq(read_all(path, r, 4), 2);
	cr_assert_eq(r[0].name, r[1].name);
	cr_assert_eq(r[0].name, kt_name("shared"));
	cr_assert_eq(r[0].type, KT_EV_COUNTER_I64);
	cr_assert_eq(r[1].type, KT_EV_COUNTER_F64);
	unlink(path);
}

#ifdef KT_HELLO
/* The name @want's id among a trace's @n name entries; 0 if absent. */
static uint32_t id_named(const uint32_t *ids, char (*names)[32], size_t n, const char *want)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], want))
			return ids[i];
	return 0;
}

/* examples/hello.c, README's first example with a counter and a message,
 * run as a program: 100 frames numbered 0..99, each with an i64 counter
 * of 1000 + frame and an f64 counter of 60, and one message. */
Test(sites, the_hello_example_traces_its_loop)
{
	char path[128], cmd[320], names[64][32];
	uint32_t ids[64];
	static struct rec r[1024];
	size_t nn = 0, n = 0;
	t_path(path, sizeof(path), "hello");
	unlink(path);
	snprintf(cmd, sizeof(cmd), "%s %s", KT_HELLO, path);
	cr_assert_eq(system(cmd), 0);
	kt_reader *rd;
	kt_trace_frame f;
	cr_assert_eq(kt_reader_open(path, NULL, &rd), 0);
	while (kt_reader_next_frame(rd, &f) > 0) {
		if (f.kind == KT_FRAME_NAME && nn < 64) {
			ids[nn] = f.u.name.id;
			snprintf(names[nn++], 32, "%s", f.u.name.str);
		} else if (f.kind == KT_FRAME_CHUNK) {
			kt_chunk_iter it;
			kt_event ev;
			kt_chunk_iter_init(&it, &f);
			while (kt_chunk_next(&it, &ev) > 0 && n < 1024) {
				r[n] = (struct rec){ ev.type, ev.flags, ev.name_id,
						     (uint16_t)ev.payload_len, { 0 } };
				memcpy(r[n++].payload, ev.payload,
				       ev.payload_len < 16 ? ev.payload_len : 16);
			}
		}
	}
	kt_reader_close(rd);
	uint32_t frame = id_named(ids, names, nn, "frame");
	uint32_t fps = id_named(ids, names, nn, "fps");
	uint32_t parts = id_named(ids, names, nn, "particles");
	uint32_t logid = id_named(ids, names, nn, "log");
	cr_assert(frame && fps && parts && logid, "every site's name is in the trace");
	uint64_t frames = 0, nfps = 0, nparts = 0, nlog = 0;
	for (size_t i = 0; i < n; i++) {
		const struct rec *e = &r[i];
		if (e->type == KT_EV_FRAME && e->name == frame) {
			cr_assert_eq((uint64_t)i64_at(e), frames, "frames numbered in order");
			frames++;
		} else if (e->type == KT_EV_COUNTER_F64 && e->name == fps) {
			cr_assert_eq(f64_at(e), 60.0);
			nfps++;
		} else if (e->type == KT_EV_COUNTER_I64 && e->name == parts) {
			cr_assert_eq(i64_at(e), 1000 + (int64_t)nparts);
			nparts++;
		} else if (e->type == KT_EV_MESSAGE && e->name == logid) {
			cr_assert_eq(memcmp(e->payload, "started", 7), 0);
			nlog++;
		}
	}
	cr_assert_eq(frames, 100);
	cr_assert_eq(nfps, 100);
	cr_assert_eq(nparts, 100);
	cr_assert_eq(nlog, 1);
	unlink(path);
}
#endif
