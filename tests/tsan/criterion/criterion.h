/*
 * A minimal stand-in for <criterion/criterion.h>, used only to run the
 * concurrency tests under ThreadSanitizer.  Criterion 2.4's runner cannot
 * start under TSan (its BoxFort arena cannot map its region beside TSan's
 * shadow memory: upstream Criterion issue #274, open), so the same test
 * sources are built against this header instead.  Each Test() runs in its
 * own forked child, as under Criterion; an assertion failure prints and
 * exits that child with status 1.  The run ends with "N passed, N failed".
 */
#ifndef KATRA_TSAN_CRITERION_SHIM_H
#define KATRA_TSAN_CRITERION_SHIM_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct t_case {
	const char *suite, *name;
	void (*fn)(void);
	struct t_case *next;
};
static struct t_case *t_cases, **t_tail = &t_cases;

#define Test(suite, name, ...)                                                  \
	static void t_fn_##suite##_##name(void);                                \
	static struct t_case t_case_##suite##_##name = { #suite, #name,         \
							 t_fn_##suite##_##name, 0 }; \
	__attribute__((constructor)) static void t_reg_##suite##_##name(void)   \
	{                                                                       \
		*t_tail = &t_case_##suite##_##name;                             \
		t_tail = &t_case_##suite##_##name.next;                         \
	}                                                                       \
	static void t_fn_##suite##_##name(void)

__attribute__((format(printf, 4, 5), noreturn)) static void
t_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s:%d: assertion failed: %s", file, line, expr);
	if (fmt[0]) {
		fprintf(stderr, ": ");
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	fprintf(stderr, "\n");
	exit(1);
}

#define T_CHECK(cond, text, ...)                                                \
	do {                                                                    \
		if (!(cond))                                                    \
			t_fail(__FILE__, __LINE__, text, "" __VA_ARGS__);       \
	} while (0)
#define cr_assert(c, ...) T_CHECK((c), #c, __VA_ARGS__)
#define cr_assert_eq(a, b, ...) T_CHECK((a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...) T_CHECK((a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...) T_CHECK((a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...) T_CHECK((a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...) T_CHECK((a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) T_CHECK((a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_assert_null(p, ...) T_CHECK((p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...) T_CHECK((p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) T_CHECK(strcmp((a), (b)) == 0, #a " eq " #b, __VA_ARGS__)
#define cr_assert_fail(...) T_CHECK(0, "cr_assert_fail", __VA_ARGS__)
#define cr_log_info(...) (fprintf(stderr, __VA_ARGS__), fputc('\n', stderr))
/* A skipped test passes here, with its reason on stderr. */
#define cr_skip_test(...) (fprintf(stderr, "skipped: " __VA_ARGS__), fputc('\n', stderr), exit(0))

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;
	const char *only = argc > 1 ? argv[1] : NULL;
	for (struct t_case *c = t_cases; c; c = c->next) {
		char full[256];
		snprintf(full, sizeof(full), "%s::%s", c->suite, c->name);
		if (only && !strstr(full, only))
			continue;
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0) {
			c->fn();
			fflush(NULL);
			_exit(0);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
		printf("[%s] %s\n", ok ? "PASS" : "FAIL", full);
		ok ? passed++ : failed++;
	}
	printf("tsan: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

#endif
