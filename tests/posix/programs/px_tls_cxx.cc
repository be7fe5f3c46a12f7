// px_tls_cxx: the C++ runtime's per-thread state, for weft's thread control blocks per thread
// (src/sched/tls.c): thread_local variables and objects with constructors and destructors, the
// exception being handled (`throw;`, std::current_exception, std::rethrow_exception, an
// exception thrown and caught while another is being handled), std::uncaught_exceptions() in
// destructors run by unwinding, errno, and thread_local destructors in threads that end by
// pthread_exit or cancellation. Every thread checks each of them after it blocked -
// on a std::mutex, in std::this_thread::yield and std::this_thread::sleep_for - and, on weft,
// maybe moved to another kernel thread; each thread also changes its CPU affinity now and
// then, which on weft moves it to that CPU's worker. With WEFT_TLS=worker, where threads share
// their worker's thread-local storage, it fails.
//
// A failed check prints FAIL and exits with status 1 at once. Otherwise the output is only
// counts and "ok", the same in every mode; how often the threads changed kernel threads goes
// to stderr, which run_three_ways.sh does not compare.
//
// Usage: px_tls_cxx
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace
{

constexpr int kTrackers = 8; // threads that use the thread_local Tracker
constexpr int kOthers = 4;   // threads that never do
constexpr int kRounds = 1000;

[[noreturn]] void fail(const char *what, int thread, int round)
{
	std::printf("FAIL thread %d round %d: %s\n", thread, round, what);
	std::fflush(stdout);
	std::_Exit(1);
}

#define CHECK(cond, thread, round)                      \
	do {                                            \
		if (!(cond))                            \
			fail(#cond, (thread), (round)); \
	} while (0)

std::mutex shared_mu; // every thread takes it several times a round
long shared_total;    // under shared_mu

std::atomic<int> constructed{0}, destroyed{0}, destroyed_first{0};
std::atomic<long> moves{0};

thread_local int tl_id = -1;
thread_local long tl_counter = 0;
thread_local bool tl_tracker_gone = false;

// Dynamically initialised on first use in each thread, destroyed at its exit. (At block
// scope: GCC initialises every namespace-scope thread_local of a file with a dynamic
// initialiser at the first use of any of them.)
const std::string &label()
{
	thread_local std::string tl_label = "label-" + std::to_string(tl_id);
	return tl_label;
}

// A thread_local object: constructed in the threads that use it, destroyed as they exit -
// in the exiting thread, before its pthread_key_create destructors (as glibc orders them).
struct Tracker {
	int owner;
	long uses = 0;
	std::vector<int> history; // memory freed at thread exit
	Tracker() : owner(tl_id)
	{
		constructed++;
	}
	~Tracker()
	{
		CHECK(owner == tl_id, tl_id, -1);
		CHECK(uses == kRounds, tl_id, -1);
		CHECK(history.size() == static_cast<size_t>(kRounds), tl_id, -1);
		tl_tracker_gone = true;
		destroyed++;
	}
};

Tracker &tracker()
{
	thread_local Tracker t;
	return t;
}

pthread_key_t exit_key;

// Runs after the thread's thread_local destructors.
void exit_key_destructor(void *value)
{
	int id = static_cast<int>(reinterpret_cast<intptr_t>(value)) - 1;
	CHECK(id == tl_id, id, -1);
	if (tl_tracker_gone)
		destroyed_first++;
}

struct ThreadError {
	int thread;
	int round;
};

// Records uncaught_exceptions() where it is destroyed, and again after blocking there.
struct UnwindProbe {
	int expected;
	int thread, round;
	~UnwindProbe()
	{
		CHECK(std::uncaught_exceptions() == expected, thread, round);
		std::this_thread::yield();
		{
			std::lock_guard<std::mutex> lock(shared_mu);
			shared_total++;
		}
		std::this_thread::sleep_for(std::chrono::microseconds(10));
		CHECK(std::uncaught_exceptions() == expected, thread, round);
	}
};

// errno's address, asked afresh each call (the compiler may keep &errno across calls within
// a function: __errno_location is const).
__attribute__((noinline, noipa)) int *errno_addr()
{
	return &errno;
}

std::vector<int> usable_cpus()
{
	cpu_set_t set;
	CPU_ZERO(&set);
	std::vector<int> cpus;
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpus.push_back(c);
	return cpus;
}

const std::vector<int> cpus = usable_cpus();

// Block in one of the ways the round picks; count a change of kernel thread.
void block(int id, int round, long &tid)
{
	switch (round % 4) {
	case 0:
		std::this_thread::yield();
		break;
	case 1:
		std::this_thread::sleep_for(std::chrono::microseconds(10));
		break;
	case 2: {
		std::lock_guard<std::mutex> lock(shared_mu);
		shared_total++;
		break;
	}
	default: {
		// Bind to one usable CPU in turn, or to all of them again.
		cpu_set_t set;
		CPU_ZERO(&set);
		int k = round / 4;
		for (size_t i = 0; i < cpus.size(); i++)
			if (k % 2 || i == static_cast<size_t>(id + k / 2) % cpus.size())
				CPU_SET(cpus[i], &set);
		if (!cpus.empty())
			CHECK(pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0, id,
			      round);
		break;
	}
	}
	long now = syscall(SYS_gettid);
	if (now != tid)
		moves++;
	tid = now;
}

// One round of exceptions: the one being handled survives a mutex, a yield and a sleep, a
// nested one, `throw;`, and std::current_exception / std::rethrow_exception.
void exceptions_round(int id, int r, long &tid)
{
	std::exception_ptr saved;
	try {
		throw ThreadError{id, r};
	} catch (const ThreadError &e) {
		const ThreadError *mine = &e;
		{
			std::lock_guard<std::mutex> lock(shared_mu);
			shared_total++;
		}
		std::this_thread::yield();
		std::this_thread::sleep_for(std::chrono::microseconds(10));
		block(id, r, tid);
		saved = std::current_exception();
		CHECK(saved != nullptr, id, r);
		// Another exception thrown and caught while this one is handled.
		try {
			throw std::runtime_error("inner");
		} catch (const std::runtime_error &inner) {
			std::this_thread::yield();
			CHECK(std::string(inner.what()) == "inner", id, r);
		}
		try {
			throw; // this thread's ThreadError, the same object
		} catch (const ThreadError &again) {
			CHECK(&again == mine, id, r);
			CHECK(again.thread == id && again.round == r, id, r);
		}
		CHECK(std::current_exception() == saved, id, r);
	}
	CHECK(std::current_exception() == nullptr, id, r);
	std::this_thread::yield();
	try {
		std::rethrow_exception(saved);
	} catch (const ThreadError &e) {
		CHECK(e.thread == id && e.round == r, id, r);
	}

	// Destructors run by unwinding see one uncaught exception; others none.
	try {
		UnwindProbe outer{1, id, r};
		throw ThreadError{id, r};
	} catch (const ThreadError &) {
		UnwindProbe inside{0, id, r};
	}
	UnwindProbe normal{0, id, r};
}

// errno set by a failing call stays the thread's across blocking, at the same address.
void errno_round(int id, int r, long &tid)
{
	int want;
	if ((id + r) % 2) {
		errno = 0;
		CHECK(::close(-1) == -1 && errno == EBADF, id, r);
		want = EBADF;
	} else {
		errno = 0;
		CHECK(::open("/nonexistent/px_tls_cxx", O_RDONLY) == -1 && errno == ENOENT, id, r);
		want = ENOENT;
	}
	int *addr = errno_addr();
	std::this_thread::yield();
	CHECK(errno == want, id, r);
	std::this_thread::sleep_for(std::chrono::microseconds(10));
	block(id, r, tid);
	CHECK(errno == want && errno_addr() == addr && *addr == want, id, r);
}

void thread_body(int id, bool use_tracker)
{
	tl_id = id;
	CHECK(tl_counter == 0, id, 0);
	CHECK(label() == "label-" + std::to_string(id), id, 0);
	CHECK(pthread_setspecific(exit_key, reinterpret_cast<void *>(intptr_t{id} + 1)) == 0, id,
	      0);
	long tid = syscall(SYS_gettid);
	for (int r = 0; r < kRounds; r++) {
		tl_counter++;
		if (use_tracker) {
			tracker().uses++;
			tracker().history.push_back(r);
		}
		exceptions_round(id, r, tid);
		errno_round(id, r, tid);
		CHECK(tl_counter == r + 1, id, r);
		CHECK(tl_id == id, id, r);
		CHECK(label() == "label-" + std::to_string(id), id, r);
		if (use_tracker)
			CHECK(tracker().owner == id && tracker().uses == r + 1, id, r);
	}
}

// Threads that end by pthread_exit or are cancelled (in sleep_for) run their thread_local
// destructors too, in the ending thread. Not under AddressSanitizer, which reports glibc's own
// forced unwinding (pthread_exit, cancellation) as a stack-buffer-underflow when the thread
// ends (tests/posix/CMakeLists.txt).
#if !defined(__SANITIZE_ADDRESS__)
std::atomic<int> leavers_ready{0}, left_by_exit{0}, left_by_cancel{0};

struct Leaver {
	int owner = tl_id;
	~Leaver()
	{
		CHECK(owner == tl_id, tl_id, -1);
		(owner % 2 ? left_by_exit : left_by_cancel)++;
	}
};

Leaver &leaver()
{
	thread_local Leaver l;
	return l;
}

void *leave(void *arg)
{
	tl_id = static_cast<int>(reinterpret_cast<intptr_t>(arg));
	leaver();
	long tid = syscall(SYS_gettid);
	for (int r = 0; r < 100; r++)
		block(tl_id, r, tid);
	leavers_ready++;
	if (tl_id % 2)
		pthread_exit(nullptr);
	for (;;)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void exit_part()
{
	constexpr int n = 4;
	pthread_t t[n];
	for (int i = 0; i < n; i++) {
		void *arg = reinterpret_cast<void *>(intptr_t{i});
		CHECK(pthread_create(&t[i], nullptr, leave, arg) == 0, i, -1);
	}
	while (leavers_ready < n)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	for (int i = 0; i < n; i += 2)
		CHECK(pthread_cancel(t[i]) == 0, i, -1);
	for (int i = 0; i < n; i++) {
		void *ret;
		CHECK(pthread_join(t[i], &ret) == 0, i, -1);
		CHECK(ret == (i % 2 ? nullptr : PTHREAD_CANCELED), i, -1);
	}
	std::printf("thread_local destructors after pthread_exit %d, after cancellation %d\n",
		    left_by_exit.load(), left_by_cancel.load());
}
#else
void exit_part()
{
	std::printf("thread_local destructors after pthread_exit and cancellation: not tried "
		    "under AddressSanitizer\n");
}
#endif

} // namespace

int main()
{
	if (pthread_key_create(&exit_key, exit_key_destructor) != 0) {
		std::printf("FAIL pthread_key_create\n");
		return 1;
	}
	tl_id = 1000;
	tl_counter = 1000;
	std::vector<std::thread> threads;
	for (int i = 0; i < kTrackers + kOthers; i++)
		threads.emplace_back(thread_body, i, i < kTrackers);
	for (auto &t : threads)
		t.join();
	std::fprintf(stderr, "px_tls_cxx: %ld changes of kernel thread\n", moves.load());

	CHECK(tl_id == 1000 && tl_counter == 1000, tl_id, -1);
	std::printf("threads %d, %d of them with a thread_local Tracker\n", kTrackers + kOthers,
		    kTrackers);
	std::printf("thread_local counters, labels and errno ok after %d rounds each\n", kRounds);
	std::printf("throw; current_exception, rethrow_exception, uncaught_exceptions ok\n");
	std::printf("tracker constructed %d destroyed %d\n", constructed.load(), destroyed.load());
	std::printf("tracker destroyed before the pthread key's destructor in %d threads\n",
		    destroyed_first.load());
	std::printf("mutex rounds %ld\n", shared_total);
	exit_part();
	return 0;
}
