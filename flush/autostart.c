/*
 * A session the environment asks for (`katra record`, issue #30): when
 * KT_RECORD_DIR names a directory, the library starts a session of its own
 * as it loads, into DIR/PID.katra, and stops it at exit.  Options come down
 * the same way: KT_RECORD_CODEC, KT_RECORD_RING, KT_RECORD_FLIGHT (and the
 * library's other variables: KT_CATEGORIES, KT_CRASH_DIR, KT_CLOCK, KT_IO).
 *
 * Why at load and not at the first emit: the first emit may be a signal
 * handler's, which must take no lock and allocate nothing; a constructor
 * runs once, before main, on the one thread there is.  A program that
 * execs a katra-linked one passes the environment on, so the new image
 * starts its own session at its load the same way.
 *
 * Which wins: the program's own.  A kt_session_start() (or the capture
 * manager's) while the recorded session runs first stops that one - its
 * file keeps what was emitted until then - and then starts the program's
 * as it asked, so a program that traces itself goes on doing exactly what
 * it did without `katra record`; its own file is where its own code said.
 *
 * fork(): the child of a process whose session is the recorded one starts
 * a recorded session of its own (session.c's child handler calls
 * kt__autostart_child()), into DIR/PID.katra.  A child of a program's own
 * session sees no session, as before: that protects the parent's trace
 * and is the program's choice.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <katra/capture.h>
#include "flush/session_impl.h"

#define MAX_SAME_PID 64 /* an exec'd image after a fork()ed child's file */

/* Taken by a stop here, so the program's start and the exit's stop never
 * both stop it. */
static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;
static kt_session *recorded; /* the session started here, or NULL */
static int recorded_fd = -1;
static int exit_hooked;

/* A positive decimal from variable @name, or @dflt when unset; -1 when set
 * to anything else. */
/* Defined (non-zero) by a program that must never record itself: the
 * katra command, which a recorded script may run, and whose `katra
 * record` sets the variable for its child only. */
extern const int kt__record_exempt __attribute__((weak));

static long env_num(const char *name, long dflt)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return dflt;
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	return errno || *end || n < 0 ? -1 : n;
}

/* DIR/PID.katra, or DIR/PID-N.katra when a fork()ed child of the same pid
 * left one before it exec'd this image: created, never an existing file. */
static int open_file(const char *dir)
{
	char path[4096];
	pid_t pid = getpid();
	for (int n = 0; n < MAX_SAME_PID; n++) {
		int len = n ? snprintf(path, sizeof(path), "%s/%d-%d.katra", dir, (int)pid, n)
			    : snprintf(path, sizeof(path), "%s/%d.katra", dir, (int)pid);
		if (len < 0 || (size_t)len >= sizeof(path))
			return -ENAMETOOLONG;
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY,
			      0644);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

static void say_failed(const char *what, int rc)
{
	/* stderr may be closed or the program's own: one line, once. */
	fprintf(stderr, "katra: KT_RECORD_DIR: %s: %s\n", what, kt_strerror(rc));
}

/* Returns 1 when it stopped one. */
static int stop_recorded(void)
{
	pthread_mutex_lock(&rec_lock);
	kt_session *s = recorded;
	recorded = NULL;
	if (s)
		kt_session_stop(s, NULL);
	if (s && recorded_fd >= 0)
		close(recorded_fd);
	if (s)
		recorded_fd = -1;
	pthread_mutex_unlock(&rec_lock);
	return s != NULL;
}

static void at_exit(void)
{
	stop_recorded();
}

static void start_recorded(void)
{
	const char *dir = getenv("KT_RECORD_DIR");
	if (!dir || !*dir || (&kt__record_exempt && kt__record_exempt))
		return;
	long codec = env_num("KT_RECORD_CODEC", 0), ring = env_num("KT_RECORD_RING", 0);
	long flight = env_num("KT_RECORD_FLIGHT", 0);
	if (codec < 0 || ring < 0 || flight < 0) {
		say_failed("KT_RECORD_CODEC, _RING or _FLIGHT is not a number", -EINVAL);
		return;
	}
	kt_session_options o = { 0 };
	o.codec = (int)codec;
	/* Set is given: KT_RECORD_CODEC=0 asks for raw chunks (KT_CODEC_NONE),
	 * not the default. */
	const char *c = getenv("KT_RECORD_CODEC");
	if (c && *c)
		o.given |= KT_GIVEN_CODEC;
	o.ring_size = (size_t)ring;
	/* The run this process belongs to (katra record --run-id, --epoch,
	 * or a harness that set them): in every process's header, so that
	 * its file, and the merge of all, name the run. */
	const char *run = getenv("KT_RUN_ID");
	long epoch = env_num("KT_EPOCH", 0);
	if (run && *run && strlen(run) <= KT_CAPTURE_RUN_ID_MAX && epoch >= 0) {
		o.run_id = run;
		o.epoch = (uint64_t)epoch;
	}
	if (flight) {
		o.mode = KT_SESSION_FLIGHT;
		o.listen = 1;
	} else {
		if ((recorded_fd = open_file(dir)) < 0) {
			say_failed(dir, recorded_fd);
			recorded_fd = -1;
			return;
		}
		o.fd = recorded_fd;
		o.given |= KT_GIVEN_FD;
	}
	int rc = kt__session_start_plain(NULL, &o, &recorded);
	if (rc) {
		say_failed("session", rc);
		if (recorded_fd >= 0)
			close(recorded_fd);
		recorded_fd = -1;
		recorded = NULL;
		return;
	}
	if (!exit_hooked)
		exit_hooked = atexit(at_exit) == 0;
}

/* After session.c's (102): its fork handlers are registered first. */
__attribute__((constructor(103))) static void autostart_load(void)
{
	start_recorded();
}

int kt__autostart_yield(void)
{
	return stop_recorded();
}

int kt__autostart_run_is_env(const char *run_id, uint64_t epoch)
{
	const char *dir = getenv("KT_RECORD_DIR"), *run = getenv("KT_RUN_ID");
	long e = env_num("KT_EPOCH", 0);
	return dir && *dir && run && !strcmp(run, run_id) && e >= 0 && (uint64_t)e == epoch;
}

void kt__autostart_child(kt_session *parent_current)
{
	/* A child of the recorded session, or of a session of the run the
	 * environment names (a harness's capture under katra record
	 * --run-id): its own file, which joins the run's capture (katra
	 * record, tools/cmd/record_join.c).  Any other session's child stays
	 * silent, its parent's trace protected. */
	int was_recorded = parent_current && (parent_current == recorded ||
					      parent_current->run_of_env);
	/* Another thread of the parent may have held it: it has none here. */
	rec_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	/* The parent's session and fd: the parent's alone. */
	recorded = NULL;
	if (recorded_fd >= 0)
		close(recorded_fd);
	recorded_fd = -1;
	if (was_recorded)
		start_recorded();
}

/* Up to @cap bytes of /proc/self/@what; its length, 0 when unreadable. */
static uint32_t read_self(const char *what, char *buf, size_t cap)
{
	char path[32];
	snprintf(path, sizeof(path), "/proc/self/%s", what);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	ssize_t got = 1;
	while (fd >= 0 && n < cap && got > 0) {
		got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			got = 1;
		else if (got > 0)
			n += (size_t)got;
	}
	if (fd >= 0)
		close(fd);
	return (uint32_t)n;
}

/* The last part of path @p. */
static const char *base_of(const char *p)
{
	const char *slash = strrchr(p, '/');
	return slash ? slash + 1 : p;
}

/* A path that names a file by another name: /proc/self/exe, /proc/PID/exe,
 * /dev/fd/N (fexecve()).  Its last part ("exe", "3") says nothing. */
static int is_alias(const char *p)
{
	return !strncmp(p, "/proc/", 6) || !strncmp(p, "/dev/fd/", 8);
}

/*
 * The process's name into @name (@cap > 16): comm, unless comm is only the
 * kernel's cut of the path exec() was given (AT_EXECFN) and that path is
 * an alias (a helper exec'd through /proc/self/exe is "exe" there); then
 * argv[0]'s last part, or, when argv[0] is an alias too, that of the file
 * /proc/self/exe names.  A name the program gave itself (prctl
 * PR_SET_NAME) is not the kernel's cut, and is kept.  @cmd holds the
 * command line's @clen bytes, argv[0] first.
 */
static void self_name(char *name, size_t cap, const char *cmd, uint32_t clen)
{
	uint32_t nlen = read_self("comm", name, cap - 1);
	/* comm ends in a newline; a name holds no zero byte. */
	while (nlen && (name[nlen - 1] == '\n' || name[nlen - 1] == 0))
		nlen--;
	name[nlen] = 0;
	const char *fn = (const char *)getauxval(AT_EXECFN);
	if (!fn || !is_alias(fn) || strncmp(name, base_of(fn), 15))
		return;
	char exe[4096];
	const char *from = NULL;
	if (clen && !is_alias(cmd) && *base_of(cmd)) {
		from = base_of(cmd); /* the command line's first string ends in its zero */
	} else {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n > 0) {
			exe[n] = 0;
			from = base_of(exe);
		}
	}
	if (from && *from) {
		size_t len = strnlen(from, cap - 1); /* a longer one cut */
		memcpy(name, from, len);
		name[len] = 0;
	}
}

int kt__write_self_process(kt_writer *w, uint64_t start_ns)
{
	static char cmd[KT_MAX_STRING];
	static pthread_mutex_t buf_lock = PTHREAD_MUTEX_INITIALIZER;
	char name[64];
	pthread_mutex_lock(&buf_lock);
	uint32_t clen = read_self("cmdline", cmd, sizeof(cmd) - 1);
	cmd[clen] = 0;
	self_name(name, sizeof(name), cmd, clen);
	uint32_t nlen = (uint32_t)strlen(name);
	while (clen && cmd[clen - 1] == 0) /* the last argument's terminator */
		clen--;
	kt_process_def p = { .id = 0, .pid = (uint64_t)getpid(), .parent_pid = (uint64_t)getppid(),
			     .start_ns = start_ns, .name_len = nlen, .cmdline_len = clen,
			     .name = name, .cmdline = cmd };
	int rc = kt_writer_process(w, &p);
	pthread_mutex_unlock(&buf_lock);
	return rc;
}
