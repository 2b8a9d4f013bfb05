/* Strings from hostile files made safe: UTF-8 checks, terminal escapes,
 * JSON repair, and outputs that never replace what they should not; the
 * formatters' digits as printf writes them. */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <criterion/criterion.h>

#include "format/utf8.h"
#include "tools/pipeline/digits.h"
#include "tools/pipeline/outfile.h"
#include "tools/pipeline/text.h"

static size_t char_len(const char *s)
{
	return kt__utf8_char((const unsigned char *)s, strlen(s), NULL);
}

Test(utf8, well_formed_and_refused_forms)
{
	uint32_t cp = 0;
	cr_assert_eq(kt__utf8_char((const unsigned char *)"\xE2\x82\xAC", 3, &cp), 3);
	cr_assert_eq(cp, 0x20AC);
	cr_assert_eq(char_len("\xF0\x9F\x98\x80"), 4);
	cr_assert_eq(char_len("A"), 1);
	cr_assert_eq(char_len("\xC0\xAF"), 0, "overlong '/'");
	cr_assert_eq(char_len("\xE0\x80\xAF"), 0, "overlong three-byte form");
	cr_assert_eq(char_len("\xED\xA0\x80"), 0, "surrogate U+D800");
	cr_assert_eq(char_len("\xF4\x90\x80\x80"), 0, "past U+10FFFF");
	cr_assert_eq(char_len("\x80"), 0, "stray continuation byte");
	cr_assert_eq(kt__utf8_char((const unsigned char *)"\xE2\x82", 2, NULL), 0, "cut");
}

Test(utf8, cut_never_splits_a_character)
{
	const char *s = "ab\xE2\x82\xAC" "c";  /* a b EURO c: 6 bytes */
	cr_assert_eq(kt__utf8_cut(s, 6, 10), 6);
	cr_assert_eq(kt__utf8_cut(s, 6, 5), 5);
	cr_assert_eq(kt__utf8_cut(s, 6, 4), 2);
	cr_assert_eq(kt__utf8_cut(s, 6, 3), 2);
	cr_assert_eq(kt__utf8_cut(s, 6, 2), 2);
}

static char *put(const char *s, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cr_assert_eq(text_put(f, s, n), 0);
	fclose(f);
	return buf;
}

Test(text, terminal_escapes_controls_and_stray_bytes)
{
	const char in[] = "t\x1b]0;pwned\x07 \n\\ \xC2\x9B \xFF \xE2\x82\xAC";
	char *out = put(in, sizeof in - 1);
	cr_assert_str_eq(out, "t\\x1B]0;pwned\\x07 \\n\\\\ \\x9B \\xFF \xE2\x82\xAC");
	free(out);
}

Test(text, json_copy_is_utf8_and_keeps_bytes_visible)
{
	size_t len;
	char *out = text_utf8("a\xFF" "b\xE2\x82", 5, &len);
	cr_assert_str_eq(out, "a\\xFFb\\xE2\\x82");
	cr_assert_eq(len, strlen(out));
	free(out);
}

static char *tmpdir(void)
{
	char *d = strdup("/tmp/katra-text-XXXXXX");
	cr_assert_not_null(mkdtemp(d));
	return d;
}

Test(outfile, a_symlink_at_the_name_is_replaced_not_followed)
{
	char *d = tmpdir(), victim[256], out[256];
	snprintf(victim, sizeof victim, "%s/victim", d);
	snprintf(out, sizeof out, "%s/out", d);
	FILE *v = fopen(victim, "w");
	fputs("keep", v);
	fclose(v);
	cr_assert_eq(symlink(victim, out), 0);
	outfile o;
	cr_assert_eq(outfile_open(&o, out, NULL), 0);
	cr_assert_eq(write(o.fd, "new", 3), 3);
	cr_assert_eq(outfile_commit(&o), 0);
	size_t n;
	int fd = open(victim, O_RDONLY);
	char *got = (char *)t_slurp_fd(fd, &n);
	close(fd);
	cr_assert_eq(n, 4);
	cr_assert_eq(memcmp(got, "keep", 4), 0, "the link's target is untouched");
	struct stat sb;
	cr_assert_eq(lstat(out, &sb), 0);
	cr_assert(S_ISREG(sb.st_mode), "the link itself was replaced by the output");
	free(got);
	unlink(victim);
	unlink(out);
	rmdir(d);
	free(d);
}

Test(outfile, refuses_its_own_input_and_leaves_nothing_on_abort)
{
	char *d = tmpdir(), in[256];
	snprintf(in, sizeof in, "%s/in", d);
	close(open(in, O_CREAT | O_WRONLY, 0644));
	struct stat sb;
	cr_assert_eq(stat(in, &sb), 0);
	outfile o;
	cr_assert_eq(outfile_open(&o, in, &sb), -EEXIST);
	char out[256];
	snprintf(out, sizeof out, "%s/out", d);
	cr_assert_eq(outfile_open(&o, out, &sb), 0);
	outfile_abort(&o);
	cr_assert_eq(access(out, F_OK), -1);
	unlink(in);
	cr_assert_eq(rmdir(d), 0, "no temporary file is left behind");
	free(d);
}

Test(outfile, a_symlink_to_a_device_is_replaced_not_written_through)
{
	char *d = tmpdir(), out[256];
	snprintf(out, sizeof out, "%s/out", d);
	cr_assert_eq(symlink("/dev/null", out), 0);
	outfile o;
	cr_assert_eq(outfile_open(&o, out, NULL), 0);
	cr_assert_eq(o.direct, 0, "a link outside /dev is never followed");
	cr_assert_eq(write(o.fd, "new", 3), 3);
	cr_assert_eq(outfile_commit(&o), 0);
	size_t n;
	uint8_t *got = t_slurp(out, &n);
	cr_assert_eq(n, 3);
	cr_assert_eq(memcmp(got, "new", 3), 0);
	free(got);
	unlink(out);
	rmdir(d);
	free(d);
}

/* The attacker of the race tests: flips NAME between two files by
 * rename(), atomically, until told to stop. */
struct swapper {
	char name[256], a[256], b[256];
	int hard;               /* hard links to a and b, else symlinks */
	volatile int stop;
};

static void swap_to(const struct swapper *s, const char *target, const char *tmp)
{
	unlink(tmp);
	if (s->hard ? link(target, tmp) : symlink(target, tmp))
		return;
	rename(tmp, s->name);
}

static void *swap_loop(void *arg)
{
	struct swapper *s = arg;
	char tmp[300];
	snprintf(tmp, sizeof tmp, "%s.swap", s->name);
	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		swap_to(s, s->a, tmp);
		swap_to(s, s->b, tmp);
	}
	unlink(tmp);
	return NULL;
}

/* Open, write and commit OUT @runs times while @s swaps it; return how
 * many opens were refused because the name changed under them. */
static int write_while_swapped(struct swapper *s, int runs, int drain_fd)
{
	pthread_t t;
	int stale = 0;
	cr_assert_eq(pthread_create(&t, NULL, swap_loop, s), 0);
	for (int i = 0; i < runs; i++) {
		outfile o;
		int rc = outfile_open(&o, s->name, NULL);
		if (rc == -ESTALE) {
			stale++;
			continue;
		}
		cr_assert_eq(rc, 0, "run %d: %s", i, strerror(-rc));
		cr_assert_eq(write(o.fd, "OWNED", 5), 5);
		outfile_commit(&o);
		char junk[4096];
		while (drain_fd >= 0 && read(drain_fd, junk, sizeof junk) > 0)
			;
	}
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	return stale;
}

static void victim_is_intact(const char *victim)
{
	size_t n;
	uint8_t *got = t_slurp(victim, &n);
	cr_assert_eq(n, 6);
	cr_assert_eq(memcmp(got, "secret", 6), 0, "the victim was written through OUT");
	free(got);
}

static void make_victim(char *victim, size_t cap, const char *d)
{
	snprintf(victim, cap, "%s/victim", d);
	int fd = open(victim, O_CREAT | O_WRONLY | O_EXCL, 0600);
	cr_assert_eq(write(fd, "secret", 6), 6);
	close(fd);
}

/* F1: a link flipped between /dev/null (for the check) and a victim (for
 * the open) never leads a write into the victim. */
Test(outfile, a_link_swapped_during_open_never_writes_its_target, .timeout = 120)
{
	char *d = tmpdir();
	struct swapper s = { .hard = 0 };
	make_victim(s.b, sizeof s.b, d);
	snprintf(s.a, sizeof s.a, "/dev/null");
	snprintf(s.name, sizeof s.name, "%s/out", d);
	write_while_swapped(&s, 1000, -1);
	victim_is_intact(s.b);
	unlink(s.name);
	unlink(s.b);
	cr_assert_eq(rmdir(d), 0, "no temporary file is left behind");
	free(d);
}

/* F1: a FIFO of ours at OUT swapped for a hard link to a victim between the
 * check and the open: what was opened is not what was checked, refused. */
Test(outfile, a_fifo_swapped_for_a_hard_link_is_refused, .timeout = 120)
{
	char *d = tmpdir();
	struct swapper s = { .hard = 1 };
	make_victim(s.b, sizeof s.b, d);
	snprintf(s.a, sizeof s.a, "%s/fifo", d);
	snprintf(s.name, sizeof s.name, "%s/out", d);
	cr_assert_eq(mkfifo(s.a, 0600), 0);
	/* Held open for reading and writing, so opening it never waits. */
	int rd = open(s.a, O_RDWR | O_NONBLOCK);
	cr_assert_geq(rd, 0);
	int stale = write_while_swapped(&s, 4000, rd);
	cr_log_info("%d of 4000 opens refused as swapped", stale);
	victim_is_intact(s.b);
	close(rd);
	unlink(s.name);
	unlink(s.a);
	unlink(s.b);
	cr_assert_eq(rmdir(d), 0, "no temporary file is left behind");
	free(d);
}

/* ---- digits: the formatters' integers, as printf writes them ------------- */

static void check_u64(uint64_t v)
{
	char a[32], b[32];
	*put_u64(a, v) = '\0';
	snprintf(b, sizeof(b), "%" PRIu64, v);
	cr_assert_str_eq(a, b);
}

/* put_u64() counts the digits from the bit length: every power of ten and
 * two and their neighbours, where the count changes, and a spread. */
Test(digits, u64_as_printf)
{
	for (uint64_t p = 1, i = 0; i < 20; i++, p *= 10) {
		check_u64(p - 1);
		check_u64(p);
		check_u64(p + 1);
	}
	for (int b = 0; b < 64; b++) {
		check_u64((uint64_t)1 << b);
		check_u64(((uint64_t)1 << b) - 1);
	}
	check_u64(UINT64_MAX);
	uint64_t x = 88172645463325252u;
	for (int i = 0; i < 100000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		check_u64(x >> (i % 64));
	}
}

/* Eight digits by multiplies, and Chrome's microseconds made of them. */
Test(digits, eight_digits_and_microseconds_as_printf)
{
	char a[32], b[32];
	for (uint32_t v = 0; v < 100000000u; v += v < 200000 ? 1 : 9973) {
		*put_8digits(a, v) = '\0';
		snprintf(b, sizeof(b), "%08" PRIu32, v);
		cr_assert_str_eq(a, b);
		*put_lo_us_comma(a, v) = '\0';
		snprintf(b, sizeof(b), "%05" PRIu32 ".%03" PRIu32 "3,", v / 1000, v % 1000);
		cr_assert_str_eq(a, b);
		*put_small_us_comma(a, v) = '\0';
		snprintf(b, sizeof(b), "%" PRIu32 ".%03" PRIu32 "3,", v / 1000, v % 1000);
		cr_assert_str_eq(a, b);
	}
	*put_8digits(a, 99999999u) = '\0';
	cr_assert_str_eq(a, "99999999");
}
