/*
 * dlclose_probe LIB TRACE - a plugin host: dlopen() libkatra at LIB, trace
 * into TRACE from a thread that stays alive, stop, dlclose() the library,
 * then let the thread exit (its ring's key destructor runs then).
 * Exit status: 0, or the step that failed; a signal if the host died.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>

typedef struct kt_session kt_session;

static pthread_barrier_t step;
static int (*thread_name)(const char *);

static void *traced(void *arg)
{
	(void)arg;
	thread_name("probe"); /* this thread now has a ring */
	pthread_barrier_wait(&step);
	pthread_barrier_wait(&step); /* the library is closed meanwhile */
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 1;
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return 2;
	int (*start)(const char *, const void *, kt_session **) = dlsym(lib, "kt_session_start");
	int (*stop)(kt_session *, void *) = dlsym(lib, "kt_session_stop");
	thread_name = dlsym(lib, "kt_thread_name");
	kt_session *s;
	if (!start || !stop || !thread_name || start(argv[2], NULL, &s))
		return 3;
	pthread_t th;
	pthread_barrier_init(&step, NULL, 2);
	if (pthread_create(&th, NULL, traced, NULL))
		return 4;
	pthread_barrier_wait(&step);
	if (stop(s, NULL) || dlclose(lib))
		return 5;
	/* Still mapped: the thread's key destructor has its code. */
	if (!dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD))
		return 6;
	pthread_barrier_wait(&step);
	pthread_join(th, NULL);
	return 0;
}
