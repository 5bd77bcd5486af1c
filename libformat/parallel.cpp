#include "libformat/parallel.h"

#include <algorithm>
#include <new>
#include <numeric>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "libformat/error.h"

namespace oiw {

unsigned thread_count(unsigned requested, uint64_t work_items) {
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    const uint64_t n = std::min<uint64_t>({requested ? requested : hw, hw, work_items});
    return static_cast<unsigned>(std::max<uint64_t>(n, 1));
}

ThreadPool::ThreadPool(unsigned n_workers) : ring_(std::max<size_t>(4, size_t{3} * n_workers)) {
    workers_.reserve(n_workers);
    try {
        for (unsigned w = 0; w < n_workers; ++w) workers_.emplace_back([this, w] { work(w); });
    } catch (const std::exception& e) {  // std::system_error, or std::bad_alloc for its state
        const size_t started = workers_.size();
        stop();
        throw FormatError(ErrorKind::Io, "", "threads",
                          fmt::format("cannot create worker thread {} of {}: {}", started + 1, n_workers, e.what()));
    }
}

ThreadPool::~ThreadPool() { stop(); }

void ThreadPool::stop() {
    {
        std::lock_guard lk(mu_);
        stop_ = true;
    }
    cv_work_.notify_all();
    for (auto& t : workers_) t.join();
}

void ThreadPool::start(int64_t n_tasks, size_t slot_bytes, const Compute& compute, bool ordered) {
    {
        std::lock_guard lk(mu_);
        if (ordered) {
            if (buf_.size() < ring_ * slot_bytes) buf_.resize(ring_ * slot_bytes);
            done_.assign(ring_, {-1, 0});
        }
        slot_bytes_ = slot_bytes;
        ordered_ = ordered;
        compute_ = &compute;
        n_tasks_ = n_tasks;
        next_ = consumed_ = 0;
        error_ = nullptr;
        busy_ = size();
        ++generation_;
    }
    cv_work_.notify_all();
}

void ThreadPool::finish() {
    std::unique_lock lk(mu_);
    cv_done_.wait(lk, [&] { return busy_ == 0; });
    compute_ = nullptr;
    if (error_) std::rethrow_exception(error_);
}

void ThreadPool::run_ordered(int64_t n_tasks, size_t slot_bytes, const Compute& compute, const Sink& sink) {
    start(n_tasks, slot_bytes, compute, true);
    for (int64_t t = 0; t < n_tasks; ++t) {
        std::unique_lock lk(mu_);
        auto& slot = done_[static_cast<size_t>(t) % ring_];
        cv_done_.wait(lk, [&] { return slot.first == t || error_; });
        if (error_) break;
        const size_t n = slot.second;
        lk.unlock();
        try {
            sink(t, {buf_.data() + (static_cast<size_t>(t) % ring_) * slot_bytes_, n});
        } catch (...) {
            fail(std::current_exception());
            break;
        }
        lk.lock();
        consumed_ = t + 1;
        lk.unlock();
        cv_space_.notify_all();
    }
    finish();
}

void ThreadPool::for_each(size_t n, const std::function<void(size_t)>& fn) {
    const Compute compute = [&](int64_t t, unsigned, uint8_t*) {
        fn(static_cast<size_t>(t));
        return size_t{0};
    };
    start(static_cast<int64_t>(n), 0, compute, false);
    finish();
}

void ThreadPool::fail(std::exception_ptr e) {
    {
        std::lock_guard lk(mu_);
        if (!error_) error_ = std::move(e);
    }
    cv_space_.notify_all();
    cv_done_.notify_all();
}

void ThreadPool::work(unsigned w) {
    uint64_t seen = 0;
    for (;;) {
        std::unique_lock lk(mu_);
        cv_work_.wait(lk, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        for (;;) {
            cv_space_.wait(lk, [&] {
                return error_ || next_ >= n_tasks_ || !ordered_ || next_ < consumed_ + static_cast<int64_t>(ring_);
            });
            if (error_ || next_ >= n_tasks_) break;
            const int64_t t = next_++;
            const size_t s = static_cast<size_t>(t) % ring_;
            uint8_t* out = ordered_ ? buf_.data() + s * slot_bytes_ : nullptr;
            lk.unlock();
            size_t n = 0;
            try {
                n = (*compute_)(t, w, out);
            } catch (...) {
                fail(std::current_exception());
            }
            lk.lock();
            if (ordered_) {
                done_[s] = {t, n};
                cv_done_.notify_all();
            }
        }
        if (--busy_ == 0) cv_done_.notify_all();
    }
}

void shared_for_each(size_t n, const std::function<void(size_t)>& fn) {
    static std::mutex busy;
    std::unique_lock lk(busy, std::try_to_lock);
    if (!lk.owns_lock() || n < 2) {
        for (size_t i = 0; i < n; ++i) fn(i);
        return;
    }
    static ThreadPool pool(thread_count(0, UINT64_MAX));
    pool.for_each(n, fn);
}

void parallel_for(size_t n, const std::vector<uint64_t>& weight, const std::function<void(size_t)>& fn,
                  unsigned threads) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return weight[a] > weight[b]; });
    ThreadPool pool(thread_count(threads, n));
    pool.for_each(n, [&](size_t k) { fn(order[k]); });
}

}  // namespace oiw
