/* Stacks for the backends that bring their own (N:1 and lite): one mmap per
 * stack with a PROT_NONE guard page below it, and a cache of freed stacks
 * so that a model creating threads in a loop (TFMUL) makes no system calls
 * after the first round. Used by one simulation at a time, from whichever
 * thread is running (sequential backends only), so no lock. */
#include "sim/kernel.h"

#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

typedef struct cached_stack {
	struct cached_stack *next;
	size_t size;
} cached_stack_t;

static cached_stack_t *cache;

static size_t page_size(void)
{
	static size_t ps;
	if (!ps)
		ps = (size_t)sysconf(_SC_PAGESIZE);
	return ps;
}

/* The usable range's lowest address, or NULL (errno from mmap). */
void *wsim_stack_get(size_t size)
{
	if (cache && cache->size == size) {
		cached_stack_t *c = cache;
		cache = c->next;
		return c;
	}
	size_t guard = page_size();
	char *m = mmap(NULL, size + guard, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	if (mprotect(m, guard, PROT_NONE)) {
		munmap(m, size + guard);
		return NULL;
	}
	return m + guard;
}

void wsim_stack_put(void *lo, size_t size)
{
#if defined(__SANITIZE_ADDRESS__)
	/* A thread discarded in a wait left its frames' redzones poisoned:
	 * the next thread on this stack starts from a clean shadow. */
	__asan_unpoison_memory_region(lo, size);
#endif
	cached_stack_t *c = lo;
	c->size = size;
	c->next = cache;
	cache = c;
}

void wsim_stack_cache_drain(void)
{
	size_t guard = page_size();
	while (cache) {
		cached_stack_t *c = cache;
		cache = c->next;
		munmap((char *)c - guard, c->size + guard);
	}
}
