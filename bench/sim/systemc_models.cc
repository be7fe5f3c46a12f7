// weft-sim-systemc: the SystemC 2.3.4 peer row of `weft-bench sim`.
//
// The three simulation models of models.h (prodcons, fibo20, tfmul), written
// against SystemC with the same sizes and the same checksums, so that their
// result lines compare one to one with weft-sim's backends:
//
//   weft-sim-systemc MODEL [SIZE]
//
// prints one line,
//
//   model=M backend=systemc simcpus=1 size=S checksum=0x... sim_time=T
//   elapsed_s=E user_s=U sys_s=Y
//
// (on one line), where the times are measured in-process around sc_start().
// Exit status 2 for a model SystemC does not run (unknown, or one of the
// thread-library models), 1 for any other error.
//
// A SpecC behavior becomes a SystemC thread process; `par { a; b; }` becomes
// sc_spawn of one thread per child and a wait until the last of them has
// returned (par_block); SpecC's waitfor(10) becomes wait(10, SC_NS). SpecC's notify is a delta notification, so every
// notify here is notify(SC_ZERO_TIME): the waiter wakes in the next delta
// cycle, as SpecC's would.
//
// Each process runs its elaboration and sc_start() once: SystemC cannot
// restart a simulation in the same process.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include <systemc>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sys/resource.h>
#include <time.h>

#include "models.h"

using namespace sc_core;

namespace
{

// How a model's size scales: base x size, rounded to the nearest integer,
// at least 1.
long scaled(long base, double size)
{
	double n = std::floor(static_cast<double>(base) * size + 0.5);
	return n < 1 ? 1 : static_cast<long>(n);
}

// The outcome of the model's root, read after sc_start() returns. finished
// tells a model that ran to its end from one SystemC gave up on (every
// process waiting on an event nobody notifies: sc_start() just returns).
uint64_t g_checksum;
bool g_finished;

// par { ... }: spawn one thread per child, return when all have returned;
// the last child to finish notifies the parent. Not SystemC's sc_join
// (SC_FORK/SC_JOIN) nor a wait on the children's terminated events: with
// either, SystemC 2.3.4 frees no dead child's stack before sc_start()
// returns, so tfmul at size 1 keeps 50,000 stacks mapped, runs into the
// kernel's limit on mappings and grows by about 5 KiB of RSS per child.
class par_block
{
      public:
	template <typename F> void run(int n, F make_child)
	{
		running_ = n;
		for (int j = 0; j < n; j++)
			sc_spawn([this, body = make_child(j)] {
				body();
				if (--running_ == 0)
					done_.notify(SC_ZERO_TIME);
			});
		wait(done_);
	}

      private:
	sc_event done_;
	int running_ = 0;
};

// ---- prodcons (seed 001, listing A.1) ----

// SpecC's c_double_handshake: send() offers the data and blocks until the
// receiver has taken it; receive() blocks until a sender offers some.
template <typename T> class double_handshake
{
      public:
	void send(T v)
	{
		data_ = v;
		valid_ = true;
		if (waiting_)
			req_.notify(SC_ZERO_TIME);
		wait(ack_);
	}

	void receive(T *v)
	{
		if (!valid_) {
			waiting_ = true;
			wait(req_);
			waiting_ = false;
		}
		*v = data_;
		valid_ = false;
		ack_.notify(SC_ZERO_TIME);
	}

      private:
	T data_{};
	bool valid_ = false, waiting_ = false;
	sc_event req_, ack_;
};

// SpecC's c_handshake: send() never blocks and is remembered until a
// receive() consumes it.
class handshake
{
      public:
	void send()
	{
		flag_ = true;
		e_.notify(SC_ZERO_TIME);
	}

	void receive()
	{
		while (!flag_)
			wait(e_);
		flag_ = false;
	}

      private:
	bool flag_ = false;
	sc_event e_;
};

struct prodcons {
	long n;
	double_handshake<int8_t> cc;
	double_handshake<int16_t> cs;
	double_handshake<int32_t> ci;
	double_handshake<int64_t> cl;
	handshake cend;
	uint64_t hash = FNV_OFFSET;

	// The values start at 42 and wrap around: they count in unsigned
	// arithmetic and are sent as the signed type.
	void producer()
	{
		uint8_t c = 42;
		uint16_t s = 42;
		uint32_t i = 42;
		uint64_t l = 42;
		for (long k = 0; k < n; k++) {
			wait(10, SC_NS);
			cc.send(static_cast<int8_t>(c));
			c++;
			wait(10, SC_NS);
			cs.send(static_cast<int16_t>(s));
			s++;
			wait(10, SC_NS);
			ci.send(static_cast<int32_t>(i));
			i++;
			wait(10, SC_NS);
			cl.send(static_cast<int64_t>(l));
			l++;
		}
	}

	// Hashes every value it receives, sign-extended to 64 bits.
	void consumer()
	{
		int8_t c;
		int16_t s;
		int32_t i;
		int64_t l;
		for (long k = 0; k < n; k++) {
			cc.receive(&c);
			hash = fnv_u64(hash, static_cast<uint64_t>(static_cast<int64_t>(c)));
			cs.receive(&s);
			hash = fnv_u64(hash, static_cast<uint64_t>(static_cast<int64_t>(s)));
			ci.receive(&i);
			hash = fnv_u64(hash, static_cast<uint64_t>(static_cast<int64_t>(i)));
			cl.receive(&l);
			hash = fnv_u64(hash, static_cast<uint64_t>(l));
		}
		cend.send();
	}

	void monitor()
	{
		cend.receive();
	}

	void root()
	{
		par_block par;
		par.run(3, [this](int j) -> std::function<void()> {
			switch (j) {
			case 0:
				return [this] { producer(); };
			case 1:
				return [this] { consumer(); };
			default:
				return [this] { monitor(); };
			}
		});
		g_checksum = hash;
		g_finished = true;
	}
};

// ---- fibo20 (seed 000, listing 2) ----

typedef unsigned long long number;

number fibo(number n)
{
	return n <= 1 ? n : fibo(n - 1) + fibo(n - 2);
}

struct fibo20 {
	long rounds;
	number result[20];

	void root()
	{
		par_block par;
		number sum = 0;
		for (long r = 0; r < rounds; r++) {
			par.run(20, [this](int j) { return [this, j] { result[j] = fibo(25); }; });
			for (int j = 0; j < 20; j++)
				sum += result[j];
		}
		g_checksum = fnv_u64(FNV_OFFSET, sum);
		g_finished = true;
	}
};

// ---- tfmul (seed 001, listing A.2) ----

// A behavior instance keeps its members from one run to the next: only its
// first run multiplies.
struct fmul_behavior {
	int i = 0;
	double f = 1.2;

	void main()
	{
		while (i < 1000) {
			f *= 1.1;
			i++;
		}
	}
};

struct tfmul {
	long rounds;
	fmul_behavior fmul[10];
	uint64_t runs = 0;
	par_block par;

	// par { fmul0; ...; fmul(k-1); }
	void par_k(int k)
	{
		par.run(k, [this](int j) {
			return [this, j] {
				fmul[j].main();
				runs++;
			};
		});
	}

	// The listing's mallocs and frees between the par blocks. volatile keeps
	// the compiler from dropping the unused allocations.
	void root()
	{
		char *volatile ptr47, *volatile ptr53, *volatile ptr73, *volatile ptr89;
		for (long r = 0; r < rounds; r++) {
			par_k(1);
			ptr47 = static_cast<char *>(std::malloc(47));
			par_k(7);
			ptr73 = static_cast<char *>(std::malloc(73));
			std::free(ptr47);
			par_k(9);
			ptr53 = static_cast<char *>(std::malloc(53));
			std::free(ptr73);
			par_k(3);
			ptr89 = static_cast<char *>(std::malloc(89));
			std::free(ptr53);
			par_k(8);
			ptr73 = static_cast<char *>(std::malloc(73));
			std::free(ptr89);
			par_k(4);
			ptr47 = static_cast<char *>(std::malloc(47));
			std::free(ptr73);
			par_k(2);
			ptr89 = static_cast<char *>(std::malloc(89));
			std::free(ptr47);
			par_k(5);
			ptr53 = static_cast<char *>(std::malloc(53));
			std::free(ptr89);
			par_k(6);
			ptr73 = static_cast<char *>(std::malloc(73));
			std::free(ptr53);
			par_k(10);
			ptr89 = static_cast<char *>(std::malloc(89));
			std::free(ptr73);
			par_k(1);
			ptr47 = static_cast<char *>(std::malloc(47));
			std::free(ptr89);
			par_k(7);
			ptr73 = static_cast<char *>(std::malloc(73));
			std::free(ptr47);
			par_k(9);
			ptr53 = static_cast<char *>(std::malloc(53));
			std::free(ptr73);
			par_k(3);
			ptr89 = static_cast<char *>(std::malloc(89));
			std::free(ptr53);
			par_k(8);
			ptr73 = static_cast<char *>(std::malloc(73));
			std::free(ptr89);
			par_k(4);
			ptr47 = static_cast<char *>(std::malloc(47));
			std::free(ptr73);
			par_k(2);
			ptr89 = static_cast<char *>(std::malloc(89));
			std::free(ptr47);
			par_k(5);
			ptr53 = static_cast<char *>(std::malloc(53));
			std::free(ptr89);
			par_k(6);
			ptr73 = static_cast<char *>(std::malloc(73));
			std::free(ptr53);
			std::free(ptr73);
		}
		uint64_t h = fnv_u64(FNV_OFFSET, runs);
		for (int j = 0; j < 10; j++) {
			uint64_t bits;
			std::memcpy(&bits, &fmul[j].f, sizeof bits);
			h = fnv_u64(h, bits);
		}
		g_checksum = h;
		g_finished = true;
	}
};

// The thread-library models of models.h: known, but not run here.
bool is_thread_model(const char *model)
{
	static const char *const names[] = {"mw4", "mw40", "mw400", "jc40", "jc400"};
	for (const char *n : names)
		if (std::strcmp(model, n) == 0)
			return true;
	return false;
}

// SystemC's default handler prints its reports on stdout, which is for the
// result line only: print them on stderr and let the default handler do the
// rest (stop, abort, throw).
void report_to_stderr(const sc_report &rep, const sc_actions &actions)
{
	if (actions & SC_DISPLAY)
		std::fprintf(stderr, "%s\n", sc_report_compose_message(rep).c_str());
	sc_report_handler::default_handler(rep, actions & ~SC_DISPLAY);
}

double seconds(const struct timeval &tv)
{
	return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
}

} // namespace

int sc_main(int argc, char *argv[])
{
	sc_report_handler::set_handler(report_to_stderr);
	if (argc < 2 || argc > 3) {
		std::fprintf(stderr,
			     "usage: weft-sim-systemc MODEL [SIZE]\n"
			     "  MODEL: prodcons, fibo20 or tfmul; SIZE: scale factor > 0 (1)\n");
		return 1;
	}
	const char *model = argv[1];
	double size = 1;
	if (argc == 3) {
		char *end;
		errno = 0;
		size = std::strtod(argv[2], &end);
		if (errno || end == argv[2] || *end || !std::isfinite(size) || size <= 0) {
			std::fprintf(stderr, "weft-sim-systemc: bad size '%s'\n", argv[2]);
			return 1;
		}
	}

	// The models live as long as the simulation: sc_main's frame does.
	prodcons pc;
	fibo20 fb;
	tfmul tf;
	if (std::strcmp(model, "prodcons") == 0) {
		pc.n = scaled(50000, size);
		sc_spawn([&pc] { pc.root(); }, "prodcons");
	} else if (std::strcmp(model, "fibo20") == 0) {
		fb.rounds = scaled(50, size);
		sc_spawn([&fb] { fb.root(); }, "fibo20");
	} else if (std::strcmp(model, "tfmul") == 0) {
		tf.rounds = scaled(200, size);
		sc_spawn([&tf] { tf.root(); }, "tfmul");
	} else {
		if (is_thread_model(model))
			std::fprintf(stderr, "weft-sim-systemc: %s: not a simulation model\n",
				     model);
		else
			std::fprintf(stderr, "weft-sim-systemc: unknown model '%s'\n", model);
		return 2;
	}

	struct timespec t0, t1;
	struct rusage r0, r1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	getrusage(RUSAGE_SELF, &r0);
	sc_start();
	getrusage(RUSAGE_SELF, &r1);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	if (!g_finished) {
		std::fprintf(stderr,
			     "weft-sim-systemc: %s: the simulation stopped before its end\n",
			     model);
		return 1;
	}
	unsigned long long sim_ns = sc_time_stamp().value() / sc_time(1, SC_NS).value();
	double elapsed = static_cast<double>(t1.tv_sec - t0.tv_sec) +
			 static_cast<double>(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	std::printf("model=%s backend=systemc simcpus=1 size=%g checksum=0x%016llx sim_time=%llu "
		    "elapsed_s=%.6f user_s=%.6f sys_s=%.6f\n",
		    model, size, static_cast<unsigned long long>(g_checksum), sim_ns, elapsed,
		    seconds(r1.ru_utime) - seconds(r0.ru_utime),
		    seconds(r1.ru_stime) - seconds(r0.ru_stime));
	return 0;
}

// SystemC's own main() prints its banner (on stderr) before it calls
// sc_main(). This main replaces it (the LRM's way: call sc_elab_and_sim) and
// turns the banner off first through SystemC's documented variable.
int main(int argc, char *argv[])
{
	setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
	return sc_elab_and_sim(argc, argv);
}
