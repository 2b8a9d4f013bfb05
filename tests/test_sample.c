/*
 * Sampled call chains (issue #31, must-show 2): a zone that spends 9/10 of
 * its CPU in kt_sample_heavy() and 1/10 in kt_sample_light(), both in a
 * shared library of the test's (tests/sample_lib.c), sampled by the
 * session (kt_session_options.sample_hz) and named by `katra export
 * --collapsed --samples` through the trace's map entries: at least 85% of
 * the zone's samples name the first and at most 15% the second.  Without
 * names (no symbolizer, no map entries) no line names either and the test
 * fails.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <katra/katra.h>
#include <katra/reader.h>

#include "cli.h"
#include "deny_perf.h"
#include "sample_spin.h"
#include "tmp_path.h"

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };
	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

struct shares {
	unsigned long zone, heavy, light;
};

/* The lines of @folded: samples in zone "sampled", and of them those whose
 * innermost function is each of the two. */
static struct shares count(const char *folded)
{
	struct shares s = { 0 };
	FILE *f = fopen(folded, "re");
	cr_assert_not_null(f);
	char line[8192];
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' ');
		cr_assert_not_null(sp, "%s", line);
		*sp = 0;
		unsigned long n = strtoul(sp + 1, NULL, 10);
		if (!strstr(line, ";sampled"))
			continue;
		s.zone += n;
		const char *leaf = strrchr(line, ';') + 1;
		if (!strcmp(leaf, "kt_sample_heavy"))
			s.heavy += n;
		else if (!strcmp(leaf, "kt_sample_light"))
			s.light += n;
	}
	fclose(f);
	return s;
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* `katra export --perfetto`, decoded by protoc with the project's subset
 * of Perfetto's schema: a perf_sample per sample (at least the zone's
 * @zone), each naming a callstack, and the two functions among the
 * interned function names, each once. */
static void perfetto_samples(const char *path, unsigned long zone)
{
	char out[64], txt[64], cmd[512];
	tmp_path(out, sizeof(out), "sample.pftrace");
	tmp_path(txt, sizeof(txt), "sample.txt");
	unlink(out);
	struct proc p;
	run_katra(&p, (const char *const[]){ "export", "--perfetto", path, out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	snprintf(cmd, sizeof(cmd),
	         "protoc --decode=perfetto.protos.Trace --proto_path=%s/tools/export "
	         "perfetto_trace.proto < %s > %s",
	         KT_SRC_DIR, out, txt);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	size_t n = 0;
	uint8_t *b = t_slurp(txt, &n);
	cr_assert_not_null(b);
	char *text = realloc(b, n + 1);
	text[n] = 0;
	cr_assert_geq(count_of(text, "perf_sample {"), zone);
	cr_assert_eq(count_of(text, "perf_sample {"), count_of(text, "callstack_iid: "));
	cr_assert_eq(count_of(text, "str: \"kt_sample_heavy\""), 1);
	cr_assert_eq(count_of(text, "str: \"kt_sample_light\""), 1);
	cr_assert_geq(count_of(text, "callstacks {"), 2);
	free(text);
	unlink(out);
	unlink(txt);
}

/* A session sampling at 2000 Hz around @work, its file at @path, folded
 * by `katra export --collapsed --samples` into @folded (64 bytes each). */
static void sampled(const char *tag, void (*work)(void), char *path, char *folded)
{
	snprintf(path, 64, "/tmp/katra-sample-%s-%d.katra", tag, (int)getpid());
	snprintf(folded, 64, "/tmp/katra-sample-%s-%d.folded", tag, (int)getpid());
	unlink(folded);
	kt_session_options o = { .sample_hz = 2000, .flush_period_ns = 1000000 };
	kt_session *s;
	cr_assert_eq(kt_session_start(path, &o, &s), 0, "%s", kt_session_get_start_error());
	kt_message(kt_name("log"), "start", 5);
	sleep_ms(40); /* the flusher's next read of the buffers samples it */
	work();
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	struct proc p;
	run_katra(
		&p,
		(const char *const[]){ "export", "--collapsed", "--samples", path, folded, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
}

static void spin_zone_work(void)
{
	sample_spin_zone(600000000u); /* 600 ms of this thread's CPU */
}

Test(sample, a_zone_s_samples_name_its_library_s_functions, .timeout = 120)
{
	char path[64], folded[64];
	sampled("lib", spin_zone_work, path, folded);
	struct proc p;
	struct shares sh = count(folded);
	/* 600 ms at 2000 Hz: about 1200 samples (fewer if the kernel lowers
	 * the rate, perf_event_max_sample_rate). */
	cr_assert_geq(sh.zone, 200, "%lu samples in the zone", sh.zone);
	cr_assert_geq(sh.heavy * 100, sh.zone * 85, "heavy %lu of %lu", sh.heavy, sh.zone);
	cr_assert_leq(sh.light * 100, sh.zone * 15, "light %lu of %lu", sh.light, sh.zone);
	cr_assert_geq(sh.light * 100, sh.zone * 5, "light %lu of %lu", sh.light, sh.zone);
	/* katra stats' section: the zone, its top function first, by name. */
	run_katra(&p, (const char *const[]){ "stats", path, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	p.out[p.out_len < sizeof(p.out) ? p.out_len : sizeof(p.out) - 1] = 0;
	const char *sec = strstr(p.out, "\nsamples: ");
	cr_assert_not_null(sec, "%s", p.out);
	const char *zone = strstr(sec, "\n  sampled: ");
	cr_assert_not_null(zone, "%s", sec);
	const char *first = strchr(zone + 1, '\n');
	cr_assert(first && !strncmp(strchr(first, '%'), "% ", 2), "%s", sec);
	cr_assert_not_null(strstr(first, "  kt_sample_heavy\n    "), "%s", sec);
	cr_assert_lt(strstr(first, "kt_sample_heavy"), strstr(first, "kt_sample_light"), "%s", sec);
	perfetto_samples(path, sh.zone);
	if (getenv("KT_SAMPLE_SAY"))
		fprintf(stderr, "zone %lu heavy %lu light %lu\n%s", sh.zone, sh.heavy, sh.light,
		        sec);
	unlink(path);
	unlink(folded);
}

/* dlopen() the second library while the session samples, then spin 200 ms
 * of CPU in its function inside zone "dl". */
static void dl_work(void)
{
	void *h = dlopen(KT_SAMPLE_DL, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "%s", dlerror());
	unsigned (*fn)(unsigned) = (unsigned (*)(unsigned))dlsym(h, "kt_sample_dlopened");
	cr_assert_not_null(fn);
	uint32_t z = kt_name("dl");
	kt_zone_begin(z);
	for (uint64_t end = thread_cpu_ns() + 200000000u; thread_cpu_ns() < end;)
		fn(20000);
	kt_zone_end(z);
}

/* A library dlopen()ed while the session samples: the kernel's mmap record
 * of it becomes a map entry, and its function is named. */
Test(sample, a_dlopened_library_is_named, .timeout = 120)
{
	char path[64], folded[64];
	void *h = dlopen(KT_SAMPLE_DL, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	cr_assert_null(h, "loaded before the session");
	sampled("dl", dl_work, path, folded);
	FILE *f = fopen(folded, "re");
	cr_assert_not_null(f);
	char line[8192];
	unsigned long named = 0, all = 0;
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' ');
		*sp = 0;
		if (!strstr(line, ";dl;"))
			continue;
		all += strtoul(sp + 1, NULL, 10);
		if (!strcmp(strrchr(line, ';') + 1, "kt_sample_dlopened"))
			named += strtoul(sp + 1, NULL, 10);
	}
	fclose(f);
	cr_assert_geq(named * 100, all * 80, "%lu of %lu named", named, all);
	cr_assert_geq(all, 50);
	unlink(path);
	unlink(folded);
}

/* What a file holds of a refused session: its notes that say samples are
 * absent, its zone records and its sample records. */
struct refused_seen {
	int notes;
	char note[200];
	unsigned zones, samples;
};

static void read_refused(const char *path, struct refused_seen *k)
{
	kt_reader *r;
	memset(k, 0, sizeof(*k));
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	const kt_header *h = kt_reader_get_header(r);
	for (uint32_t i = 0; i < h->note_count; i++)
		if (!strncmp(h->notes[i], "samples: ", 9) && k->notes++ == 0)
			snprintf(k->note, sizeof(k->note), "%s", h->notes[i]);
	kt_event ev;
	int rc;
	while ((rc = kt_reader_next(r, &ev)) > 0) {
		k->zones += ev.type == KT_EV_ZONE_BEGIN || ev.type == KT_EV_ZONE_END;
		k->samples += ev.type == KT_EV_SAMPLE;
	}
	cr_assert_eq(rc, 0);
	kt_reader_close(r);
}

/* @path's header has one note on samples, @note, and its 3 zones but no
 * sample record. */
static void says_absent(const char *path, const char *note)
{
	struct refused_seen k;
	read_refused(path, &k);
	cr_assert_eq(k.notes, 1);
	cr_assert_str_eq(k.note, note);
	cr_assert_eq(k.zones, 6);
	cr_assert_eq(k.samples, 0);
}

static void spin_20ms(void)
{
	for (uint64_t end = thread_cpu_ns() + 20000000u; thread_cpu_ns() < end;)
		kt_sample_heavy(4000);
}

/*
 * perf_event_open refused by a seccomp filter, KT_SAMPLE_HZ set (issue
 * #31, must-show 5 for samples): the session starts and stops well with
 * its 3 zones written, the header's one note and stderr's one line say
 * samples are absent and why, and the file holds no sample record.
 */
Test(sample, refused_perf_event_open_leaves_a_working_session_saying_absent, .timeout = 60)
{
	char path[64], errpath[64];
	tmp_path(path, sizeof(path), "sample-refused.katra");
	tmp_path(errpath, sizeof(errpath), "sample-refused.err");
	/* The rate from the environment, as katra record's programs have it. */
	setenv("KT_SAMPLE_HZ", "1000", 1);
	t_refused_session(path, errpath, &(kt_session_options){ .flush_period_ns = 1000000 },
			  "spun", spin_20ms);
	unsetenv("KT_SAMPLE_HZ");
	says_absent(path, "samples: absent: perf_event_open refused: Operation not permitted");
	size_t n = 0;
	uint8_t *err = t_slurp(errpath, &n);
	cr_assert_not_null(err);
	char *text = realloc(err, n + 1);
	text[n] = 0;
	cr_assert_eq(count_of(text, "katra: samples absent from this trace: perf_event_open "
				    "refused: Operation not permitted\n"),
		     1, "%s", text);
	cr_assert_eq(count_of(text, "samples"), 1, "said once: %s", text);
	free(text);
	unlink(path);
	unlink(errpath);
}

/* A flight session asked to sample (KT_SAMPLE_HZ): it does not, and its
 * snapshot's header says so and why, beside the window's zone. */
Test(sample, a_flight_snapshot_says_samples_absent, .timeout = 60)
{
	char path[64];
	tmp_path(path, sizeof(path), "sample-flight.katra");
	unlink(path);
	setenv("KT_SAMPLE_HZ", "1000", 1);
	kt_session_options o = { .mode = KT_SESSION_FLIGHT };
	kt_session *s;
	cr_assert_eq(kt_session_start(NULL, &o, &s), 0, "%s", kt_session_get_start_error());
	unsetenv("KT_SAMPLE_HZ");
	uint32_t z = kt_name("spun");
	for (int i = 0; i < 3; i++) {
		kt_zone_begin(z);
		spin_20ms();
		kt_zone_end(z);
	}
	cr_assert_eq(kt_session_snapshot(s, path, -1, 0, 0, NULL), 0);
	cr_assert_eq(kt_session_stop(s, NULL), 0);
	says_absent(path, "samples: absent: a flight session does not sample");
	unlink(path);
}
