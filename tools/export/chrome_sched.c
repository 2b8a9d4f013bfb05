/*
 * chrome_sched.c - scheduling as Chrome slices; chrome_sched.h says how.
 */
#include <inttypes.h>
#include <stdio.h>

#include "tools/export/chrome_sched.h"
#include "tools/pipeline/export_state.h"

void chsched_init(struct chsched *s, uint64_t pid)
{
	slane_init(&s->lanes);
	s->pid = pid;
}

static int put_iv(struct chsched *s, struct fmt *fm, const struct tables *t,
		  const struct slane_iv *iv)
{
	char buf[320], cpu[24] = "";
	uint64_t d = iv->end - iv->begin;
	if (iv->cpu != SLANE_NO_CPU)
		snprintf(cpu, sizeof(cpu), "\"cpu\":%u", iv->cpu);
	int n = snprintf(buf, sizeof(buf), ",\n{\"pid\":%" PRIu64 ",\"tid\":%u,\"ts\":%" PRIu64
			 ".%03u3,\"dur\":%" PRIu64 ".%03u3,\"ph\":\"X\",\"cat\":\"sched\","
			 "\"name\":\"%s\",\"args\":{%s%s%s}}",
			 export_pid(t, iv->stream, s->pid), export_os_tid(t, iv->stream),
			 iv->begin / 1000, (unsigned)(iv->begin % 1000), d / 1000,
			 (unsigned)(d % 1000), slane_name(iv->state), cpu,
			 *cpu && iv->cut ? "," : "", iv->cut ? "\"cut\":\"end\"" : "");
	return fmt_chrome_raw(fm, buf, (size_t)n);
}

int chsched_event(struct chsched *s, struct fmt *fm, const struct tables *t, const kt_event *ev,
		  uint64_t ns)
{
	struct slane_iv iv;
	int rc = slane_event(&s->lanes, ev, ns, &iv);
	return rc > 0 ? put_iv(s, fm, t, &iv) : rc;
}

int chsched_finish(struct chsched *s, struct fmt *fm, const struct tables *t, uint64_t end)
{
	struct slane_iv iv;
	size_t at = 0;
	int rc = 0;
	while (!rc && slane_finish(&s->lanes, end, &at, &iv))
		rc = put_iv(s, fm, t, &iv);
	return rc;
}

void chsched_free(struct chsched *s)
{
	slane_free(&s->lanes);
}
