/* Minimal TAP producer for the test programs (automake tap-driver). */
#ifndef TILERAP_TEST_TAP_H
#define TILERAP_TEST_TAP_H
#include <stdarg.h>
#include <stdio.h>

static int tap_count = 0, tap_failed = 0;

static inline int tap_ok(int cond, const char *fmt, ...)
{
  va_list ap;
  tap_count++;
  if (!cond) tap_failed++;
  printf("%sok %d - ", cond ? "" : "not ", tap_count);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
  return cond;
}

static inline void tap_diag(const char *fmt, ...)
{
  va_list ap;
  printf("# ");
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
}

/* Prints the plan and returns the exit status. */
static inline int tap_done(void)
{
  printf("1..%d\n", tap_count);
  return tap_failed ? 1 : 0;
}
#endif
