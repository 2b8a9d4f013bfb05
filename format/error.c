/* Error names and messages, generated from the one list in katra/error.h. */
#define _GNU_SOURCE
#include <string.h>

#include <katra/error.h>

/* The name (@want_name) or the message of @err: katra's own codes from the
 * list, the errno range from libc's static tables (strerror() may return
 * a buffer it rewrites; strerrordesc_np() and strerrorname_np() are the
 * tables behind it, which is what a thread-safe API needs). */
static const char *describe(int err, int want_name)
{
	switch (err) {
	case 0:
		return want_name ? "OK" : "success";
#define KT__ERR_CASE(name, value, msg) \
	case value:                    \
		return want_name ? #name : msg;
		KT_ERROR_LIST(KT__ERR_CASE)
#undef KT__ERR_CASE
	default:
		break;
	}
	if (err < 0 && err > -4096) {
		const char *s = want_name ? strerrorname_np(-err) : strerrordesc_np(-err);
		if (s)
			return s;
	}
	return want_name ? "KT_EUNKNOWN" : "unknown katra error";
}

const char *kt_strerror(int err)
{
	return describe(err, 0);
}

const char *kt_err_name(int err)
{
	return describe(err, 1);
}
