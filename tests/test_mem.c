/*
 * Memory events (issue #15's memory bullet, #18's memory per pool): the
 * producer's records, the reader's view of them, and what stats, dump,
 * the exports and the report make of them.
 */
#include "helpers.h"
#include "cli.h"

#include <katra/katra.h>
#include <katra/reader.h>

#include "format/format.h"

/* The memory records of a session's file, in file order. */
struct mem_seen {
	uint8_t type[16];
	uint32_t pool[16];
	uint64_t ptr[16], size[16];
	size_t n;
};

static void mem_path(char *buf, size_t n, const char *tag)
{
	snprintf(buf, n, "/tmp/katra-mem-%s-%d.katra", tag, (int)getpid());
}

static void mem_read_back(const char *path, struct mem_seen *s)
{
	kt_reader *r;
	kt_trace_frame f;
	kt_chunk_iter it;
	kt_event ev;
	memset(s, 0, sizeof(*s));
	cr_assert_eq(kt_reader_open(&r, path, NULL), 0);
	while (kt_reader_next_frame(r, &f) > 0) {
		if (f.kind != KT_FRAME_CHUNK)
			continue;
		kt_chunk_iter_init(&it, &f);
		while (kt_chunk_next(&it, &ev) > 0) {
			cr_assert_lt(s->n, 16);
			s->type[s->n] = ev.type;
			s->pool[s->n] = ev.name_id;
			cr_assert_geq(ev.payload_len, 8);
			memcpy(&s->ptr[s->n], ev.payload, 8);
			if (ev.payload_len == 16)
				memcpy(&s->size[s->n], ev.payload + 8, 8);
			s->n++;
		}
	}
	kt_reader_close(r);
}

Test(mem, allocations_and_frees_are_records_of_their_pool)
{
	char path[128];
	static char a[64], b[64];
	mem_path(path, sizeof(path), "api");
	unlink(path);
	kt_session *s;
	cr_assert_eq(kt_session_start(path, NULL, &s), 0);
	uint32_t pool = kt_name("textures");
	kt_alloc(a, 100);
	kt_alloc_pool(pool, b, (size_t)1 << 40);
	kt_alloc(NULL, 5);  /* a failed allocation: nothing */
	kt_free(NULL);      /* nothing */
	kt_free_pool(pool, b);
	kt_free(a);
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	struct mem_seen m;
	mem_read_back(path, &m);
	cr_assert_eq(m.n, 4);
	static const uint8_t types[] = { KT_EV_ALLOC, KT_EV_ALLOC, KT_EV_FREE, KT_EV_FREE };
	for (size_t i = 0; i < 4; i++)
		cr_assert_eq(m.type[i], types[i], "record %zu", i);
	cr_assert_eq(m.pool[0], 0);
	cr_assert_eq(m.ptr[0], (uint64_t)(uintptr_t)a);
	cr_assert_eq(m.size[0], 100);
	cr_assert_eq(m.pool[1], pool);
	cr_assert_eq(m.ptr[1], (uint64_t)(uintptr_t)b);
	cr_assert_eq(m.size[1], UINT64_C(1) << 40);
	cr_assert_eq(m.pool[2], pool);
	cr_assert_eq(m.ptr[2], (uint64_t)(uintptr_t)b);
	cr_assert_eq(m.pool[3], 0);
	cr_assert_eq(m.ptr[3], (uint64_t)(uintptr_t)a);
	unlink(path);
}
