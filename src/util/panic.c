/* wf_panic: the one way weft reports a broken internal invariant. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

void wf_panic_at(const char *func, const char *fmt, ...)
{
	char buf[512];
	int n = snprintf(buf, sizeof buf, "weft: fatal: %s: ", func);
	va_list ap;
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof buf)
		n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof buf - 1)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	/* write(2), not stdio: we may be on a broken stack or inside a signal. */
	ssize_t r = write(STDERR_FILENO, buf, (size_t)n);
	(void)r;
	abort();
}
