// The one pool of worker threads: requant's ordered conversion, OIW4 plane compression,
// inspect's digest/diff passes and (through shared_for_each) the matmul kernels' row ranges.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace oiw {

// Threads worth starting for `work_items` independent items when `requested` were asked for
// (0: no preference): min(requested or hardware, hardware, work_items), at least 1, where
// hardware = std::thread::hardware_concurrency() (1 if unknown). The work is CPU-bound, so more
// threads than cores or items only cost memory (a stack each).
unsigned thread_count(unsigned requested, uint64_t work_items);

// A fixed set of worker threads running one batch of tasks at a time (one caller at a time).
class ThreadPool {
public:
    using Compute = std::function<size_t(int64_t task, unsigned worker, uint8_t* out)>;
    using Sink = std::function<void(int64_t task, std::span<const uint8_t> out)>;

    // Starts `n_workers` (>= 1) threads. When the system refuses one (std::system_error), the
    // started ones are stopped and FormatError(Io) "cannot create worker thread K of N: ..." thrown.
    explicit ThreadPool(unsigned n_workers);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;
    unsigned size() const { return static_cast<unsigned>(workers_.size()); }

    // Runs compute(t, worker, slot) for t in [0, n_tasks) on the workers, each writing into a slot
    // of `slot_bytes` of a ring of max(4, 3 x size()) slots, and sink(t, result) on the calling
    // thread in order of t: output streams out in order with a bounded number of tasks in flight.
    // Rethrows the first exception of either after the workers stopped.
    void run_ordered(int64_t n_tasks, size_t slot_bytes, const Compute& compute, const Sink& sink);
    // Runs fn(i) for i in [0, n) on the workers, started in index order; returns when all are
    // done. Rethrows the first exception thrown (tasks not yet started are skipped).
    void for_each(size_t n, const std::function<void(size_t)>& fn);

private:
    const size_t ring_;
    std::vector<std::thread> workers_;
    std::mutex mu_;
    std::condition_variable cv_work_, cv_space_, cv_done_;
    std::vector<uint8_t> buf_;
    std::vector<std::pair<int64_t, size_t>> done_;  // per slot: task held, bytes
    const Compute* compute_ = nullptr;
    size_t slot_bytes_ = 0;
    int64_t n_tasks_ = 0, next_ = 0, consumed_ = 0;
    uint64_t generation_ = 0;
    unsigned busy_ = 0;
    bool ordered_ = false, stop_ = false;
    std::exception_ptr error_;

    void start(int64_t n_tasks, size_t slot_bytes, const Compute& compute, bool ordered);
    void finish();
    void fail(std::exception_ptr e);
    void stop();
    void work(unsigned w);
};

// Runs fn(i) for i in [0, n) on the process's shared pool (one worker per core, started on first
// use and kept: no thread start per call); returns when all are done, rethrowing the first
// exception. A call made while the pool is busy (from one of its own tasks or from another thread)
// runs its items in index order on the calling thread instead of waiting for it.
void shared_for_each(size_t n, const std::function<void(size_t)>& fn);

// Runs fn(i) for i in [0, n) on a ThreadPool of thread_count(threads, n) threads (0: all cores),
// largest `weight[i]` first. The first exception thrown by any fn is rethrown after all workers stop.
void parallel_for(size_t n, const std::vector<uint64_t>& weight, const std::function<void(size_t)>& fn,
                  unsigned threads = 0);

}  // namespace oiw
