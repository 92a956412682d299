// A device's kernel threads. The queue thread runs each launch with them: workers take chunks of
// the grid, and the queue thread takes chunks too, then waits until every worker that joined
// has left, so a launch is done when Run returns.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels.h"

namespace devexit_cpu {

class Pool {
 public:
  explicit Pool(unsigned workers) {
    for (unsigned i = 0; i < workers; i++) threads_.emplace_back([this] { Work(); });
  }

  void Run(const KernelEntry *k, uint64_t grid, const devexit_cpu_arg_v1 *args, uint32_t nargs) {
    const uint64_t min_chunk = 4096;
    if (threads_.empty() || grid <= min_chunk) {
      k->fn(0, grid, args, nargs);
      return;
    }
    const uint64_t parts = (threads_.size() + 1) * 4;
    job_.fn = k->fn;
    job_.args = args;
    job_.nargs = nargs;
    job_.grid = grid;
    job_.chunk = std::max(min_chunk, (grid + parts - 1) / parts);
    job_.next.store(0);
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
      gen_++;
    }
    cv_.notify_all();
    Chunks();
    std::unique_lock<std::mutex> lock(mu_);
    open_ = false;
    done_cv_.wait(lock, [this] { return busy_ == 0; });
  }

  // Joins the workers; only between launches (the queue thread calls it from OnStop).
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto &t : threads_) t.join();
    threads_.clear();
  }

 private:
  struct Job {
    devexit_cpu_kernel_fn_v1 fn = nullptr;
    const devexit_cpu_arg_v1 *args = nullptr;
    uint32_t nargs = 0;
    uint64_t grid = 0, chunk = 1;
    std::atomic<uint64_t> next{0};
  };

  void Chunks() {
    for (;;) {
      uint64_t begin = job_.next.fetch_add(job_.chunk);
      if (begin >= job_.grid) return;
      job_.fn(begin, std::min(job_.grid, begin + job_.chunk), job_.args, job_.nargs);
    }
  }

  void Work() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || (open_ && gen_ != seen); });
      if (stop_) return;
      seen = gen_;
      busy_++;
      lock.unlock();
      Chunks();
      lock.lock();
      if (--busy_ == 0) done_cv_.notify_all();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  bool open_ = false, stop_ = false;
  uint64_t gen_ = 0;
  int busy_ = 0;
  Job job_;
};

}  // namespace devexit_cpu
