/*
 * Tracks with a clock of their own (issue #15's GPU item): the producer's
 * table and records, the track entry (SPEC §4.9) both ways, the reader's
 * conversion to katra's clock, hostile entries, and what dump, stats and
 * the exports make of them.
 */
#include "helpers.h"
#include "cli.h"

#include <katra/track.h>
#include <katra/reader.h>
#include <inttypes.h>
#include <jansson.h>
#include <xxhash.h>

#include "format/format.h"
#include "tools/pipeline/tracks.h"
#include "fxt.h"
#include "perfetto.h"

#define TRACK_GOLDEN KT_TEST_DATA "/tracks_v5.katra"

/* ---- conversion ---------------------------------------------------------- */

/* A 19.2 MHz clock against katra's 3 GHz ticks (t_header()): one track
 * tick is 156.25 ticks; between the pairs the GPU clock runs 100 ppm slow. */
static const kt_track_pair gpu_pairs[] = { { 1000000, 3000000 }, { 1019200, 6000300 } };
static const kt_track_def gpu = { 1, 1, 19200000, 2, gpu_pairs };

static uint64_t conv(const kt_track_def *t, uint64_t ts)
{
	uint64_t ticks = 0;
	cr_assert_eq(kt_track_to_ticks(t, 3000000000u, ts, &ticks), 0, "ts %" PRIu64, ts);
	return ticks;
}

Test(track, conversion_interpolates_between_pairs_and_extrapolates_outside)
{
	cr_assert_eq(conv(&gpu, 1000000), 3000000);
	cr_assert_eq(conv(&gpu, 1019200), 6000300);
	/* 1920 of 19200 track ticks past the first pair: a tenth of 3000300. */
	cr_assert_eq(conv(&gpu, 1001920), 3300030);
	cr_assert_eq(conv(&gpu, 1009600), 4500150);
	cr_assert_eq(conv(&gpu, 1000001), 3000156); /* floor(3000300 / 19200) */
	/* Past the last pair: its offset at the nominal rate (156.25/tick). */
	cr_assert_eq(conv(&gpu, 1038400), 9000300);
	cr_assert_eq(conv(&gpu, 1019204), 6000925);
	/* Before the first: the first pair's offset, going back. */
	cr_assert_eq(conv(&gpu, 990400), 1500000);
	cr_assert_eq(conv(&gpu, 980800), 0);
	/* One pair: its offset everywhere. */
	kt_track_def one = { 2, 1, 1000000000, 1, gpu_pairs };
	cr_assert_eq(conv(&one, 1000010), 3000030);
}

Test(track, conversion_refuses_what_it_cannot_do)
{
	uint64_t t = 7;
	kt_track_def none = { 1, 1, 19200000, 0, NULL };
	cr_assert_eq(kt_track_to_ticks(&none, 3000000000u, 5, &t), -ENODATA);
	cr_assert_eq(kt_track_to_ticks(&gpu, 3000000000u, 980799, &t), -ERANGE); /* before 0 */
	cr_assert_eq(kt_track_to_ticks(&gpu, 3000000000u, UINT64_MAX, &t), -ERANGE);
	cr_assert_eq(kt_track_to_ticks(&gpu, 0, 1000000, &t), -EINVAL);
	kt_track_def zero = gpu;
	zero.clock_hz = 0;
	cr_assert_eq(kt_track_to_ticks(&zero, 3000000000u, 1000000, &t), -EINVAL);
	static const kt_track_pair back[] = { { 10, 100 }, { 20, 90 } };
	kt_track_def bad = { 1, 1, 1000, 2, back };
	cr_assert_eq(kt_track_to_ticks(&bad, 1000, 15, &t), -EINVAL);
	cr_assert_eq(t, 7, "no result on failure");
}

/* ---- the golden file ----------------------------------------------------- */

static size_t put_track(uint8_t *buf, size_t at, uint64_t ts, uint8_t type, uint32_t name,
			uint8_t track, uint64_t track_ts, uint64_t value)
{
	uint8_t p[16];
	kt__put64(p, track_ts);
	kt__put64(p + 8, value);
	kt_event ev = { .ts = ts, .name_id = name, .type = type, .flags = track,
			.payload_len = type >= KT_EV_TRACK_COUNTER_I64 ? 16 : 8, .payload = p };
	size_t n = kt_event_encode(buf + at, 2048 - at, &ev);
	cr_assert_gt(n, 0);
	return at + n;
}

#define B(ts, name, tt) at = put_track(ev, at, ts, KT_EV_TRACK_BEGIN, name, 1, tt, 0)
#define E(ts, name, tt) at = put_track(ev, at, ts, KT_EV_TRACK_END, name, 1, tt, 0)

/*
 * Names: 1 "gpu", 2 "shadow", 3 "lighting", 4 "gpu memory", 5 "post",
 * 6 "gpu temp", 7 "render".  Track 1 "gpu" at 19.2 MHz with gpu_pairs.
 * Thread 1 (raw chunk), its results late, as a batch: shadow then
 * lighting between the pairs, a memory counter, a temperature before
 * the first pair, a record of track 7, which has no entry.  Thread 2
 * (compact chunk): "post" after the last pair, nesting "shadow".
 */
static uint8_t *track_file(size_t *len)
{
	kt_header h;
	kt_writer *w;
	t_header(&h);
	int fd = memfd_create("track", MFD_CLOEXEC);
	cr_assert_eq(kt_writer_open_fd(fd, &h, &w), 0);
	static const char *const names[] = { NULL, "gpu", "shadow", "lighting", "gpu memory",
					     "post", "gpu temp", "render" };
	for (uint32_t i = 1; i < 8; i++)
		cr_assert_eq(kt_writer_name(w, i, names[i], strlen(names[i])), 0);
	cr_assert_eq(kt_writer_thread(w, 1, 1001, "main"), 0);
	cr_assert_eq(kt_writer_thread(w, 2, 1002, "render"), 0);
	uint8_t ev[2048];
	size_t at = 0;
	kt_event zb = { .ts = 7000000, .name_id = 7, .type = KT_EV_ZONE_BEGIN };
	at += kt_event_encode(ev, sizeof(ev), &zb);
	B(7000100, 2, 1001920);
	E(7000200, 2, 1003840);
	B(7000300, 3, 1003840);
	at = put_track(ev, at, 7000400, KT_EV_TRACK_COUNTER_I64, 4, 1, 1004800, 4096);
	E(7000500, 3, 1009600);
	double temp = 61.5;
	uint64_t bits;
	memcpy(&bits, &temp, 8);
	at = put_track(ev, at, 7000600, KT_EV_TRACK_COUNTER_F64, 6, 1, 990400, bits);
	at = put_track(ev, at, 7000700, KT_EV_TRACK_BEGIN, 2, 7, 1000000, 0);
	kt_event ze = { .ts = 7000800, .name_id = 7, .type = KT_EV_ZONE_END };
	at += kt_event_encode(ev + at, sizeof(ev) - at, &ze);
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_NONE, 1, ev, at), 0);
	at = 0;
	B(12000000, 5, 1038400);
	B(12000100, 2, 1038400);
	E(12000200, 2, 1039360);
	E(12000300, 5, 1040320);
	cr_assert_eq(kt_writer_chunk(w, 2, KT_CODEC_COMPACT, 1, ev, at), 0);
	cr_assert_eq(kt_writer_track(w, &gpu), 0);
	uint8_t *p = t_writer_done(w, fd, len, 1);
	cr_assert_not_null(p);
	return p;
}

/* The track records of a file, in file order, and its track entry. */
struct seen {
	kt_track_event te[16];
	uint8_t type[16];
	uint32_t name[16];
	size_t n;
	int tracks;
	kt_track_def def;
	kt_track_pair pairs[4];
};

static int read_back(kt_reader *r, struct seen *s)
{
	kt_trace_frame f;
	kt_chunk_iter it;
	kt_event ev;
	int rc;
	memset(s, 0, sizeof(*s));
	while ((rc = kt_reader_next_frame(r, &f)) > 0) {
		const kt_track_def *d = kt_trace_frame_get_track(&f);
		if (d) {
			if (!s->tracks++) {
				s->def = *d;
				memcpy(s->pairs, d->pairs, 16 * (d->pair_count < 4 ? d->pair_count : 4));
			}
			continue;
		}
		kt_chunk_iter_init(&it, &f);
		while (kt_chunk_next(&it, &ev) > 0 && s->n < 16) {
			if (!kt_event_get_track(&ev, &s->te[s->n]))
				continue;
			s->type[s->n] = ev.type;
			s->name[s->n++] = ev.name_id;
		}
	}
	return rc;
}

Test(track, golden_file_matches_committed_bytes_and_reads_back)
{
	size_t len = 0, glen = 0;
	uint8_t *file = track_file(&len);
	uint8_t *golden = t_golden_same(TRACK_GOLDEN, file, len, &glen);
	kt_reader *r;
	struct seen s;
	cr_assert_eq(kt_reader_open_mem(golden, glen, NULL, &r), 0);
	cr_assert_eq(read_back(r, &s), 0);
	kt_reader_close(r);
	cr_assert_eq(s.tracks, 1);
	cr_assert_eq(s.def.id, 1);
	cr_assert_eq(s.def.name_id, 1);
	cr_assert_eq(s.def.clock_hz, 19200000);
	cr_assert_eq(s.def.pair_count, 2);
	cr_assert_eq(s.pairs[1].track_ts, 1019200);
	cr_assert_eq(s.pairs[1].ticks, 6000300);
	cr_assert_eq(s.n, 11);
	cr_assert_eq(s.type[3], KT_EV_TRACK_COUNTER_I64);
	cr_assert_eq(s.te[3].value_i64, 4096);
	cr_assert_eq(s.te[3].track_ts, 1004800);
	cr_assert_eq(s.type[5], KT_EV_TRACK_COUNTER_F64);
	cr_assert(s.te[5].value_f64 == 61.5);
	cr_assert_eq(s.te[6].track, 7);
	/* The compact chunk's, predicted or not, come back whole. */
	cr_assert_eq(s.type[9], KT_EV_TRACK_END);
	cr_assert_eq(s.name[9], 2);
	cr_assert_eq(s.te[9].track, 1);
	cr_assert_eq(s.te[9].track_ts, 1039360);
	cr_assert_eq(s.te[10].track_ts, 1040320);
	free(file);
	free(golden);
}

Test(track, dump_and_stats_match_committed_text)
{
	t_cli_golden("dump", "tracks_v5.katra", KT_TEST_DATA "/tracks_v5.dump.txt");
	t_cli_golden("stats", "tracks_v5.katra", KT_TEST_DATA "/tracks_v5.stats.txt");
}

/* ---- the producer -------------------------------------------------------- */

static void track_path(char *buf, size_t n, const char *tag)
{
	snprintf(buf, n, "/tmp/katra-track-%s-%d.katra", tag, (int)getpid());
	unlink(buf);
}

Test(track, a_session_writes_tracks_pairs_and_records)
{
	char path[128];
	track_path(path, sizeof(path), "api");
	int gpu_id = kt_track_create("test gpu", 19200000);
	cr_assert_gt(gpu_id, 0);
	cr_assert_eq(kt_track_create("test gpu", 19200000), gpu_id, "one name, one track");
	cr_assert_eq(kt_track_create("test gpu", 1000), -EEXIST);
	cr_assert_eq(kt_track_create("test other", 0), -EINVAL);
	cr_assert_eq(kt_track_create("", 1000), -EINVAL);
	cr_assert_eq(kt_track_calibrate(0, 1, 1), -EINVAL);
	cr_assert_eq(kt_track_calibrate(KT_MAX_TRACKS, 1, 1), -EINVAL);
	cr_assert_eq(kt_track_calibrate((uint32_t)gpu_id, 100, 1000), 0);
	cr_assert_eq(kt_track_calibrate((uint32_t)gpu_id, 100, 2000), -EINVAL, "same track time");
	cr_assert_eq(kt_track_calibrate((uint32_t)gpu_id, 200, 1000), -EINVAL, "same ticks");
	kt_session *s;
	cr_assert_eq(kt_session_start(path, NULL, &s), 0);
	uint32_t draw = kt_name("draw");
	kt_track_zone_begin((uint32_t)gpu_id, draw, 150);
	kt_track_counter((uint32_t)gpu_id, draw, 160, -5);
	kt_track_counter_f64((uint32_t)gpu_id, draw, 170, 0.25);
	kt_track_zone_end((uint32_t)gpu_id, draw, 190);
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	kt_reader *r;
	struct seen sn;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	cr_assert_eq(read_back(r, &sn), 0);
	kt_reader_close(r);
	cr_assert_eq(sn.tracks, 1);
	cr_assert_eq(sn.def.id, (uint32_t)gpu_id);
	cr_assert_eq(sn.def.clock_hz, 19200000);
	cr_assert_eq(sn.def.pair_count, 1);
	cr_assert_eq(sn.pairs[0].track_ts, 100);
	cr_assert_eq(sn.pairs[0].ticks, 1000);
	cr_assert_eq(sn.n, 4);
	static const uint8_t types[] = { KT_EV_TRACK_BEGIN, KT_EV_TRACK_COUNTER_I64,
					 KT_EV_TRACK_COUNTER_F64, KT_EV_TRACK_END };
	static const uint64_t ts[] = { 150, 160, 170, 190 };
	for (size_t i = 0; i < 4; i++) {
		cr_assert_eq(sn.type[i], types[i], "record %zu", i);
		cr_assert_eq(sn.te[i].track, (uint32_t)gpu_id);
		cr_assert_eq(sn.te[i].track_ts, ts[i]);
		cr_assert_eq(sn.name[i], draw);
	}
	cr_assert_eq(sn.te[1].value_i64, -5);
	cr_assert(sn.te[2].value_f64 == 0.25);
	unlink(path);
}

/* Past KT_MAX_TRACK_PAIRS the table halves: the first pair and the newest
 * stay, and what the session writes is a valid entry. */
Test(track, calibration_pairs_thin_out_and_stay_bounded)
{
	char path[128];
	track_path(path, sizeof(path), "thin");
	int id = kt_track_create("thin", 1000);
	cr_assert_gt(id, 0);
	for (uint64_t i = 0; i < 1500; i++)
		cr_assert_eq(kt_track_calibrate((uint32_t)id, 10 * i, 100 * i + 7), 0);
	kt_session *s;
	cr_assert_eq(kt_session_start(path, NULL, &s), 0);
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	kt_reader *r;
	kt_trace_frame f;
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	int found = 0;
	while (kt_reader_next_frame(r, &f) > 0) {
		const kt_track_def *d = kt_trace_frame_get_track(&f);
		if (!d || d->id != (uint32_t)id)
			continue;
		found = 1;
		/* 1024 full, halved to 512, then 476 more. */
		cr_assert_eq(d->pair_count, 988);
		cr_assert_eq(d->pairs[0].track_ts, 0);
		cr_assert_eq(d->pairs[1].track_ts, 20);
		cr_assert_eq(d->pairs[511].track_ts, 10220);
		cr_assert_eq(d->pairs[512].track_ts, 10240);
		cr_assert_eq(d->pairs[987].track_ts, 14990);
		cr_assert_eq(d->pairs[987].ticks, 149907);
	}
	kt_reader_close(r);
	cr_assert(found);
	unlink(path);
}

/* ---- hostile entries ----------------------------------------------------- */

/* A file of one track entry whose body is @body (@n bytes). */
static int read_track_body(const uint8_t *body, uint32_t n, kt_reader_error *err)
{
	kt_header h;
	kt_writer *w;
	t_header(&h);
	int fd = memfd_create("hostile", MFD_CLOEXEC);
	cr_assert_eq(kt_writer_open_fd(fd, &h, &w), 0);
	cr_assert_eq(kt_writer_track(w, &gpu), 0);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
	size_t len;
	uint8_t *file = t_slurp_fd(fd, &len);
	close(fd);
	/* Put @body in place of the entry's, fixing its length and sums. */
	size_t off = 24 + ((kt__get32(file + 12) + 7) & ~7u);
	cr_assert_eq(file[off + 4], KT_FRAME_TRACK);
	size_t old = 16 + ((kt__get32(file + off) + 7) & ~7u), nw = 16 + ((n + 7) & ~7u);
	uint8_t *out = calloc(1, len - old + nw);
	memcpy(out, file, off);
	kt__put32(out + off, n);
	out[off + 4] = KT_FRAME_TRACK;
	kt__put16(out + off + 6, (uint16_t)XXH3_64bits(out + off, 6));
	memcpy(out + off + 8, body, n);
	kt__put64(out + off + nw - 8, XXH3_64bits(out + off, nw - 8));
	memcpy(out + off + nw, file + off + old, len - off - old);
	kt_reader *r;
	kt_trace_frame f;
	int rc = kt_reader_open_mem(out, len - old + nw, err, &r);
	cr_assert_eq(rc, 0);
	while ((rc = kt_reader_next_frame(r, &f)) > 0)
		;
	if (rc)
		*err = *kt_reader_get_last_error(r);
	kt_reader_close(r);
	free(out);
	free(file);
	return rc;
}

static uint32_t track_body(uint8_t *b, uint32_t id, uint64_t hz, uint32_t count,
			   uint32_t npairs, const uint64_t *pairs)
{
	memset(b, 0, 24);
	kt__put32(b, id);
	kt__put32(b + 4, 1);
	kt__put64(b + 8, hz);
	kt__put32(b + 16, count);
	for (uint32_t i = 0; i < 2 * npairs; i++)
		kt__put64(b + 24 + 8 * i, pairs[i]);
	return 24 + 16 * npairs;
}

Test(track, hostile_entries_are_refused_with_their_reason)
{
	uint8_t b[256];
	kt_reader_error e;
	static const uint64_t up[] = { 10, 100, 20, 200 }, back[] = { 10, 100, 20, 50 },
			      same[] = { 10, 100, 10, 200 };
	cr_assert_eq(read_track_body(b, track_body(b, 1, 1000, 2, 2, up), &e), 0);
	cr_assert_eq(read_track_body(b, track_body(b, 1, 0, 2, 2, up), &e), KT_EFRAME);
	cr_assert(strstr(e.message, "0 Hz"), "%s", e.message);
	cr_assert_eq(read_track_body(b, track_body(b, 1, 1000, 2, 2, back), &e), KT_EFRAME);
	cr_assert(strstr(e.message, "not increasing"), "%s", e.message);
	cr_assert_eq(read_track_body(b, track_body(b, 1, 1000, 2, 2, same), &e), KT_EFRAME);
	cr_assert_eq(read_track_body(b, track_body(b, 0, 1000, 2, 2, up), &e), KT_EFRAME);
	cr_assert_eq(read_track_body(b, track_body(b, 256, 1000, 2, 2, up), &e), KT_EFRAME);
	/* A huge count is refused by its cap before any multiplication or
	 * allocation; a count the body does not hold, by the length. */
	cr_assert_eq(read_track_body(b, track_body(b, 1, 1000, UINT32_MAX, 2, up), &e), KT_EFRAME);
	cr_assert(strstr(e.message, "4294967295 pairs"), "%s", e.message);
	cr_assert_eq(read_track_body(b, track_body(b, 1, 1000, 3, 2, up), &e), KT_EFRAME);
	cr_assert_eq(read_track_body(b, track_body(b, 1, 1000, 1025, 2, up), &e), KT_EFRAME);
	cr_assert_eq(read_track_body(b, 20, &e), KT_EFRAME); /* under the fixed part */
	uint32_t n = track_body(b, 1, 1000, 2, 2, up);
	b[20] = 1;
	cr_assert_eq(read_track_body(b, n, &e), KT_ERESERVED);
}

Test(track, the_writer_refuses_what_the_reader_would)
{
	kt_header h;
	kt_writer *w;
	t_header(&h);
	int fd = memfd_create("refuse", MFD_CLOEXEC);
	cr_assert_eq(kt_writer_open_fd(fd, &h, &w), 0);
	kt_track_def d = gpu;
	d.clock_hz = 0;
	cr_assert_eq(kt_writer_track(w, &d), -EINVAL);
	d = gpu;
	d.id = 0;
	cr_assert_eq(kt_writer_track(w, &d), -EINVAL);
	d = gpu;
	d.pair_count = KT_MAX_TRACK_PAIRS + 1;
	cr_assert_eq(kt_writer_track(w, &d), -EINVAL);
	static const kt_track_pair back[] = { { 10, 100 }, { 20, 90 } };
	d = gpu;
	d.pairs = back;
	cr_assert_eq(kt_writer_track(w, &d), -EINVAL);
	cr_assert_eq(kt_writer_close(w), 0);
	close(fd);
}

/* ---- the exports --------------------------------------------------------- */

static json_t *export_chrome(void)
{
	size_t len = 0;
	uint8_t *bytes = t_export("--chrome", "tracks_v5.katra", &len);
	json_t *doc = json_loadb((const char *)bytes, len, 0, NULL);
	cr_assert_not_null(doc);
	free(bytes);
	return doc;
}

/* Each track is a thread row named after it, its zones complete events
 * at their converted times (us, 3 decimals), nested as on the track. */
Test(track, chrome_export_draws_a_row_per_track)
{
	json_t *doc = export_chrome(), *e;
	json_t *evs = json_object_get(doc, "traceEvents");
	size_t i, nx = 0, named = 0;
	const json_int_t tid = 0xffffff01;
	/* "post" begins with "shadow" inside it: it goes out as B before
	 * shadow's X and E after it (parent first at the same time), so a
	 * viewer that sorts by begin time alone nests them right. */
	static const char *const want[] = { "shadow", "lighting", "shadow" };
	static const double ts[] = { 766.676, 866.686, 2666.766 };
	static const double dur[] = { 100.010, 300.030, 50.0 };
	size_t nb = 0, ne = 0;
	json_array_foreach(evs, i, e) {
		const char *ph = json_string_value(json_object_get(e, "ph"));
		const char *name = json_string_value(json_object_get(e, "name"));
		if (json_integer_value(json_object_get(e, "tid")) != tid)
			continue;
		if (!strcmp(ph, "M") && !strcmp(name, "thread_name")) {
			json_t *a = json_object_get(e, "args");
			cr_assert_str_eq(json_string_value(json_object_get(a, "name")), "gpu");
			named++;
		} else if (!strcmp(ph, "B") || !strcmp(ph, "E")) {
			cr_assert_str_eq(name, "post");
			double t = json_number_value(json_object_get(e, "ts")) - 123456.0 - 0.0003 -
				   (*ph == 'B' ? 2666.766 : 2766.766);
			cr_assert(t < 1e-6 && t > -1e-6, "post's %s off by %g", ph, t);
			cr_assert_eq(nx, *ph == 'B' ? 2u : 3u, "post's B before shadow's X, E after");
			nb += *ph == 'B';
			ne += *ph == 'E';
		} else if (!strcmp(ph, "X")) {
			cr_assert_lt(nx, 3);
			cr_assert_str_eq(name, want[nx]);
			/* each time carries 0.3 ns (tools/pipeline/digits.h) */
			double t = json_number_value(json_object_get(e, "ts")) - 123456.0 - 0.0003 - ts[nx];
			double d = json_number_value(json_object_get(e, "dur")) - 0.0003 - dur[nx];
			cr_assert(t < 1e-6 && t > -1e-6, "zone %zu's ts off by %g", nx, t);
			cr_assert(d < 1e-6 && d > -1e-6, "zone %zu's dur off by %g", nx, d);
			nx++;
		}
	}
	cr_assert_eq(named, 1);
	cr_assert_eq(nx, 3);
	cr_assert_eq(nb, 1);
	cr_assert_eq(ne, 1);
	json_decref(doc);
}

/* A TrackDescriptor per track, named after it, and on it balanced slices
 * at the converted times; its counters as counter tracks under it. */
Test(track, perfetto_export_has_a_track_per_track)
{
	Perfetto__Protos__Trace *tr = t_perfetto("tracks_v5.katra");
	uint64_t uuid = 0, mem = 0, temp = 0;
	int depth = 0, maxdepth = 0, begins = 0, counters = 0;
	uint64_t times[8];
	size_t nt = 0;
	for (size_t i = 0; i < tr->n_packet; i++) {
		const Perfetto__Protos__TracePacket *pk = tr->packet[i];
		const Perfetto__Protos__TrackDescriptor *td =
			pk->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR
				? pk->track_descriptor : NULL;
		if (td && td->name && !strcmp(td->name, "gpu"))
			uuid = td->uuid;
		/* The track's counters: tracks of their own under it. */
		if (td && td->name && td->counter && td->parent_uuid == uuid)
			*(!strcmp(td->name, "gpu memory") ? &mem : &temp) = td->uuid;
		const Perfetto__Protos__TrackEvent *te =
			pk->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT
				? pk->track_event : NULL;
		if (te && mem && te->track_uuid == mem) {
			cr_assert(te->has_counter_value && te->counter_value == 4096);
			cr_assert_eq(pk->timestamp, 124372691);
			counters++;
		}
		if (te && temp && te->track_uuid == temp) {
			cr_assert(te->has_double_counter_value && te->double_counter_value == 61.5);
			cr_assert_eq(pk->timestamp, 123622666);
			counters++;
		}
		if (!te || !uuid || te->track_uuid != uuid)
			continue;
		int b = pk->track_event->type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
		depth += b ? 1 : -1;
		begins += b;
		maxdepth = depth > maxdepth ? depth : maxdepth;
		cr_assert_geq(depth, 0);
		if (nt < 8)
			times[nt++] = pk->timestamp;
	}
	cr_assert_eq(counters, 2);
	cr_assert_eq(depth, 0, "balanced");
	cr_assert_eq(begins, 4);
	cr_assert_eq(maxdepth, 2);
	static const uint64_t want[] = { 124222676, 124322686, 124322686, 124622716,
					 126122766, 126122766, 126172766, 126222766 };
	cr_assert_eq(nt, 8);
	for (size_t k = 0; k < 8; k++)
		cr_assert_eq(times[k], want[k], "slice time %zu", k);
	t_perfetto_free(tr);
}

/* The track's thread in katra's process, named after it through a kernel
 * object, and on it, in the order the records come, its zones' begins and
 * ends and its counters at their converted times (katra's ticks, 3 GHz:
 * 3300030 ticks is the Perfetto test's 124222676 ns, 123456000 ns at
 * 1000000 ticks). */
Test(track, fxt_export_has_a_thread_per_track)
{
	size_t len = 0;
	uint8_t *bytes = t_export("--fxt", "tracks_v5.katra", &len);
	static struct fxt f;
	read_fxt(&f, bytes, len);
	cr_assert_eq(f.tick_hz, 1000000000u, "ns, which Tracy's importer reads");
	cr_assert_eq(f.nthread_names, 3, "main, render and the track");
	cr_assert_str_eq(koid_name(&f, 1001), "main");
	cr_assert_str_eq(koid_name(&f, 1002), "render");
	const uint64_t koid = 0xffffff01;
	cr_assert_str_eq(koid_name(&f, koid), "gpu");
	static const struct { unsigned type; const char *name; uint64_t ts; } want[] = {
		{ 2, "shadow", 3300030 },	{ 3, "shadow", 3600060 },
		{ 2, "lighting", 3600060 },	{ 1, "gpu memory", 3750075 },
		{ 3, "lighting", 4500150 },	{ 1, "gpu temp", 1500000 },
		{ 2, "post", 9000300 },		{ 2, "shadow", 9000300 },
		{ 3, "shadow", 9150300 },	{ 3, "post", 9300300 },
	};
	size_t n = 0, others = 0;
	int depth = 0, maxdepth = 0;
	for (int i = 0; i < f.nev; i++) {
		const struct fxt_event *e = &f.ev[i];
		if (e->koid != koid) {
			others++;
			continue;
		}
		cr_assert_lt(n, 10);
		cr_assert_eq(e->type, want[n].type, "event %zu", n);
		cr_assert_str_eq(e->name, want[n].name, "event %zu", n);
		cr_assert_eq(e->ts, fxt_ns(KT_TEST_DATA "/tracks_v5.katra", want[n].ts),
			     "event %zu: ns of its ticks", n);
		depth += e->type == 2 ? 1 : e->type == 3 ? -1 : 0;
		cr_assert_geq(depth, 0);
		maxdepth = depth > maxdepth ? depth : maxdepth;
		n++;
	}
	cr_assert_eq(n, 10);
	cr_assert_eq(depth, 0, "balanced");
	cr_assert_eq(maxdepth, 2, "shadow inside post");
	cr_assert_eq(others, 2, "main's zone render: no track record on the emitting thread");
	/* The counters: an argument named as the counter, its id the track's
	 * and the name's. */
	double temp;
	const struct fxt_event *mem = NULL, *tmp = NULL;
	for (int i = 0; i < f.nev; i++)
		if (f.ev[i].type == 1)
			*(!strcmp(f.ev[i].name, "gpu memory") ? &mem : &tmp) = &f.ev[i];
	cr_assert(mem && tmp);
	cr_assert_str_eq(mem->arg_name[0], "gpu memory");
	cr_assert_eq(mem->arg_val[0], 4096);
	cr_assert_eq(mem->data, UINT64_C(1) << 32 | 4);
	cr_assert_str_eq(tmp->arg_name[0], "gpu temp");
	memcpy(&temp, &tmp->arg_val[0], sizeof(temp));
	cr_assert(temp == 61.5);
	cr_assert_eq(tmp->data, UINT64_C(1) << 32 | 6);
	free(bytes);
}

/* The record of track 7, which has no entry, is said by every export
 * that draws tracks, not dropped silently. */
Test(track, exports_say_the_records_they_cannot_show)
{
	static const char *const fmt[] = { "--chrome", "--perfetto", "--fxt" };
	char out[128];
	snprintf(out, sizeof(out), "/tmp/katra-track-say-%d.out", (int)getpid());
	for (size_t i = 0; i < 3; i++) {
		struct proc p;
		run_katra(&p, (const char *const[]){ "export", fmt[i], "tracks_v5.katra", out, NULL });
		cr_assert_eq(p.status, 0, "%s: %.*s", fmt[i], (int)p.err_len, p.err);
		cr_assert_str_eq(p.err, "katra: tracks_v5.katra: track records not shown: 1 of a "
				 "track with no entry, 0 whose time could not be converted to "
				 "katra's clock\n", "%s", fmt[i]);
		unlink(out);
	}
}

/* Track 1 (gpu_pairs): an end of shadow with no begin, post [shadow]
 * ended by post's end, lighting never ended; track 2, with no pair, one
 * begin.  The FXT export draws the track balanced and says what it
 * skipped and closed. */
Test(track, fxt_export_balances_a_hostile_track_and_says_so)
{
	char path[128];
	track_path(path, sizeof(path), "hostile-fxt");
	kt_header h;
	kt_writer *w;
	t_header(&h);
	cr_assert_eq(kt_writer_open(path, &h, &w), 0);
	static const char *const names[] = { NULL, "gpu", "shadow", "lighting", "post" };
	for (uint32_t i = 1; i < 5; i++)
		cr_assert_eq(kt_writer_name(w, i, names[i], strlen(names[i])), 0);
	uint8_t ev[2048];
	size_t at = 0;
	E(7000000, 2, 1001920);
	B(7000100, 4, 1001920);
	B(7000200, 2, 1003840);
	E(7000300, 4, 1009600);
	B(7000400, 3, 1009600);
	at = put_track(ev, at, 7000500, KT_EV_TRACK_BEGIN, 2, 2, 5, 0);
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_NONE, 1, ev, at), 0);
	kt_track_def none = { 2, 1, 1000, 0, NULL };
	cr_assert_eq(kt_writer_track(w, &gpu), 0);
	cr_assert_eq(kt_writer_track(w, &none), 0);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
	char out[160], want[640];
	snprintf(out, sizeof(out), "%s.fxt", path);
	struct proc p;
	run_katra(&p, (const char *const[]){ "export", "--fxt", path, out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	snprintf(want, sizeof(want), "katra: %s: track records not shown: 0 of a track with no "
		 "entry, 1 whose time could not be converted to katra's clock\nkatra: %s: track "
		 "zones balanced for the viewer: skipped 1 ends with no begin, closed 1 zones at "
		 "an outer zone's end and 1 still open at the end, skipped 0 begins past 1024 "
		 "open zones\n", path, path);
	cr_assert_str_eq(p.err, want);
	size_t len = 0;
	uint8_t *bytes = t_slurp(out, &len);
	cr_assert_not_null(bytes);
	static struct fxt f;
	read_fxt(&f, bytes, len);
	/* The zone that was never ended closes at the track's latest time. */
	static const struct { unsigned type; const char *name; uint64_t ts; } z[] = {
		{ 2, "post", 3300030 },	    { 2, "shadow", 3600060 }, { 3, "shadow", 4500150 },
		{ 3, "post", 4500150 },	    { 2, "lighting", 4500150 }, { 3, "lighting", 4500150 },
	};
	cr_assert_eq(f.nev, 6);
	for (int i = 0; i < 6; i++) {
		cr_assert_eq(f.ev[i].koid, 0xffffff01, "event %d", i);
		cr_assert_eq(f.ev[i].type, z[i].type, "event %d", i);
		cr_assert_str_eq(f.ev[i].name, z[i].name, "event %d", i);
		cr_assert_eq(f.ev[i].ts, fxt_ns(path, z[i].ts), "event %d: ns of its ticks", i);
	}
	cr_assert_str_eq(koid_name(&f, 0xffffff02), "gpu", "track 2's thread, empty");
	free(bytes);
	unlink(out);
	unlink(path);
}

/* ---- an end finds its begin in O(1) -------------------------------------- */

static int count_zone(void *ctx, const struct track_zone *z)
{
	(void)z;
	(*(uint64_t *)ctx)++;
	return 0;
}

/*
 * A track's most open zones (TRACK_OPEN begins of one name), then 100,000
 * ends of another name: each end is skipped without looking at the open
 * zones (issue 26's D5: each walked all 1024), and each zone is looked at
 * once, when it closes at the end of the pass.
 */
Test(track, an_unmatched_end_looks_at_no_open_zone)
{
	kt_reader *r;
	struct tables t;
	cr_assert_eq(kt_reader_open(TRACK_GOLDEN, NULL, &r), 0);
	cr_assert_eq(tables_load(r, &t), 0);
	struct tracks k;
	uint64_t zones = 0, ticks;
	tracks_init(&k, &t, count_zone, &zones);
	uint8_t p[8];
	kt__put64(p, 1038400); /* on track 1's clock, within its pairs */
	kt_event ev = { .ts = 1, .name_id = 2, .type = KT_EV_TRACK_BEGIN, .flags = 1,
			.payload = p, .payload_len = 8 };
	for (unsigned i = 0; i < TRACK_OPEN; i++)
		cr_assert_eq(tracks_event(&k, &ev, &ticks), 0);
	ev.type = KT_EV_TRACK_END;
	ev.name_id = 3;
	for (unsigned i = 0; i < 100000; i++)
		cr_assert_eq(tracks_event(&k, &ev, &ticks), 0);
	cr_assert_eq(k.n.unbegun, 100000);
	cr_assert_eq(k.steps, 0);
	cr_assert_eq(zones, 0);
	/* One end of the open name closes the innermost of them, alone. */
	ev.name_id = 2;
	cr_assert_eq(tracks_event(&k, &ev, &ticks), 0);
	cr_assert_eq(k.steps, 1);
	cr_assert_eq(zones, 1);
	cr_assert_eq(tracks_finish(&k), 0);
	cr_assert_eq(k.steps, TRACK_OPEN);
	cr_assert_eq(k.n.unended, TRACK_OPEN - 1);
	cr_assert_eq(k.n.inner_closed, 0);
	cr_assert_eq(zones, TRACK_OPEN);
	tracks_free(&k);
	tables_free(&t);
	kt_reader_close(r);
}
