// A small thread pool for splitting one kernel's independent outputs across
// threads. No allocation per call: the work item is a pointer to the
// caller's callable, and the calling thread takes part.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace rml::exec {

class ThreadPool {
 public:
  /// `threads` in all, the caller included: threads - 1 workers are started.
  explicit ThreadPool(int threads) : size_(std::max(threads, 1)) {
    for (int i = 1; i < size_; ++i) workers_.emplace_back([this, i] { work(i); });
  }
  ~ThreadPool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      ++generation_;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return size_; }

  /// Calls fn(begin, end, thread) over [0, count) in chunks of at least
  /// `grain` items. Thread t runs chunks t, t + size(), ... first, so kernels
  /// that split their work alike (images, tiles) find their share of what the
  /// one before wrote in this core's cache; a thread done with its own then
  /// takes any left (which thread computes which chunk varies; kernels only
  /// split independent outputs, so results never depend on it).
  template <class Fn>
  void parallel_for(std::int64_t count, std::int64_t grain, Fn&& fn) {
    if (count <= 0) return;
    const std::int64_t chunks =
        std::clamp<std::int64_t>(count / std::max<std::int64_t>(grain, 1), 1, std::min<std::int64_t>(4 * size_, kMaxChunks));
    if (size_ == 1 || chunks == 1) {
      fn(std::int64_t{0}, count, 0);
      return;
    }
    Job job;
    job.count = count;
    job.chunks = chunks;
    job.context = &fn;
    job.call = [](void* context, std::int64_t begin, std::int64_t end, int thread) {
      (*static_cast<std::remove_reference_t<Fn>*>(context))(begin, end, thread);
    };
    run(job);
  }

 private:
  static constexpr std::int64_t kMaxChunks = 256;

  struct Job {
    std::int64_t count = 0, chunks = 0;
    void* context = nullptr;
    void (*call)(void*, std::int64_t, std::int64_t, int) = nullptr;
    std::atomic<std::uint64_t> claimed[kMaxChunks / 64] = {};  // a bit per chunk taken
    std::atomic<std::int64_t> done{0};
    std::exception_ptr error;
    std::mutex error_mutex;

    bool claim(std::int64_t c) {
      const std::uint64_t bit = std::uint64_t{1} << (c % 64);
      std::atomic<std::uint64_t>& word = claimed[c / 64];
      return !(word.load(std::memory_order_relaxed) & bit) && !(word.fetch_or(bit) & bit);
    }
  };

  /// This thread's own chunks first, then (from the last down, away from
  /// where their owners are) any still untaken.
  void take_chunks(Job& job, int thread) const {
    for (std::int64_t c = thread; c < job.chunks; c += size_)
      if (job.claim(c)) run_chunk(job, c, thread);
    for (std::int64_t c = job.chunks; c-- > 0;)
      if (job.claim(c)) run_chunk(job, c, thread);
  }

  static void run_chunk(Job& job, std::int64_t c, int thread) {
    const std::int64_t begin = job.count * c / job.chunks, end = job.count * (c + 1) / job.chunks;
    try {
      job.call(job.context, begin, end, thread);
    } catch (...) {
      std::lock_guard lock(job.error_mutex);
      if (!job.error) job.error = std::current_exception();
    }
    job.done.fetch_add(1, std::memory_order_acq_rel);
  }

  void run(Job& job) {
    {
      std::lock_guard lock(mutex_);
      job_ = &job;
      ++generation_;
    }
    wake_.notify_all();
    take_chunks(job, 0);
    auto finished = [&] { return job.done.load() == job.chunks && active_.load() == 0; };
    spin_until(finished);
    std::unique_lock lock(mutex_);
    finished_.wait(lock, finished);
    job_ = nullptr;
    if (job.error) std::rethrow_exception(job.error);
  }

  void work(int thread) {
    std::uint64_t seen = 0;
    while (true) {
      // Kernels run back to back, so new work usually arrives within
      // microseconds: spin briefly before sleeping, because waking a
      // sleeping thread costs tens of microseconds on a VM.
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      seen = generation_.load();
      if (stopping_) return;
      Job* job = job_;
      if (!job) continue;
      ++active_;
      lock.unlock();
      take_chunks(*job, thread);
      lock.lock();
      --active_;
      finished_.notify_all();
    }
  }

  /// Spins until `ready()` or spin_time has passed; returns ready(). The
  /// condition is checked after every pause (a pause is tens of cycles:
  /// checking every 64 of them had a worker start a kernel ~0.7 us late).
  template <class Ready>
  static bool spin_until(Ready ready) {
    const auto deadline = std::chrono::steady_clock::now() + spin_time;
    for (unsigned i = 1;; ++i) {
      if (ready()) return true;
      relax();
      if (i % 64 == 0 && std::chrono::steady_clock::now() >= deadline) return ready();
    }
  }

  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  static constexpr std::chrono::microseconds spin_time{200};

  int size_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::atomic<std::uint64_t> generation_{0};
  Job* job_ = nullptr;
  std::atomic<int> active_{0};
  bool stopping_ = false;
};

}  // namespace rml::exec
