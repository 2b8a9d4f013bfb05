/*
 * record_util.h - what test_record.c and test_record_run.c share: each
 * test in a directory of its own, katra run with its stderr kept, and a
 * merged trace's processes read back.  Static inline: a test file that
 * uses a part only is not warned of the rest.
 */
#ifndef KT_TESTS_RECORD_UTIL_H
#define KT_TESTS_RECORD_UTIL_H

#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>
#include <katra/reader.h>

#define KATRA KT_BIN_DIR "/katra"
#define MULTIPROC KT_BIN_DIR "/examples/multiproc"
#define EVENTS 50000

static char tmp[] = "/tmp/kt_record_XXXXXX";

/* Each test in a directory of its own (not a TestSuite's .init: the
 * TSan build's stand-in for Criterion has none), removed when it passes. */
static inline void setup(void)
{
	/* Scheduler records (on by default) are events too: the counts
	 * below are the programs' own, so off but where a test says. */
	setenv("KT_SCHED", "0", 1);
	cr_assert_not_null(mkdtemp(tmp));
	cr_assert_eq(chdir(tmp), 0);
}

static inline void teardown(void)
{
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	cr_assert_eq(system(cmd), 0);
}

/* katra ARGS with stderr to err.txt; the pid, not waited for. */
static inline pid_t start(const char *const *args)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd = open("err.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 2);
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execv(KATRA, (char *const *)args);
		_exit(99);
	}
	return pid;
}

static inline int finish(pid_t pid)
{
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return st;
}

static inline int run(const char *const *args)
{
	int st = finish(start(args));
	cr_assert(WIFEXITED(st), "katra died: %d", st);
	return WEXITSTATUS(st);
}

static inline int err_has(const char *what)
{
	char buf[16384] = { 0 };
	FILE *f = fopen("err.txt", "r");
	cr_assert_not_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, what) != NULL;
}

/* Shell command @cmd's output, at most @len - 1 bytes of it, into @out
 * (terminated); its exit status, or -1 when it did not exit. */
static inline int cmd_out(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	size_t n = fread(out, 1, len - 1, p);
	out[n] = 0;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `katra info @path`'s events, dropped and status complete or not. */
static inline void info(const char *path, long *events, long *dropped, int *complete)
{
	char cmd[1024], line[512];
	snprintf(cmd, sizeof(cmd), "%s info '%s' 2>/dev/null", KATRA, path);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	*events = *dropped = -1;
	*complete = 0;
	while (fgets(line, sizeof(line), p)) {
		sscanf(line, "events %ld", events);
		sscanf(line, "dropped %ld", dropped);
		if (!strncmp(line, "status", 6) && strstr(line, "complete"))
			*complete = 1;
	}
	pclose(p);
}

/* The thread name of @path's thread 1 line, as info prints it. */
static inline int has_thread(const char *path, const char *name)
{
	char cmd[1024], line[512];
	int found = 0;
	snprintf(cmd, sizeof(cmd), "%s info '%s' 2>/dev/null", KATRA, path);
	FILE *p = popen(cmd, "r");
	while (fgets(line, sizeof(line), p))
		if (!strncmp(line, "  thread", 8) && strstr(line, name))
			found = 1;
	pclose(p);
	return found;
}

/* What one process of a merged trace holds. */
struct proc_seen {
	uint64_t pid;
	uint32_t flags, threads;
	char thread[32];       /* its thread's name */
	char name[32];         /* its process entry's name */
	uint64_t written, dropped;
};

/* The processes of @path (at most 8), each with its threads' rows of the
 * summary added up; returns how many. */
static inline int processes_of(const char *path, struct proc_seen *ps)
{
	kt_reader *r;
	kt_trace_frame f;
	uint32_t proc_of[64] = { 0 };
	int n = 0;
	memset(ps, 0, 8 * sizeof(*ps));
	cr_assert_eq(kt_reader_open(path, NULL, &r), 0);
	while (kt_reader_next_frame(r, &f) > 0) {
		const kt_process_def *p = kt_trace_frame_get_process(&f);
		if (p) {
			cr_assert(p->id >= 1 && p->id <= 8, "process id %u", p->id);
			ps[p->id - 1].pid = p->pid;
			ps[p->id - 1].flags = p->flags;
			snprintf(ps[p->id - 1].name, sizeof(ps[p->id - 1].name), "%.*s",
				 (int)p->name_len, p->name);
			n = p->id > (uint32_t)n ? (int)p->id : n;
		} else if (f.kind == KT_FRAME_THREAD) {
			uint32_t t = f.u.thread.thread_id, pr = f.u.thread.process;
			cr_assert(t < 64 && pr >= 1 && pr <= 8, "thread %u of %u", t, pr);
			proc_of[t] = pr;
			ps[pr - 1].threads++;
			snprintf(ps[pr - 1].thread, sizeof(ps[pr - 1].thread), "%s", f.u.thread.name);
		} else if (f.kind == KT_FRAME_SUMMARY) {
			for (uint32_t i = 0; i < f.u.summary.thread_count; i++) {
				const kt_summary_thread *row = &f.u.summary.threads[i];
				cr_assert(row->thread_id < 64 && proc_of[row->thread_id]);
				ps[proc_of[row->thread_id] - 1].written += row->written;
				ps[proc_of[row->thread_id] - 1].dropped += row->dropped;
			}
		}
	}
	kt_reader_status st;
	kt_reader_get_status(r, &st);
	cr_assert(st.complete && !st.error);
	kt_reader_close(r);
	return n;
}

#endif
