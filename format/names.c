/* The display names of event types and frame kinds, from their one lists
 * (KT_EVENT_TYPES in katra/record.h, KT_FRAME_KINDS in katra/trace.h),
 * and of overflow policies. */
#include <katra/reader.h>

const char *kt_event_type_name(unsigned type)
{
	switch (type) {
#define KT__EV_NAME(code, name, text, payload, max_flags, value) \
	case code:                                        \
		return text;
		KT_EVENT_TYPES(KT__EV_NAME)
#undef KT__EV_NAME
	default:
		return "unknown";
	}
}

const char *kt_frame_kind_name(unsigned kind)
{
	switch (kind) {
#define KT__FRAME_NAME(code, name, text) \
	case code:                       \
		return text;
		KT_FRAME_KINDS(KT__FRAME_NAME)
#undef KT__FRAME_NAME
	default:
		return "unknown";
	}
}

const char *kt_overflow_name(unsigned policy)
{
	static const char *const names[] = {
		[KT_OVERFLOW_WAIT] = "wait",
		[KT_OVERFLOW_BLOCK] = "block",
		[KT_OVERFLOW_DROP] = "drop",
	};
	return policy < sizeof(names) / sizeof(names[0]) ? names[policy] : "unknown";
}
