/*
 * Running the katra command from Criterion tests: t_ prefix, as in
 * helpers.h.  The binary runs in tests/data (outputs that name their input
 * then name it the same way wherever the tree is checked out), with both
 * streams captured, an optional memory limit, and a deadline after which
 * it is killed, so that a command that hangs fails its test instead.
 */
#ifndef KATRA_TESTS_CLI_H
#define KATRA_TESTS_CLI_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <criterion/criterion.h>
#include <jansson.h>

#include "helpers.h"

#define KATRA KT_BIN_DIR "/katra"

struct proc {
	int status;      /* exit status; -1 when killed at the deadline */
	char out[1 << 16];
	size_t out_len;
	char err[8192];
	size_t err_len;
	long maxrss_kb;  /* the child's peak resident set */
};

struct t_run_opts {
	const char *out_file; /* stdout goes here (truncated) instead of p->out */
	long as_limit_mb;     /* RLIMIT_AS, 0 for none */
	int deadline_s;       /* 0: 120 s */
	int hold_fd;          /* >= 0: the child waits for a byte here before exec */
};

static inline void t_child(int o, int e, const struct t_run_opts *ro, const char *const *args)
{
	if (chdir(KT_TEST_DATA) < 0)
		_exit(126);
	if (ro->out_file) {
		close(o);
		o = open(ro->out_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	}
	dup2(o, 1);
	dup2(e, 2);
	if (ro->as_limit_mb) {
		struct rlimit rl = { (rlim_t)ro->as_limit_mb << 20, (rlim_t)ro->as_limit_mb << 20 };
		setrlimit(RLIMIT_AS, &rl);
	}
	char c;
	if (ro->hold_fd >= 0 && read(ro->hold_fd, &c, 1) != 1)
		_exit(125);
	const char *argv[160] = { KATRA };
	for (int i = 0; args[i] && i < 158; i++)
		argv[i + 1] = args[i];
	execv(KATRA, (char *const *)argv);
	_exit(127);
}

static inline uint64_t t_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Read both streams until they close or the deadline passes; 0, or -1 at
 * the deadline. */
static inline int t_drain_streams(struct proc *p, int o, int e, int deadline_s)
{
	uint64_t end = t_now_ms() + (uint64_t)(deadline_s ? deadline_s : 120) * 1000;
	struct pollfd pf[2] = { { o, POLLIN, 0 }, { e, POLLIN, 0 } };
	while (pf[0].fd >= 0 || pf[1].fd >= 0) {
		uint64_t now = t_now_ms();
		if (now >= end || poll(pf, 2, (int)(end - now)) == 0)
			return -1;
		for (int i = 0; i < 2; i++) {
			if (pf[i].fd < 0 || !pf[i].revents)
				continue;
			char *buf = i ? p->err : p->out, scratch[4096];
			size_t *len = i ? &p->err_len : &p->out_len;
			size_t cap = (i ? sizeof(p->err) : sizeof(p->out)) - 1;
			/* Past the buffer, read on and drop, so the child never
			 * blocks on a full pipe. */
			ssize_t k = *len < cap ? read(pf[i].fd, buf + *len, cap - *len)
					       : read(pf[i].fd, scratch, sizeof(scratch));
			if (k > 0 && *len < cap)
				*len += (size_t)k;
			if (k == 0 || (k < 0 && errno != EINTR)) {
				close(pf[i].fd);
				pf[i].fd = -1;
			}
		}
	}
	return 0;
}

/*
 * Run katra with @args (NULL-terminated) as @ro says; the child's pid goes
 * to *@pid_out before it is released (with ro->hold_fd) when not NULL.
 */
static inline void t_katra_pid(struct proc *p, const struct t_run_opts *ro,
			       const char *const *args, void (*before)(pid_t, void *), void *ctx)
{
	int o[2], e[2];
	cr_assert_eq(pipe(o), 0);
	cr_assert_eq(pipe(e), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(o[0]);
		close(e[0]);
		t_child(o[1], e[1], ro, args);
	}
	close(o[1]);
	close(e[1]);
	memset(p, 0, sizeof(*p));
	if (before)
		before(pid, ctx);
	int late = t_drain_streams(p, o[0], e[0], ro->deadline_s);
	if (late)
		kill(pid, SIGKILL);
	int st;
	struct rusage ru;
	cr_assert_eq(wait4(pid, &st, 0, &ru), pid);
	if (late) {
		p->status = -1;
		return;
	}
	cr_assert(WIFEXITED(st), "katra %s crashed (signal %d)", args[0], WTERMSIG(st));
	p->status = WEXITSTATUS(st);
	p->maxrss_kb = ru.ru_maxrss;
}

static inline void t_katra(struct proc *p, const struct t_run_opts *ro, const char *const *args)
{
	t_katra_pid(p, ro, args, NULL, NULL);
}

/* Run katra with @args; the streams here stay small. */
static inline void run_katra(struct proc *p, const char *const *args)
{
	struct t_run_opts ro = { .hold_fd = -1 };
	t_katra(p, &ro, args);
}

/* The committed golden file @path (malloc'd; *@glen its length), which
 * must equal the @len bytes at @file (KT_REGEN_GOLDEN=1 rewrites it). */
static inline uint8_t *t_golden_same(const char *path, const uint8_t *file, size_t len,
				     size_t *glen)
{
	uint8_t *golden = t_golden(path, file, len, glen);
	cr_assert_not_null(golden, "missing %s", path);
	cr_assert_eq(len, *glen);
	cr_assert_eq(memcmp(file, golden, len), 0);
	return golden;
}

/* `katra export @flag @file` (a file in tests/data) into a temporary file
 * of this process: its bytes, malloc'd, *@len long. */
static inline uint8_t *t_export(const char *flag, const char *file, size_t *len)
{
	char out[128];
	snprintf(out, sizeof(out), "/tmp/katra-export-%d.out", (int)getpid());
	unlink(out);
	struct proc p;
	run_katra(&p, (const char *const[]){ "export", flag, file, out, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	uint8_t *bytes = t_slurp(out, len);
	cr_assert_not_null(bytes);
	unlink(out);
	return bytes;
}

/* The data block of the page `katra report` or `diff --html` wrote at @out, parsed;
 * the page itself in *@html (free() it) when @html is not NULL. */
static inline json_t *t_page_data(const char *out, char **html)
{
	size_t len = 0;
	char *page = (char *)t_slurp(out, &len);
	cr_assert_not_null(page, "no page %s", out);
	page = realloc(page, len + 1);
	page[len] = 0;
	static const char open[] = "<script type=\"application/json\" id=\"data\">";
	char *from = strstr(page, open), *to = from ? strstr(from, "</script>") : NULL;
	cr_assert(from && to, "no data block");
	from += strlen(open);
	json_error_t err;
	json_t *data = json_loadb(from, (size_t)(to - from), 0, &err);
	cr_assert_not_null(data, "%s", err.text);
	if (html)
		*html = page;
	else
		free(page);
	return data;
}

/* `katra @cmd @file` prints exactly @golden's bytes (KT_REGEN_GOLDEN=1
 * rewrites them).  @file by its name in tests/data, where the command
 * runs: the output holds no path of this checkout. */
static inline void t_cli_golden(const char *cmd, const char *file, const char *golden)
{
	struct proc p;
	run_katra(&p, (const char *const[]){ cmd, file, NULL });
	cr_assert_eq(p.status, 0, "%.*s", (int)p.err_len, p.err);
	size_t len = 0;
	uint8_t *want = t_golden(golden, p.out, p.out_len, &len);
	cr_assert_not_null(want, "missing %s", golden);
	cr_assert_eq(p.out_len, len, "%.*s", (int)p.out_len, p.out);
	cr_assert_eq(memcmp(p.out, want, len), 0, "%.*s", (int)p.out_len, p.out);
	free(want);
}

#endif
