/* Error names and messages, generated from the one list in katra/error.h. */
#define _GNU_SOURCE
#include <string.h>

#include <katra/error.h>

const char *kt_strerror(int err)
{
	if (err == 0)
		return "success";
	switch (err) {
#define KT__ERR_MSG(name, value, msg) case value: return msg;
	KT_ERROR_LIST(KT__ERR_MSG)
#undef KT__ERR_MSG
	default:
		break;
	}
	/* strerror() may return a buffer it rewrites; strerrordesc_np() is the
	 * static table behind it, which is what a thread-safe API needs. */
	if (err < 0 && err > -4096) {
		const char *s = strerrordesc_np(-err);
		if (s)
			return s;
	}
	return "unknown katra error";
}

const char *kt_err_name(int err)
{
	if (err == 0)
		return "OK";
	switch (err) {
#define KT__ERR_NAME(name, value, msg) case value: return #name;
	KT_ERROR_LIST(KT__ERR_NAME)
#undef KT__ERR_NAME
	default:
		break;
	}
	if (err < 0 && err > -4096) {
		const char *s = strerrorname_np(-err);
		if (s)
			return s;
	}
	return "KT_EUNKNOWN";
}
