// Boost.Context and Boost.Fiber: the C++ peers. Built only when CMake finds
// Boost's context and fiber libraries; the entry points are extern "C" (see
// peers.h) and never let an exception out.
#include "peers.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <utility>

#include <boost/context/continuation.hpp>
#include <boost/context/detail/fcontext.hpp>
#include <boost/fiber/fiber.hpp>
#include <boost/fiber/operations.hpp>

namespace ctx = boost::context;
namespace fc = boost::context::detail;

static int64_t now_ns()
{
	return std::chrono::duration_cast<std::chrono::nanoseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

// The bare switch: jump_fcontext is what callcc and Boost.Fiber are built
// on, without any scheduler or bookkeeping.
static void jump_loop(fc::transfer_t t)
{
	for (;;)
		t = fc::jump_fcontext(t.fctx, nullptr);
}

extern "C" int wb_boost_jump_rt(long n, int64_t *elapsed_ns)
{
	const std::size_t size = 64 * 1024;
	void *stack = std::malloc(size);
	if (!stack)
		return ENOMEM;
	fc::fcontext_t f = fc::make_fcontext(static_cast<char *>(stack) + size, size, jump_loop);
	fc::transfer_t t = fc::jump_fcontext(f, nullptr); // first entry, not timed
	int64_t t0 = now_ns();
	for (long i = 0; i < n; i++)
		t = fc::jump_fcontext(t.fctx, nullptr);
	*elapsed_ns = now_ns() - t0;
	// jump_loop stays suspended forever; nothing refers to its stack now.
	std::free(stack);
	return 0;
}

extern "C" int wb_boost_callcc(long n, int64_t *elapsed_ns)
{
	try {
		int64_t t0 = now_ns();
		for (long i = 0; i < n; i++) {
			ctx::continuation c = ctx::callcc(
				[](ctx::continuation &&caller) { return std::move(caller); });
			(void)c;
		}
		*elapsed_ns = now_ns() - t0;
		return 0;
	} catch (...) {
		return ENOMEM;
	}
}

extern "C" int wb_boost_fiber_create_join(long n, int64_t *elapsed_ns)
{
	try {
		int64_t t0 = now_ns();
		for (long i = 0; i < n; i++) {
			boost::fibers::fiber f([] {});
			f.join();
		}
		*elapsed_ns = now_ns() - t0;
		return 0;
	} catch (...) {
		return ENOMEM;
	}
}

extern "C" int wb_boost_fiber_yield(long n, int64_t *elapsed_ns)
{
	try {
		auto body = [n] {
			for (long i = 0; i < n; i++)
				boost::this_fiber::yield();
		};
		int64_t t0 = now_ns();
		boost::fibers::fiber a(body), b(body);
		a.join();
		b.join();
		*elapsed_ns = now_ns() - t0;
		return 0;
	} catch (...) {
		return ENOMEM;
	}
}
