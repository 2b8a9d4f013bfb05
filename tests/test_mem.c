/*
 * Memory events (issue #15's memory bullet, #18's memory per pool): the
 * producer's records, the reader's view of them, and what stats, dump,
 * the exports and the report make of them.
 */
#include "helpers.h"
#include "cli.h"

#include <katra/katra.h>
#include <katra/reader.h>
#include <jansson.h>

#include "format/format.h"
#include "perfetto.h"

/* The memory records of a file, in file order (other records skipped). */
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
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	while (kt_reader_next_frame(r, &f) > 0) {
		if (f.kind != KT_FRAME_CHUNK)
			continue;
		kt_chunk_iter_init(&it, &f);
		while (kt_chunk_next(&it, &ev) > 0) {
			if (ev.type != KT_EV_ALLOC && ev.type != KT_EV_FREE)
				continue;
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

/* ---- the golden file ----------------------------------------------------- */

#define MEM_GOLDEN KT_TEST_DATA "/mem_v5.katra"

/* A memory record: @type, pool @pool, pointer @ptr and (an allocation)
 * @size, appended at @at; the new end. */
static size_t put_mem(uint8_t *buf, size_t at, uint64_t ts, uint8_t type, uint32_t pool,
		      uint64_t ptr, uint64_t size)
{
	uint8_t p[16];
	kt__put64(p, ptr);
	kt__put64(p + 8, size);
	kt_event ev = { .ts = ts, .name_id = pool, .type = type,
			.payload_len = type == KT_EV_ALLOC ? 16 : 8, .payload = p };
	size_t n = kt_event_encode(buf + at, 1024 - at, &ev);
	cr_assert_gt(n, 0);
	return at + n;
}

#define A(ts, pool, ptr, size) at = put_mem(ev, at, ts, KT_EV_ALLOC, pool, ptr, size)
#define F(ts, pool, ptr) at = put_mem(ev, at, ts, KT_EV_FREE, pool, ptr, 0)

/*
 * Pools: 0 the default, 1 "textures", 2 "meshes".  Thread 1 (raw chunk):
 * textures reuses a freed pointer; the default pool frees one it never
 * allocated; meshes allocates a live pointer again (its free was lost).
 * Thread 2 (compact chunk), later: textures freed to 0, the default pool
 * one more allocation.  So, per pool (allocs, frees, unknown, bytes,
 * peak, live at end): default 3, 2, 1, 450, 400, 350; textures 3, 3, 0,
 * 13312, 9216, 0; meshes 2, 0, 0, 96, 64, 32 (one replaced).
 */
static uint8_t *mem_file(size_t *len)
{
	kt_header h;
	kt_writer *w;
	t_header(&h);
	int fd = memfd_create("mem", MFD_CLOEXEC);
	cr_assert_eq(kt_writer_open_fd(fd, &h, &w), 0);
	cr_assert_eq(kt_writer_name(w, 1, "textures", 8), 0);
	cr_assert_eq(kt_writer_name(w, 2, "meshes", 6), 0);
	cr_assert_eq(kt_writer_name(w, 3, "load", 4), 0);
	cr_assert_eq(kt_writer_thread(w, 1, 1001, "main"), 0);
	cr_assert_eq(kt_writer_thread(w, 2, 1002, "loader"), 0);
	uint8_t ev[1024];
	size_t at = 0;
	A(2000000, 0, 0x1000, 100);
	A(2001000, 1, 0x2000, 4096);
	A(2002000, 1, 0x3000, 1024);
	F(2003000, 1, 0x2000);
	A(2004000, 0, 0x1100, 300);
	F(2005000, 0, 0x1000);
	F(2006000, 0, 0x9999);
	A(2007000, 2, 0x5000, 64);
	A(2008000, 2, 0x5000, 32);
	A(2009000, 1, 0x2000, 8192);
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_NONE, 1, ev, at), 0);
	at = 0;
	kt_event zb = { .ts = 3000000, .name_id = 3, .type = KT_EV_ZONE_BEGIN };
	at += kt_event_encode(ev, sizeof(ev), &zb);
	F(3001000, 1, 0x3000);
	F(3002000, 1, 0x2000);
	A(3003000, 0, 0x7000, 50);
	kt_event ze = { .ts = 3004000, .name_id = 3, .type = KT_EV_ZONE_END };
	at += kt_event_encode(ev + at, sizeof(ev) - at, &ze);
	cr_assert_eq(kt_writer_chunk(w, 2, KT_CODEC_COMPACT, 1, ev, at), 0);
	uint8_t *p = t_writer_done(w, fd, len, 1);
	cr_assert_not_null(p);
	return p;
}

/* The bytes are pinned (KT_REGEN_GOLDEN=1 rewrites them) and read back
 * to the records written, the compact chunk's too. */
Test(mem, golden_file_matches_committed_bytes_and_reads_back)
{
	size_t len = 0, glen = 0;
	uint8_t *file = mem_file(&len);
	uint8_t *golden = t_golden_same(MEM_GOLDEN, file, len, &glen);
	struct mem_seen m;
	mem_read_back(MEM_GOLDEN, &m);
	cr_assert_eq(m.n, 13);
	cr_assert_eq(m.type[9], KT_EV_ALLOC);
	cr_assert_eq(m.size[9], 8192);
	cr_assert_eq(m.type[10], KT_EV_FREE);     /* the compact chunk's */
	cr_assert_eq(m.pool[10], 1);
	cr_assert_eq(m.ptr[11], 0x2000);
	cr_assert_eq(m.type[12], KT_EV_ALLOC);
	cr_assert_eq(m.ptr[12], 0x7000);
	cr_assert_eq(m.size[12], 50);
	free(file);
	free(golden);
}

Test(mem, dump_and_stats_match_committed_text)
{
	t_cli_golden("dump", "mem_v5.katra", KT_TEST_DATA "/mem_v5.dump.txt");
	t_cli_golden("stats", "mem_v5.katra", KT_TEST_DATA "/mem_v5.stats.txt");
}

static uint64_t jget(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	cr_assert(json_is_integer(v), "no %s", key);
	return (uint64_t)json_integer_value(v);
}

/* stats --json of @file (in tests/data, or a path): its "memory" array. */
static json_t *mem_json(const char *file, json_t **doc)
{
	struct proc p;
	run_katra(&p, (const char *const[]){ "stats", "--json", file, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	*doc = json_loadb(p.out, p.out_len, 0, NULL);
	cr_assert_not_null(*doc);
	json_t *m = json_object_get(*doc, "memory");
	cr_assert(json_is_array(m));
	return m;
}

/* Per pool the exact counts, peak and live bytes of mem_file()'s plan. */
Test(mem, stats_json_gives_each_pool_its_peak_and_live_bytes)
{
	json_t *doc, *m = mem_json("mem_v5.katra", &doc);
	static const struct {
		uint64_t id, allocs, frees, unknown, replaced, bytes, peak, live;
	} want[] = {
		{ 0, 3, 2, 1, 0, 450, 400, 350 },
		{ 1, 3, 3, 0, 0, 13312, 9216, 0 },
		{ 2, 2, 0, 0, 1, 96, 64, 32 },
	};
	cr_assert_eq(json_array_size(m), 3);
	for (size_t i = 0; i < 3; i++) {
		json_t *o = json_array_get(m, i);
		cr_assert_eq(jget(o, "id"), want[i].id);
		cr_assert_eq(jget(o, "allocs"), want[i].allocs, "pool %zu", i);
		cr_assert_eq(jget(o, "frees"), want[i].frees, "pool %zu", i);
		cr_assert_eq(jget(o, "unknown_frees"), want[i].unknown, "pool %zu", i);
		cr_assert_eq(jget(o, "replaced"), want[i].replaced, "pool %zu", i);
		cr_assert_eq(jget(o, "bytes"), want[i].bytes, "pool %zu", i);
		cr_assert_eq(jget(o, "peak_live"), want[i].peak, "pool %zu", i);
		cr_assert_eq(jget(o, "live_at_end"), want[i].live, "pool %zu", i);
	}
	json_t *top = json_object_get(json_array_get(m, 1), "largest");
	/* 0x2000 once, at its larger size (4096, then 8192): each pointer
	 * is one row. */
	cr_assert_eq(json_array_size(top), 2);
	cr_assert_eq(jget(json_array_get(top, 0), "size"), 8192);
	cr_assert_eq(jget(json_array_get(top, 0), "allocations"), 1);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(top, 1), "ptr")),
			 "0x3000");
	json_decref(doc);
}

/* Each pool's live bytes as a Chrome counter track, in time order. */
Test(mem, chrome_export_has_a_live_bytes_counter_per_pool)
{
	char out[128];
	snprintf(out, sizeof(out), "/tmp/katra-mem-chrome-%d.json", (int)getpid());
	unlink(out);
	struct proc p;
	run_katra(&p, (const char *const[]){ "export", "--chrome", "mem_v5.katra", out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	json_t *doc = json_load_file(out, 0, NULL);
	cr_assert_not_null(doc);
	json_t *evs = json_object_get(doc, "traceEvents"), *e;
	size_t i;
	uint64_t tex[8];
	size_t ntex = 0, ndef = 0, last_def = 0;
	json_array_foreach(evs, i, e) {
		/* One counter "memory", a value per pool keyed by the pool's name: the
		 * key names the plot in Tracy. */
		const char *name = json_string_value(json_object_get(e, "name"));
		if (!name || strcmp(name, "memory"))
			continue;
		cr_assert_str_eq(json_string_value(json_object_get(e, "ph")), "C");
		json_t *args = json_object_get(e, "args");
		cr_assert_eq(json_object_size(args), 1);
		if (json_object_get(args, "textures") && ntex < 8)
			tex[ntex++] = jget(args, "textures");
		else if (json_object_get(args, "default"))
			ndef++, last_def = jget(args, "default");
	}
	static const uint64_t want[] = { 4096, 5120, 1024, 9216, 8192, 0 };
	cr_assert_eq(ntex, 6);
	for (size_t k = 0; k < 6; k++)
		cr_assert_eq(tex[k], want[k], "textures sample %zu", k);
	cr_assert_eq(ndef, 5);
	cr_assert_eq(last_def, 350);
	json_decref(doc);
	unlink(out);
}

/* A hostile file's pools: past MEM_POOLS (256) they are counted, not
 * tabled, and each free of a pointer never allocated is an unknown free. */
Test(mem, pools_past_the_cap_are_counted_not_kept)
{
	static uint8_t ev[1 << 16];
	size_t at = 0;
	for (uint32_t pool = 1; pool <= 300; pool++) {
		kt_event e = { .ts = pool, .name_id = pool, .type = KT_EV_FREE, .payload_len = 8,
			       .payload = (const uint8_t *)"\1\0\0\0\0\0\0\0" };
		at += kt_event_encode(ev + at, sizeof(ev) - at, &e);
	}
	size_t len;
	uint8_t *file = t_one_chunk_file(KT_CODEC_NONE, 0, ev, at, &len);
	cr_assert_not_null(file);
	char path[128];
	mem_path(path, sizeof(path), "pools");
	FILE *f = fopen(path, "wb");
	cr_assert(f && fwrite(file, 1, len, f) == len && !fclose(f));
	struct proc p;
	run_katra(&p, (const char *const[]){ "stats", path, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	size_t rows = 0;
	for (const char *s = p.out; (s = memmem(s, p.out_len - (size_t)(s - p.out), "largest:", 8));
	     s += 8)
		rows++;
	cr_assert_eq(rows, 256, "%.*s", (int)p.out_len, p.out);
	static const char over[] = "memory: 44 records of pools past the first 256";
	cr_assert_not_null(memmem(p.out, p.out_len, over, strlen(over)));
	/* A kept pool (unnamed) freed one pointer it never allocated. */
	char row[128];
	snprintf(row, sizeof(row), "\n%-20s %10d %10d %14d %14d %14d %8d\n", "?", 0, 1, 0, 0, 0, 1);
	cr_assert_not_null(memmem(p.out, p.out_len, row, strlen(row)));
	free(file);
	unlink(path);
}

/* export --perfetto: a counter track "memory <pool>" (unit bytes) per pool
 * with its live bytes, decoded with the project's generated protobuf code. */
Test(mem, perfetto_export_has_a_live_bytes_track_per_pool)
{
	Perfetto__Protos__Trace *tr = t_perfetto("mem_v5.katra");
	uint64_t uuid = 0;
	int64_t live[8];
	size_t n = 0;
	for (size_t i = 0; i < tr->n_packet; i++) {
		const Perfetto__Protos__TracePacket *pk = tr->packet[i];
		int is_td = pk->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
		int is_te = pk->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
		const Perfetto__Protos__TrackDescriptor *td = is_td ? pk->track_descriptor : NULL;
		if (td && td->name && !strcmp(td->name, "memory textures")) {
			cr_assert(td->counter && td->counter->unit == 3); /* bytes */
			uuid = td->uuid;
		}
		const Perfetto__Protos__TrackEvent *te = is_te ? pk->track_event : NULL;
		if (te && uuid && te->track_uuid == uuid && n < 8) {
			cr_assert(te->has_counter_value);
			live[n++] = te->counter_value;
		}
	}
	static const int64_t want[] = { 4096, 5120, 1024, 9216, 8192, 0 };
	cr_assert_eq(n, 6);
	for (size_t k = 0; k < 6; k++)
		cr_assert_eq(live[k], want[k], "textures sample %zu", k);
	t_perfetto_free(tr);
}
