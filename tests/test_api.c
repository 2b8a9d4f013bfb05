/*
 * The profiler API (issue #15): call sites with source locations,
 * categories, zone arguments, message severities and named frames - from
 * the producer through a session's file to the reader and the tools.
 */
#include "helpers.h"
#include "cli.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include <katra/katra.h>
#include <katra/reader.h>
#include <katra/writer.h>

#include "format/format.h"
#include "ring/ring.h"

/* What a session's file holds, gathered by one pass of frames. */
struct seen {
	kt_event ev[64];
	size_t nev;
	kt_srcloc loc[16];
	char file[16][128], func[16][64];
	size_t nloc;
	uint32_t cat_id[16], cat_flags[16];
	size_t ncat;
	uint8_t payload[64][32];
};

static void t_path(char *buf, size_t n, const char *tag)
{
	snprintf(buf, n, "/tmp/katra-api-%s-%d.katra", tag, (int)getpid());
}

static void add_loc(struct seen *s, const kt_srcloc *l)
{
	cr_assert_lt(s->nloc, 16);
	s->loc[s->nloc] = *l;
	snprintf(s->file[s->nloc], 128, "%s", l->file);
	snprintf(s->func[s->nloc], 64, "%s", l->function);
	s->nloc++;
}

static void add_events(struct seen *s, const kt_trace_frame *f)
{
	kt_chunk_iter it;
	kt_event ev;
	kt_chunk_iter_init(&it, f);
	while (kt_chunk_next(&it, &ev) > 0) {
		cr_assert_lt(s->nev, 64);
		if (ev.payload_len)
			memcpy(s->payload[s->nev], ev.payload,
			       ev.payload_len < 32 ? ev.payload_len : 32);
		ev.payload = s->payload[s->nev];
		s->ev[s->nev++] = ev;
	}
}

static void read_back(const char *path, struct seen *s)
{
	kt_reader *r;
	kt_trace_frame f;
	memset(s, 0, sizeof(*s));
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	while (kt_reader_next_frame(r, &f) > 0) {
		if (f.kind == KT_FRAME_CHUNK)
			add_events(s, &f);
		else if (kt_trace_frame_get_srcloc(&f))
			add_loc(s, kt_trace_frame_get_srcloc(&f));
		else if (f.kind == KT_FRAME_CATEGORY && s->ncat < 16) {
			s->cat_id[s->ncat] = f.u.category.id;
			s->cat_flags[s->ncat++] = f.u.category.flags;
		}
	}
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert(st.complete, "%s", kt_reader_get_last_error(r)->message);
	kt_reader_close(r);
}

static const kt_srcloc *loc_of(const struct seen *s, uint32_t id, size_t *idx)
{
	for (size_t i = 0; i < s->nloc; i++)
		if (s->loc[i].id == id) {
			*idx = i;
			return &s->loc[i];
		}
	return NULL;
}

static kt_session *start(const char *path)
{
	kt_session *s;
	unlink(path);
	cr_assert_eq(kt_session_start(path, NULL, &s), 0);
	return s;
}

static void stop(kt_session *s)
{
	cr_assert_eq(kt_session_stop(s, NULL), 0);
}

/* A session around @fn into @path (tagged @tag), and in @out a name for
 * an export of it. */
static void traced(char path[128], char out[160], const char *tag, void (*fn)(void))
{
	t_path(path, 128, tag);
	snprintf(out, 160, "%s.json", path);
	kt_session *s = start(path);
	fn();
	stop(s);
}

/* ---- source locations ------------------------------------------------ */

static int zone_line;

static void draw_fn(void)
{
	zone_line = __LINE__ + 1;
	KT_ZONE("draw");
}

Test(srcloc, zone_records_name_file_line_function_once)
{
	char path[128];
	t_path(path, sizeof(path), "loc");
	kt_session *s = start(path);
	for (int i = 0; i < 3; i++)
		draw_fn();
	stop(s);
	struct seen sn;
	read_back(path, &sn);
	cr_assert_eq(sn.nev, 6);
	uint32_t id = sn.ev[0].name_id;
	cr_assert_eq(sn.ev[0].type, KT_EV_ZONE_BEGIN);
	for (size_t i = 0; i < 6; i++)
		cr_assert_eq(sn.ev[i].name_id, id);
	/* One location entry for the site, however often it ran. */
	cr_assert_eq(sn.nloc, 1);
	size_t k;
	const kt_srcloc *l = loc_of(&sn, id, &k);
	cr_assert_not_null(l);
	cr_assert_str_eq(sn.file[k], __FILE__);
	cr_assert_str_eq(sn.func[k], "draw_fn");
	cr_assert_eq(l->line, (uint32_t)zone_line);
	cr_assert_eq(l->category, 0);
	cr_assert_eq(l->file_len, strlen(__FILE__));
	/* The site's id is not the plain name's: kt_name("draw") names no
	 * location. */
	cr_assert_neq(kt_name("draw"), id);
	unlink(path);
}

Test(srcloc, equal_sites_share_an_id_and_different_ones_do_not)
{
	kt_site a = { "z", "f.c", "fn", NULL, 10, 0, &kt__flag_on };
	kt_site b = a, c = a;
	c.line = 11;
	uint32_t ia = kt_site_id(&a), ib = kt_site_id(&b), ic = kt_site_id(&c);
	cr_assert_neq(ia, 0);
	cr_assert_eq(ia, ib);
	cr_assert_neq(ia, ic);
	cr_assert_eq(a.id, ia);
	kt_site empty = { "", "f.c", "fn", NULL, 1, 0, &kt__flag_on };
	cr_assert_eq(kt_site_id(&empty), 0);
	cr_assert_eq(empty.id, 0);
}

/* A writer over a memfd with the tests' fixed header; *@fd is the memfd. */
static kt_writer *mem_writer(int *fd)
{
	kt_header h;
	kt_writer *w;
	t_header(&h);
	*fd = memfd_create("api", MFD_CLOEXEC);
	cr_assert_eq(kt_writer_open_fd(*fd, &h, &w), 0);
	return w;
}

/* The bytes of @fd (malloc'd), which is closed. */
static uint8_t *slurp_close(int fd, size_t *len)
{
	uint8_t *p = t_slurp_fd(fd, len);
	close(fd);
	cr_assert_not_null(p);
	return p;
}

Test(srcloc, writer_and_reader_round_trip_and_refuse_bad_entries)
{
	int fd;
	kt_writer *w = mem_writer(&fd);
	kt_srcloc l = { .id = 9, .line = 77, .category = 3, .file = "a/b.c", .file_len = 5,
			.function = "main", .function_len = 4 };
	cr_assert_eq(kt_writer_srcloc(w, &l), 0);
	kt_srcloc bad = l;
	bad.id = 0;
	cr_assert_eq(kt_writer_srcloc(w, &bad), -EINVAL);
	bad = l;
	bad.file = "a\0b";
	bad.file_len = 3;
	cr_assert_eq(kt_writer_srcloc(w, &bad), -EINVAL);
	cr_assert_eq(kt_writer_category(w, 3, KT_CATEGORY_ON_STOP), 0);
	cr_assert_eq(kt_writer_category(w, 3, 4), -EINVAL);
	cr_assert_eq(kt_writer_finish(w, NULL), 0);
	cr_assert_eq(kt_writer_close(w), 0);
	size_t len = 0;
	uint8_t *file = slurp_close(fd, &len);
	kt_reader *r;
	kt_trace_frame f;
	cr_assert_eq(kt_reader_open_mem(file, len, NULL, &r), 0);
	cr_assert_eq(kt_reader_next_frame(r, &f), 1);
	cr_assert_eq(f.kind, KT_FRAME_SRCLOC);
	cr_assert_eq(f.u.srcloc.id, 9);
	cr_assert_eq(f.u.srcloc.line, 77);
	cr_assert_eq(f.u.srcloc.category, 3);
	cr_assert_str_eq(f.u.srcloc.file, "a/b.c");
	cr_assert_str_eq(f.u.srcloc.function, "main");
	cr_assert_eq(kt_reader_next_frame(r, &f), 1);
	cr_assert_eq(f.kind, KT_FRAME_CATEGORY);
	cr_assert_null(kt_trace_frame_get_srcloc(&f));
	cr_assert_eq(f.u.category.id, 3);
	cr_assert_eq(f.u.category.flags, KT_CATEGORY_ON_STOP);
	kt_reader_close(r);
	free(file);
}

/* Patch a byte of the first frame's body and fix its checksum: the
 * reader must refuse it with @code. */
static void refuse_patched(uint8_t *file, size_t len, size_t body_at, uint32_t v, int code)
{
	uint32_t hlen = kt__get32(file + 12);
	size_t frame = 24 + kt__align8(hlen);
	uint32_t blen = kt__get32(file + frame);
	uint8_t *copy = malloc(len);
	memcpy(copy, file, len);
	kt__put32(copy + frame + 8 + body_at, v);
	size_t sum = frame + 8 + kt__align8(blen);
	kt__put64(copy + sum, kt__xxh3(copy + frame, sum - frame));
	kt_reader *r;
	kt_trace_frame f;
	cr_assert_eq(kt_reader_open_mem(copy, len, NULL, &r), 0);
	cr_assert_eq(kt_reader_next_frame(r, &f), code, "body byte %zu = %u", body_at, v);
	kt_reader_close(r);
	free(copy);
}

Test(srcloc, reader_refuses_bad_lengths_ids_and_reserved_bytes)
{
	int fd;
	kt_writer *w = mem_writer(&fd);
	kt_srcloc l = { .id = 9, .line = 1, .file = "x.c", .file_len = 3, .function = "f",
			.function_len = 1 };
	cr_assert_eq(kt_writer_srcloc(w, &l), 0);
	cr_assert_eq(kt_writer_close(w), 0);
	size_t len = 0;
	uint8_t *file = slurp_close(fd, &len);
	refuse_patched(file, len, KT__LOC_ID, 0, KT_EFRAME);
	refuse_patched(file, len, KT__LOC_FILE_LEN, 4, KT_EFRAME);
	refuse_patched(file, len, KT__LOC_FUNC_LEN, 0xffffffffu, KT_EFRAME);
	refuse_patched(file, len, KT__LOC_PAD, 1, KT_ERESERVED);
	refuse_patched(file, len, KT__LOC_FIXED, 0x0000632e, KT_EFRAME); /* a zero byte */
	free(file);
}

Test(srcloc, dump_stats_and_chrome_show_the_location)
{
	char path[128], out[160];
	traced(path, out, "tools", draw_fn);
	char want[256];
	struct proc p;
	run_katra(&p, (const char *const[]){ "dump", path, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	snprintf(want, sizeof(want), "zone_begin draw @%s:%d\n", __FILE__, zone_line);
	cr_assert_not_null(memmem(p.out, p.out_len, want, strlen(want)), "%.*s", (int)p.out_len,
			   p.out);
	run_katra(&p, (const char *const[]){ "stats", path, NULL });
	snprintf(want, sizeof(want), "  %s:%d draw_fn\n", __FILE__, zone_line);
	cr_assert_not_null(memmem(p.out, p.out_len, want, strlen(want)), "%.*s", (int)p.out_len,
			   p.out);
	cr_assert_not_null(memmem(p.out, p.out_len, "  location\n", 11));
	run_katra(&p, (const char *const[]){ "stats", "--json", path, NULL });
	snprintf(want, sizeof(want), "\"line\": %d", zone_line);
	cr_assert_not_null(memmem(p.out, p.out_len, want, strlen(want)), "%.*s", (int)p.out_len,
			   p.out);
	cr_assert_not_null(memmem(p.out, p.out_len, "\"function\": \"draw_fn\"", 21));
	unlink(out);
	run_katra(&p, (const char *const[]){ "export", "--chrome", path, out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	size_t n = 0;
	char *json = (char *)t_slurp(out, &n);
	/* "loc" where Tracy's import-chrome reads it, args.loc for the others */
	snprintf(want, sizeof(want), "\"ph\":\"B\",\"name\":\"draw\",\"loc\":\"%s:%d\","
		 "\"args\":{\"loc\":\"%s:%d\"}}", __FILE__, zone_line, __FILE__, zone_line);
	cr_assert_not_null(memmem(json, n, want, strlen(want)), "%.*s", (int)n, json);
	free(json);
	unlink(out);
	unlink(path);
}

/* ---- categories ------------------------------------------------------ */

static void render_fn(void)
{
	KT_ZONE_C("render", "draw_c");
}

Test(category, a_disabled_category_emits_nothing_and_the_trace_says_so)
{
	char path[128];
	t_path(path, sizeof(path), "cat");
	kt_session *s = start(path);
	render_fn();                                  /* on: a zone */
	cr_assert_eq(kt_category_enable("render", 0), 0);
	cr_assert_eq(kt_category_get_enabled("render"), 0);
	render_fn();                                  /* off: nothing */
	render_fn();
	stop(s);
	struct seen sn;
	read_back(path, &sn);
	cr_assert_eq(sn.nev, 2);
	size_t k;
	const kt_srcloc *l = loc_of(&sn, sn.ev[0].name_id, &k);
	cr_assert_not_null(l);
	cr_assert_eq(l->category, kt_name("render"));
	cr_assert_eq(sn.ncat, 1);
	cr_assert_eq(sn.cat_id[0], kt_name("render"));
	cr_assert_eq(sn.cat_flags[0], KT_CATEGORY_ON_START);
	unlink(path);
}

/* A zone begun while its category was on ends even when the category goes
 * off inside it; one begun while off never ends. */
static void toggle_inside(int on_at_begin)
{
	kt_category_enable("physics", on_at_begin);
	KT_ZONE_C("physics", "step");
	kt_category_enable("physics", !on_at_begin);
}

Test(category, switching_inside_a_zone_keeps_begins_and_ends_paired)
{
	char path[128];
	t_path(path, sizeof(path), "pair");
	kt_session *s = start(path);
	toggle_inside(1);
	toggle_inside(0);
	stop(s);
	struct seen sn;
	read_back(path, &sn);
	cr_assert_eq(sn.nev, 2);
	cr_assert_eq(sn.ev[0].type, KT_EV_ZONE_BEGIN);
	cr_assert_eq(sn.ev[1].type, KT_EV_ZONE_END);
	/* Named during the session: "at start" is its state when named. */
	cr_assert_eq(sn.cat_flags[0], KT_CATEGORY_ON_START | KT_CATEGORY_ON_STOP);
	unlink(path);
}

Test(category, environment_list_enables_only_named_ones)
{
	setenv("KT_CATEGORIES", "alpha,-beta", 1);
	cr_assert_eq(kt_category_get_enabled("alpha"), 1);
	cr_assert_eq(kt_category_get_enabled("beta"), 0);
	cr_assert_eq(kt_category_get_enabled("gamma"), 0);
	/* Code overrides the environment. */
	cr_assert_eq(kt_category_enable("gamma", 1), 0);
	cr_assert_eq(kt_category_get_enabled("gamma"), 1);
	cr_assert_eq(*kt_category("gamma"), 1);
}

Test(category, environment_with_only_exclusions_keeps_the_rest_on)
{
	setenv("KT_CATEGORIES", "-physics", 1);
	cr_assert_eq(kt_category_get_enabled("physics"), 0);
	cr_assert_eq(kt_category_get_enabled("render"), 1);
	cr_assert_eq(kt_category_get_enabled(""), -EINVAL);
	cr_assert_eq(kt_category(NULL), &kt__flag_on);
}

static atomic_int cat_fork_begun, in_each, cat_forked;

/* Runs under the categories' lock: hold it until the main thread forks. */
static void slow_each(void *ctx, uint32_t id, uint32_t flags)
{
	(void)ctx, (void)id, (void)flags;
	atomic_store(&in_each, 1);
	while (!atomic_load(&cat_fork_begun))
		usleep(1000);
	usleep(50000); /* let fork() start */
}

static void *each_once(void *arg)
{
	(void)arg;
	kt__categories_each(slow_each, NULL);
	/* Alive until the fork is done: ThreadSanitizer reports a thread
	 * that ended unjoined before a fork as leaked, in the child. */
	while (!atomic_load(&cat_forked))
		usleep(1000);
	return NULL;
}

/* A fork() while another thread holds the categories' lock: the child
 * does not inherit it held, and can switch a category. */
Test(category, fork_while_another_thread_reads_the_categories)
{
	cr_assert_eq(kt_category_enable("held", 1), 0);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, each_once, NULL), 0);
	while (!atomic_load(&in_each))
		usleep(1000);
	atomic_store(&cat_fork_begun, 1);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		alarm(10); /* a child that hangs fails instead of hanging the test */
		_exit(kt_category_enable("child", 0) == 0 ? 0 : 1);
	}
	atomic_store(&cat_forked, 1);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: status %#x", st);
	pthread_join(th, NULL);
}

Test(category, the_table_is_bounded)
{
	char name[32];
	for (unsigned i = 0; i < KT_MAX_CATEGORIES; i++) {
		snprintf(name, sizeof(name), "c%u", i);
		cr_assert_eq(kt_category_enable(name, 0), 0);
	}
	cr_assert_eq(kt_category_enable("one-too-many", 0), -ENOSPC);
	cr_assert_eq(kt_category("one-too-many"), &kt__flag_on);
}

/* ---- zone arguments, severities, named frames ------------------------ */

static void args_fn(void)
{
	KT_ZONE("work");
	kt_zone_value_i64(-5);
	kt_zone_value_u64(UINT64_MAX);
	kt_zone_value_f64(0.5);
	kt_zone_text("hi", 2);
	KT_ARG_I64("items", 42);
	KT_ARG_F64("ratio", 1.25);
	KT_ARG_STR("mode", "fast", 4);
	kt_message_sev(kt_name("log"), KT_SEV_WARN, "careful", 7);
	kt_message_sev(kt_name("log"), (kt_severity)7, "refused", 7);
	kt_frame_begin(kt_name("load"), 3);
	kt_frame_end(kt_name("load"), 3);
}

Test(args, arguments_follow_their_zone_begin_with_their_values)
{
	char path[128];
	t_path(path, sizeof(path), "args");
	kt_session *s = start(path);
	args_fn();
	kt_summary sum;
	cr_assert_eq(kt_session_stop(s, &sum), 0);
	cr_assert_eq(sum.events_refused, 1);
	kt_summary_release(&sum);
	struct seen sn;
	read_back(path, &sn);
	static const uint8_t types[] = { KT_EV_ZONE_BEGIN, KT_EV_ARG_I64, KT_EV_ARG_U64,
					 KT_EV_ARG_F64, KT_EV_ARG_STR, KT_EV_ARG_I64,
					 KT_EV_ARG_F64, KT_EV_ARG_STR, KT_EV_MESSAGE,
					 KT_EV_FRAME, KT_EV_FRAME, KT_EV_ZONE_END };
	cr_assert_eq(sn.nev, sizeof(types));
	for (size_t i = 0; i < sizeof(types); i++)
		cr_assert_eq(sn.ev[i].type, types[i], "event %zu", i);
	int64_t i64;
	uint64_t u64;
	double f64;
	memcpy(&i64, sn.ev[1].payload, 8);
	cr_assert_eq(i64, -5);
	memcpy(&u64, sn.ev[2].payload, 8);
	cr_assert_eq(u64, UINT64_MAX);
	memcpy(&f64, sn.ev[3].payload, 8);
	cr_assert_eq(f64, 0.5);
	cr_assert_eq(sn.ev[4].payload_len, 2);
	cr_assert_eq(memcmp(sn.ev[4].payload, "hi", 2), 0);
	for (size_t i = 1; i <= 4; i++)
		cr_assert_eq(sn.ev[i].name_id, 0, "the zone's own value has no name");
	cr_assert_eq(sn.ev[5].name_id, kt_name("items"));
	memcpy(&i64, sn.ev[5].payload, 8);
	cr_assert_eq(i64, 42);
	cr_assert_eq(sn.ev[7].name_id, kt_name("mode"));
	cr_assert_eq(sn.ev[8].flags, KT_SEV_WARN);
	cr_assert_eq(sn.ev[9].flags, KT_FRAME_PHASE_BEGIN);
	cr_assert_eq(sn.ev[10].flags, KT_FRAME_PHASE_END);
	memcpy(&u64, sn.ev[10].payload, 8);
	cr_assert_eq(u64, 3);
	unlink(path);
}

/* A named zone of a category, with an argument of its own, one of the
 * enclosing zone's, and the zone's value under KT_ZONE_ON(). */
static void named_fn(void)
{
	KT_ZONE_AS(outer, "outer");
	KT_ZONE_C_AS(z, "named", "inner");
	KT_ZONE_ARG_I64(z, "mine", 7);
	KT_ZONE_ARG_U64(z, "mine_u", 8);
	KT_ZONE_ARG_F64(z, "mine_f", 0.75);
	KT_ZONE_ARG_STR(z, "mine_s", "ab", 2);
	if (KT_ZONE_ON(z))
		kt_zone_value_i64(9);
	KT_ZONE_ARG_I64(outer, "outers", 1);
}

/* With the category on, every argument follows the zones' begins; with it
 * off, the zone's own arguments go with it and the outer zone's stays
 * (the inner zone is not open, so it follows the outer's begin). */
Test(args, a_named_zone_keeps_its_arguments_to_itself)
{
	char path[128];
	t_path(path, sizeof(path), "named");
	kt_session *s = start(path);
	named_fn();
	cr_assert_eq(kt_category_enable("named", 0), 0);
	named_fn();
	stop(s);
	struct seen sn;
	read_back(path, &sn);
	static const uint8_t types[] = { KT_EV_ZONE_BEGIN, KT_EV_ZONE_BEGIN, KT_EV_ARG_I64,
					 KT_EV_ARG_U64,    KT_EV_ARG_F64,    KT_EV_ARG_STR,
					 KT_EV_ARG_I64,    KT_EV_ARG_I64,    KT_EV_ZONE_END,
					 KT_EV_ZONE_END,   KT_EV_ZONE_BEGIN, KT_EV_ARG_I64,
					 KT_EV_ZONE_END };
	cr_assert_eq(sn.nev, sizeof(types));
	for (size_t i = 0; i < sizeof(types); i++)
		cr_assert_eq(sn.ev[i].type, types[i], "event %zu", i);
	cr_assert_eq(sn.ev[2].name_id, kt_name("mine"));
	cr_assert_eq(sn.ev[6].name_id, 0, "the zone's own value");
	int64_t v;
	memcpy(&v, sn.ev[6].payload, 8);
	cr_assert_eq(v, 9);
	cr_assert_eq(sn.ev[7].name_id, kt_name("outers"));
	cr_assert_eq(sn.ev[11].name_id, kt_name("outers"));
	unlink(path);
}

/* Each of @n strings must be in @buf. */
static void has_all(const char *buf, size_t len, const char *const *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cr_assert_not_null(memmem(buf, len, want[i], strlen(want[i])), "no %s in\n%.*s",
				   want[i], (int)len, buf);
}

Test(args, dump_and_chrome_show_arguments_severities_and_frames)
{
	char path[128], out[160];
	traced(path, out, "argtools", args_fn);
	struct proc p;
	run_katra(&p, (const char *const[]){ "dump", path, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	static const char *const text[] = {
		" arg_i64 - -5\n", " arg_u64 - 18446744073709551615\n", " arg_f64 - 0.5\n",
		" arg_str - \"hi\"\n", " arg_i64 items 42\n", " arg_f64 ratio 1.25\n",
		" arg_str mode \"fast\"\n", " message log [warn] \"careful\"\n",
		" frame load begin 3\n", " frame load end 3\n",
	};
	has_all(p.out, p.out_len, text, sizeof(text) / sizeof(*text));
	run_katra(&p, (const char *const[]){ "dump", "--format", "jsonl", path, NULL });
	static const char *const jsonl[] = {
		"\"type\":\"arg_i64\",\"name\":null,\"value\":-5}",
		"\"type\":\"arg_str\",\"name\":\"mode\",\"text\":\"fast\"}",
		"\"name\":\"log\",\"severity\":\"warn\",\"text\":\"careful\"}",
		"\"name\":\"load\",\"phase\":\"begin\",\"frame\":3}",
	};
	has_all(p.out, p.out_len, jsonl, sizeof(jsonl) / sizeof(*jsonl));
	unlink(out);
	run_katra(&p, (const char *const[]){ "export", "--chrome", path, out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	size_t n = 0;
	char *json = (char *)t_slurp(out, &n);
	static const char *const chrome[] = {
		/* the arguments in their zone's args; a name's second and third
		 * with "#2", "#3" (a JSON reader keeps one value of a key) */
		"\"ph\":\"B\",\"name\":\"work\",\"loc\":",
		("\",\"value\":-5,\"value#2\":\"18446744073709551615\",\"value#3\":0.5,"
		 "\"text\":\"hi\",\"items\":42,\"ratio\":1.25,\"mode\":\"fast\"}}"),
		"\"args\":{\"event\":\"log\",\"severity\":\"warn\"},\"name\":\"careful\"}",
		"\"ph\":\"b\",\"name\":\"load\",\"cat\":\"frame\",\"id\":3}",
		"\"ph\":\"e\",\"name\":\"load\",\"cat\":\"frame\",\"id\":3}",
	};
	has_all(json, n, chrome, sizeof(chrome) / sizeof(*chrome));
	free(json);
	unlink(out);
	unlink(path);
}

/* ---- the golden file ------------------------------------------------- */

#define API_GOLDEN KT_TEST_DATA "/api_v5.katra"
#define API_DUMP KT_TEST_DATA "/api_v5.dump.txt"

/* One of each new record and flag in a frame loop's zone: a zone value
 * and text, named arguments of every type, a named frame begin and end, a
 * frame mark and a message of each severity. */
static size_t api_events(uint8_t *buf, size_t cap, uint64_t ts)
{
	static const char text[] = "level 3", mode[] = "fast";
	int64_t vi = -7, items = 42;
	uint64_t vu = UINT64_MAX, frame = 12;
	double vf = 0.25, ratio = 1.5;
	const kt_event evs[] = {
		{ .name_id = 1, .type = KT_EV_ZONE_BEGIN },
		{ .type = KT_EV_ARG_I64, .payload_len = 8, .payload = (const uint8_t *)&vi },
		{ .type = KT_EV_ARG_U64, .payload_len = 8, .payload = (const uint8_t *)&vu },
		{ .type = KT_EV_ARG_F64, .payload_len = 8, .payload = (const uint8_t *)&vf },
		{ .type = KT_EV_ARG_STR, .payload_len = 7, .payload = (const uint8_t *)text },
		{ .name_id = 3, .type = KT_EV_ARG_I64, .payload_len = 8, .payload = (const uint8_t *)&items },
		{ .name_id = 6, .type = KT_EV_ARG_F64, .payload_len = 8, .payload = (const uint8_t *)&ratio },
		{ .name_id = 7, .type = KT_EV_ARG_STR, .payload_len = 4, .payload = (const uint8_t *)mode },
		{ .name_id = 5, .type = KT_EV_FRAME, .flags = KT_FRAME_PHASE_BEGIN, .payload_len = 8, .payload = (const uint8_t *)&frame },
		{ .name_id = 5, .type = KT_EV_FRAME, .flags = KT_FRAME_PHASE_END, .payload_len = 8, .payload = (const uint8_t *)&frame },
		{ .name_id = 8, .type = KT_EV_FRAME, .payload_len = 8, .payload = (const uint8_t *)&frame },
	};
	size_t n = 0;
	for (size_t i = 0; i < sizeof(evs) / sizeof(*evs); i++) {
		kt_event ev = evs[i];
		ev.ts = ts++;
		n += kt_event_encode(buf + n, cap - n, &ev);
	}
	for (uint8_t sev = KT_SEV_NONE; sev <= KT_SEV_FATAL; sev++) {
		kt_event ev = { .ts = ts++, .name_id = 4, .type = KT_EV_MESSAGE, .flags = sev,
				.payload_len = 3, .payload = (const uint8_t *)"msg" };
		n += kt_event_encode(buf + n, cap - n, &ev);
	}
	kt_event end = { .ts = ts, .name_id = 1, .type = KT_EV_ZONE_END };
	return n + kt_event_encode(buf + n, cap - n, &end);
}

/* The golden file: names, a zone's source location in category 2, the
 * category, a thread, the events raw and compact, and the summary. */
static uint8_t *api_file(size_t *len)
{
	static const char *const names[] = { NULL, "draw", "render", "items", "log",
					     "load", "ratio", "mode", "frame" };
	int fd;
	kt_writer *w = mem_writer(&fd);
	for (uint32_t i = 1; i < sizeof(names) / sizeof(*names); i++)
		cr_assert_eq(kt_writer_name(w, i, names[i], strlen(names[i])), 0);
	kt_srcloc l = { .id = 1, .line = 42, .category = 2, .file = "game/render.cpp",
			.file_len = 15, .function = "draw_frame", .function_len = 10 };
	cr_assert_eq(kt_writer_srcloc(w, &l), 0);
	cr_assert_eq(kt_writer_category(w, 2, KT_CATEGORY_ON_START), 0);
	cr_assert_eq(kt_writer_thread(w, 1, 1001, "main"), 0);
	uint8_t ev[2048];
	size_t n = api_events(ev, sizeof(ev), 2000000);
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_NONE, 1, ev, n), 0);
	n = api_events(ev, sizeof(ev), 3000000);
	cr_assert_eq(kt_writer_chunk(w, 1, KT_CODEC_COMPACT, 1, ev, n), 0);
	kt_file_summary extra = { .end_wall_ns = UINT64_C(1764460801000000000),
				  .end_mono_ns = 1123456789, .clock_ticks1 = UINT64_C(3001000000),
				  .clock_ns1 = 1123456000, .io_backend = KT_IO_URING };
	cr_assert_eq(kt_writer_finish(w, &extra), 0);
	cr_assert_eq(kt_writer_close(w), 0);
	return slurp_close(fd, len);
}

/* The bytes are pinned (KT_REGEN_GOLDEN=1 rewrites them), and the file
 * reads back with both chunks decoding to the same records. */
Test(golden, api_file_matches_committed_bytes_and_round_trips)
{
	size_t len = 0, glen = 0;
	uint8_t *file = api_file(&len);
	uint8_t *golden = t_golden_same(API_GOLDEN, file, len, &glen);
	kt_reader *r;
	kt_trace_frame f;
	cr_assert_eq(kt_reader_open_mem(golden, glen, NULL, &r), 0);
	uint8_t first[2048];
	uint32_t first_len = 0, chunks = 0, locs = 0, cats = 0;
	while (kt_reader_next_frame(r, &f) > 0) {
		locs += f.kind == KT_FRAME_SRCLOC;
		cats += f.kind == KT_FRAME_CATEGORY;
		if (f.kind != KT_FRAME_CHUNK)
			continue;
		if (chunks++ == 0) {
			first_len = f.u.chunk.raw_len;
			memcpy(first, f.u.chunk.events, first_len);
			continue;
		}
		cr_assert_eq(f.u.chunk.codec, KT_CODEC_COMPACT);
		cr_assert_eq(f.u.chunk.raw_len, first_len);
		/* The same records a million ticks later. */
		const uint8_t *b = f.u.chunk.events;
		for (uint32_t off = 0; off < first_len;) {
			size_t size = kt_event_size(kt__get16(first + off + KT_REC_LEN));
			cr_assert_eq(kt__get64(first + off) + 1000000, kt__get64(b + off));
			cr_assert_eq(memcmp(first + off + 8, b + off + 8, size - 8), 0, "at %u", off);
			off += (uint32_t)size;
		}
	}
	cr_assert_eq(chunks, 2);
	cr_assert_eq(locs, 1);
	cr_assert_eq(cats, 1);
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert(st.complete);
	kt_reader_close(r);
	free(file);
	free(golden);
}

Test(golden, api_dump_and_stats_match_committed_text)
{
	t_cli_golden("dump", "api_v5.katra", API_DUMP);
	t_cli_golden("stats", "api_v5.katra", KT_TEST_DATA "/api_v5.stats.txt");
}

/* The category of a zone's site is its Chrome "cat", beside its location. */
Test(golden, chrome_zone_has_its_category_and_location)
{
	char out[128];
	snprintf(out, sizeof(out), "/tmp/katra-api-chrome-%d.json", (int)getpid());
	unlink(out);
	struct proc p;
	run_katra(&p, (const char *const[]){ "export", "--chrome", "api_v5.katra", out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	size_t n = 0;
	char *json = (char *)t_slurp(out, &n);
	static const char *const want[] = {
		"\"ph\":\"B\",\"name\":\"draw\",\"cat\":\"render\",\"loc\":\"game/render.cpp:42\","
		"\"args\":{\"loc\":\"game/render.cpp:42\",",
	};
	has_all(json, n, want, 1);
	free(json);
	unlink(out);
}
