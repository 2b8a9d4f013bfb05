/*
 * sql_probe - a small trace for tests/sql_views.sh: zones with source
 * locations (one with a category), nested, with arguments of every type,
 * the zone's own value and text, an argument outside any zone, and two
 * threads.  `katra sql`'s zones and args views must give what `katra
 * dump` shows of the same file.
 *
 *   sql_probe OUT.katra
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <katra/katra.h>

static void leaf(int i)
{
	KT_ZONE_AS(z, "leaf");
	KT_ZONE_ARG_I64(z, "i", -1000 - i);
	KT_ZONE_ARG_U64(z, "big", UINT64_MAX - (uint64_t)i);
	KT_ZONE_ARG_F64(z, "ratio", 0.25 * i);
}

static void step(int i)
{
	KT_ZONE_C("sim", "step");
	KT_ARG_STR("label", "step\tone", 8); /* a control character, escaped */
	kt_zone_value_u64((uint64_t)i);
	for (int j = 0; j < 2; j++)
		leaf(i * 2 + j);
	kt_zone_text("done", 4);
}

static void *worker(void *arg)
{
	(void)arg;
	KT_ZONE("worker");
	KT_ARG_I64("n", 7);
	return NULL;
}

int main(int argc, char **argv)
{
	kt_session *s;
	if (argc != 2 || kt_session_start(argv[1], NULL, &s))
		return 1;
	KT_ARG_I64("orphan", 1); /* no zone open: belongs to none */
	for (int i = 0; i < 3; i++)
		step(i);
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL) || pthread_join(t, NULL))
		return 1;
	return kt_session_stop(s, NULL) != 0;
}
