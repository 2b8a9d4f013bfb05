/*
 * hello - README's first example with a counter and a message: a frame
 * loop traced into hello.katra (or the file its argument names).  Every
 * name is interned once, where it is written, so nothing here keeps an id.
 *
 *   cc hello.c $(pkg-config --cflags --libs katra) && ./hello
 *   katra stats hello.katra
 */
#include <katra/katra.h>

static void simulate(int frame)
{
	KT_ZONE("simulate");                   /* a zone, to the closing brace */
	KT_COUNTER("particles", 1000 + frame); /* an integer: an i64 counter */
}

int main(int argc, char **argv)
{
	kt_session *s;
	if (kt_session_start(argc > 1 ? argv[1] : "hello.katra", NULL, &s))
		return 1;
	KT_MESSAGE("log", "started");
	for (int frame = 0; frame < 100; frame++) {
		simulate(frame);
		KT_COUNTER("fps", 60.0); /* a double: an f64 counter */
		KT_FRAME("frame");       /* a frame mark, numbered 0, 1, 2, ... */
	}
	return kt_session_stop(s, NULL) != 0;
}
