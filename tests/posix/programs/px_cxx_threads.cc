// px_cxx_threads: the C++17 standard thread library on top of pthreads, for weft's POSIX
// layer evidence: std::thread, std::mutex with std::lock_guard and std::unique_lock,
// std::condition_variable, std::shared_mutex, std::call_once and std::async with
// std::launch::async. Every result is combined in a fixed order, so the output does not
// depend on the schedule. Only the main thread waits on a std::future.
//
// Usage: px_cxx_threads [workers (4)]
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

namespace
{

std::uint64_t mix(std::uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

std::uint64_t work(std::uint64_t seed, int steps)
{
	for (int i = 0; i < steps; i++)
		seed = mix(seed);
	return seed;
}

// A fixed-size pool: tasks in a deque guarded by a mutex, workers wait on a condition
// variable, and wait_idle() waits on a second one until every submitted task has finished.
class Pool
{
      public:
	explicit Pool(int n)
	{
		for (int i = 0; i < n; i++)
			threads_.emplace_back([this] { run(); });
	}
	~Pool()
	{
		{
			std::lock_guard<std::mutex> lock(mu_);
			stop_ = true;
		}
		has_task_.notify_all();
		for (auto &t : threads_)
			t.join();
	}
	void submit(std::function<void()> task)
	{
		{
			std::lock_guard<std::mutex> lock(mu_);
			tasks_.push_back(std::move(task));
			pending_++;
		}
		has_task_.notify_one();
	}
	void wait_idle()
	{
		std::unique_lock<std::mutex> lock(mu_);
		idle_.wait(lock, [this] { return pending_ == 0; });
	}

      private:
	void run()
	{
		for (;;) {
			std::function<void()> task;
			{
				std::unique_lock<std::mutex> lock(mu_);
				has_task_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
				if (tasks_.empty())
					return;
				task = std::move(tasks_.front());
				tasks_.pop_front();
			}
			task();
			std::lock_guard<std::mutex> lock(mu_);
			if (--pending_ == 0)
				idle_.notify_all();
		}
	}

	std::mutex mu_;
	std::condition_variable has_task_, idle_;
	std::deque<std::function<void()>> tasks_;
	long pending_ = 0;
	bool stop_ = false;
	std::vector<std::thread> threads_;
};

// A bounded buffer: one mutex, one condition variable per direction.
class Channel
{
      public:
	explicit Channel(std::size_t cap) : cap_(cap)
	{
	}
	void put(long v)
	{
		std::unique_lock<std::mutex> lock(mu_);
		not_full_.wait(lock, [this] { return items_.size() < cap_; });
		items_.push_back(v);
		not_empty_.notify_one();
	}
	// Returns false once closed and drained.
	bool get(long &v)
	{
		std::unique_lock<std::mutex> lock(mu_);
		not_empty_.wait(lock, [this] { return closed_ || !items_.empty(); });
		if (items_.empty())
			return false;
		v = items_.front();
		items_.pop_front();
		not_full_.notify_one();
		return true;
	}
	void close()
	{
		std::lock_guard<std::mutex> lock(mu_);
		closed_ = true;
		not_empty_.notify_all();
	}

      private:
	std::mutex mu_;
	std::condition_variable not_empty_, not_full_;
	std::deque<long> items_;
	std::size_t cap_;
	bool closed_ = false;
};

void pool_part(int workers)
{
	const int tasks = 2000;
	std::vector<std::uint64_t> results(tasks);
	std::mutex total_mu;
	std::uint64_t xor_total = 0;
	{
		Pool pool(workers);
		for (int i = 0; i < tasks; i++) {
			pool.submit([i, &results, &total_mu, &xor_total] {
				std::uint64_t r =
					work(static_cast<std::uint64_t>(i), 200 + i % 101);
				results[i] = r;
				std::lock_guard<std::mutex> lock(total_mu);
				xor_total ^= r;
			});
		}
		pool.wait_idle();
	}
	std::uint64_t ordered = 0;
	for (auto r : results)
		ordered = ordered * 31 + r;
	std::printf("pool tasks=%d ordered=%016llx xor=%016llx\n", tasks,
		    static_cast<unsigned long long>(ordered),
		    static_cast<unsigned long long>(xor_total));
}

void channel_part()
{
	const int producers = 3, consumers = 4;
	const long per_producer = 30000;
	Channel ch(16);
	std::vector<long> sums(consumers), counts(consumers);
	std::vector<std::thread> cs, ps;
	for (int c = 0; c < consumers; c++) {
		cs.emplace_back([c, &ch, &sums, &counts] {
			long v;
			while (ch.get(v)) {
				sums[c] += v;
				counts[c]++;
			}
		});
	}
	for (int p = 0; p < producers; p++) {
		ps.emplace_back([p, &ch] {
			for (long i = 0; i < per_producer; i++)
				ch.put(p * per_producer + i);
		});
	}
	for (auto &t : ps)
		t.join();
	ch.close();
	for (auto &t : cs)
		t.join();
	long sum = 0, count = 0;
	for (int c = 0; c < consumers; c++) {
		sum += sums[c];
		count += counts[c];
	}
	long n = producers * per_producer;
	std::printf("channel items=%ld sum=%ld expected=%ld\n", count, sum, n * (n - 1) / 2);
}

void async_part()
{
	const int parts = 8;
	const std::uint64_t n = 4000000;
	std::vector<std::future<std::uint64_t>> futures;
	for (int p = 0; p < parts; p++) {
		futures.push_back(std::async(std::launch::async, [p] {
			std::uint64_t s = 0;
			for (std::uint64_t i = n * p / parts; i < n * (p + 1) / parts; i++)
				s += i * i % 1000003;
			return s;
		}));
	}
	std::uint64_t total = 0;
	for (auto &f : futures)
		total += f.get();
	std::uint64_t serial = 0;
	for (std::uint64_t i = 0; i < n; i++)
		serial += i * i % 1000003;
	std::printf("async parts=%d total=%llu serial=%llu\n", parts,
		    static_cast<unsigned long long>(total),
		    static_cast<unsigned long long>(serial));
}

void shared_once_part()
{
	std::shared_mutex rw;
	std::vector<int> table(256);
	std::once_flag once;
	std::mutex count_mu;
	int inits = 0;
	long reads = 0, writes = 0;
	std::vector<std::thread> ts;
	for (int t = 0; t < 6; t++) {
		ts.emplace_back([t, &rw, &table, &once, &count_mu, &inits, &reads, &writes] {
			std::call_once(once, [&] {
				std::lock_guard<std::mutex> lock(count_mu);
				inits++;
			});
			long r = 0, w = 0;
			for (int i = 0; i < 5000; i++) {
				if ((i + t) % 10 == 0) {
					std::unique_lock<std::shared_mutex> lock(rw);
					table[i % 256]++;
					w++;
				} else {
					std::shared_lock<std::shared_mutex> lock(rw);
					r += table[(i * 7) % 256] >= 0;
				}
			}
			std::lock_guard<std::mutex> lock(count_mu);
			reads += r;
			writes += w;
		});
	}
	for (auto &t : ts)
		t.join();
	long total = 0;
	for (int v : table)
		total += v;
	std::printf("shared_mutex reads=%ld writes=%ld table total=%ld call_once runs=%d\n", reads,
		    writes, total, inits);
}

} // namespace

int main(int argc, char **argv)
{
	int workers = 4;
	if (argc > 1) {
		char *end;
		long v = std::strtol(argv[1], &end, 10);
		if (*argv[1] == '\0' || *end != '\0' || v < 1 || v > 100000) {
			std::fprintf(stderr, "px_cxx_threads: bad worker count '%s'\n", argv[1]);
			return 2;
		}
		workers = static_cast<int>(v);
	}
	pool_part(workers);
	channel_part();
	async_part();
	shared_once_part();
	return 0;
}
