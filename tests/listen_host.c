/*
 * listen_host TAG - a traced process with a listening flight session, for
 * test_listener, driven a line at a time on standard input; each answer
 * is one line on standard output:
 *   (start)     "ready PID": the session listens; events named "from-TAG"
 *               are in this thread's ring
 *   name        a new thread calls kt_name(): "named ID" once it returns
 *   snap OUT    runs `katra snapshot <own pid> --out OUT` (KATRA names
 *               the binary): "snap STATUS", its exit status
 *   names N     interns N names of 200 bytes: "names N"
 *   selfsnap P  a new thread calls kt_session_snapshot() into path P:
 *               "selfsnap RC" once it returns
 *   stop        kt_session_stop(): "stopped RC"
 *   exit        exit(0) without a stop; end of input does the same
 * So a test can tell which of these a stalled file holds up: each answer
 * comes or does not.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <katra/katra.h>

static void say(const char *what, long v)
{
	printf("%s %ld\n", what, v);
	fflush(stdout);
}

static void *namer(void *arg)
{
	static int n;
	char name[32];
	(void)arg;
	snprintf(name, sizeof(name), "named-%d", ++n);
	say("named", (long)kt_name(name));
	return NULL;
}

static kt_session *session;
static char self_path[512];

static void *self_snap(void *arg)
{
	(void)arg;
	say("selfsnap", kt_session_snapshot(session, self_path, -1, 0, 0, NULL));
	return NULL;
}

static void intern(long n)
{
	char name[256];
	for (long i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "pad-%ld-%0190d", i, 0);
		kt_name(name);
	}
	say("names", n);
}

static int run_cli(const char *out)
{
	char pid[32];
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	const char *katra = getenv("KATRA");
	pid_t c = fork();
	if (c == 0) {
		/* Its report is not one of our answers. */
		if (dup2(2, 1) < 0)
			_exit(126);
		char *const argv[] = { "katra", "snapshot", pid, "--out", (char *)out, NULL };
		execv(katra ? katra : "katra", argv);
		_exit(127);
	}
	int st;
	if (c < 0 || waitpid(c, &st, 0) != c)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: listen_host TAG\n");
		return 2;
	}
	kt_session_options o = { .mode = KT_SESSION_FLIGHT, .listen = 1 };
	kt_session *s;
	if (kt_session_start(NULL, &o, &session)) {
		fprintf(stderr, "listen_host: %s\n", kt_session_get_start_error());
		return 1;
	}
	s = session;
	char tag[64];
	snprintf(tag, sizeof(tag), "from-%s", argv[1]);
	uint32_t id = kt_name(tag);
	for (int i = 0; i < 1000; i++)
		kt_counter(id, i);
	say("ready", (long)getpid());
	char line[512];
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		if (!strcmp(line, "name")) {
			pthread_t t;
			if (!pthread_create(&t, NULL, namer, NULL))
				pthread_detach(t);
		} else if (!strncmp(line, "snap ", 5)) {
			say("snap", run_cli(line + 5));
		} else if (!strncmp(line, "names ", 6)) {
			intern(atol(line + 6));
		} else if (!strncmp(line, "selfsnap ", 9)) {
			pthread_t t;
			snprintf(self_path, sizeof(self_path), "%s", line + 9);
			if (!pthread_create(&t, NULL, self_snap, NULL))
				pthread_detach(t);
		} else if (!strcmp(line, "stop")) {
			say("stopped", kt_session_stop(s, NULL));
		} else if (!strcmp(line, "exit")) {
			break;
		}
	}
	exit(0);
}
