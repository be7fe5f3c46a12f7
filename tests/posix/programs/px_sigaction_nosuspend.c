/* px_sigaction.c without its sigsuspend cases, for the header mode too:
 * there sigsuspend is glibc's, which weft does not see (a thread waiting
 * in it holds its worker, docs/posix-coverage.md, "Blocking system
 * calls"). */
#define PX_NO_SIGSUSPEND 1
#include "px_sigaction.c"
