// The one thread pool: ordered streaming, unordered for_each, errors, the thread-count rule and a
// clean failure when the system refuses a thread.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "libformat/error.h"
#include "libformat/parallel.h"

namespace oiw {
namespace {

TEST(ThreadPool, ThreadCountRule) {
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    EXPECT_EQ(thread_count(0, 1u << 30), hw);
    EXPECT_EQ(thread_count(10000, 1u << 30), hw);  // never more than the hardware
    EXPECT_EQ(thread_count(1, 1u << 30), 1u);
    EXPECT_EQ(thread_count(0, 1), 1u);  // never more than the work
    EXPECT_EQ(thread_count(0, 0), 1u);
    EXPECT_EQ(thread_count(2000, 1), 1u);
}

TEST(ThreadPool, OrderedRunStreamsInTaskOrder) {
    ThreadPool pool(3);
    for (int round = 0; round < 2; ++round) {  // the pool is reusable
        std::vector<int64_t> seen;
        pool.run_ordered(
            100, 8,
            [](int64_t t, unsigned worker, uint8_t* out) {
                EXPECT_LT(worker, 3u);
                std::memcpy(out, &t, 8);
                return size_t{t % 2 ? 8u : 4u};
            },
            [&](int64_t t, std::span<const uint8_t> out) {
                int64_t v = 0;
                std::memcpy(&v, out.data(), out.size());
                EXPECT_EQ(out.size(), t % 2 ? 8u : 4u);
                if (out.size() == 8) {
                    EXPECT_EQ(v, t);
                }
                seen.push_back(t);
            });
        ASSERT_EQ(seen.size(), 100u);
        for (int64_t t = 0; t < 100; ++t) EXPECT_EQ(seen[static_cast<size_t>(t)], t);
    }
}

TEST(ThreadPool, ErrorsAreRethrown) {
    ThreadPool pool(2);
    EXPECT_THROW(pool.run_ordered(
                     50, 1,
                     [](int64_t t, unsigned, uint8_t*) -> size_t {
                         if (t == 17) throw std::runtime_error("task");
                         return 0;
                     },
                     [](int64_t, std::span<const uint8_t>) {}),
                 std::runtime_error);
    EXPECT_THROW(pool.run_ordered(
                     50, 1, [](int64_t, unsigned, uint8_t*) { return size_t{0}; },
                     [](int64_t t, std::span<const uint8_t>) {
                         if (t == 3) throw std::logic_error("sink");
                     }),
                 std::logic_error);
    EXPECT_THROW(pool.for_each(50,
                               [](size_t i) {
                                   if (i == 9) throw std::runtime_error("each");
                               }),
                 std::runtime_error);
}

TEST(ThreadPool, ForEachAndParallelForVisitEveryIndexOnce) {
    std::vector<std::atomic<int>> hits(1000);
    ThreadPool pool(4);
    pool.for_each(hits.size(), [&](size_t i) { hits[i]++; });
    std::vector<uint64_t> weight(hits.size());
    for (size_t i = 0; i < weight.size(); ++i) weight[i] = i % 7;
    parallel_for(hits.size(), weight, [&](size_t i) { hits[i]++; });
    for (const auto& h : hits) EXPECT_EQ(h.load(), 2);
    pool.for_each(0, [](size_t) { FAIL(); });
}

// With RLIMIT_NPROC at 1 (as a non-root user) no thread can be created: a FormatError, no hang.
TEST(ThreadPool, ThreadCreationFailureIsAnError) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::alarm(20);  // a hang fails the test instead of blocking it
        if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
        const rlimit one{1, 1};
        if (::setrlimit(RLIMIT_NPROC, &one) != 0) ::_exit(4);
        try {
            ThreadPool pool(4);
        } catch (const FormatError& e) {
            ::_exit(std::strstr(e.what(), "cannot create worker thread 1 of 4") ? 0 : 5);
        }
        ::_exit(6);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace oiw
