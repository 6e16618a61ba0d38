// Worker threads whose failures reach the caller.
//
// An exception that leaves a std::thread's function, or a joinable
// std::thread destroyed while the stack unwinds, ends the process in
// std::terminate ("terminate called without an active exception", exit
// 134): a std::bad_alloc under a memory limit then aborted `plan` where
// it should have printed "out of memory ..." (cli/main.cc). A Workers
// group catches what its threads throw, keeps the first, calls the
// group's stop function (so the other threads and the caller's loops end
// early) and rethrows it from join(). Its destructor stops and joins the
// threads still running, so unwinding on the spawning thread never meets
// a joinable thread. Header-only; no output depends on it.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

// The wasm module is built with -fno-exceptions: there a throw aborts
// anyway, and the group only joins.
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define SC_WORKERS_EXCEPTIONS 1
#else
#define SC_WORKERS_EXCEPTIONS 0
#endif

namespace sc {

class Workers {
 public:
  // stop: makes every thread of the group (and any loop of the caller
  // that waits for them) finish soon; called at most once, from the
  // first thread that fails or from the destructor while unwinding. It
  // must not throw.
  explicit Workers(std::function<void()> stop = nullptr) : stop_(std::move(stop)) {}
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  ~Workers() {
    if (threads_.empty()) return;
    request_stop();
    join_all();
  }

  // Starts fn on a new thread. If the thread cannot be created the
  // std::system_error propagates (the destructor joins the others).
  template <typename Fn>
  void spawn(Fn fn) {
    threads_.emplace_back([this, fn = std::move(fn)]() mutable {
#if SC_WORKERS_EXCEPTIONS
      try {
        fn();
      } catch (...) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (!first_) first_ = std::current_exception();
        }
        failed_.store(true, std::memory_order_release);
        request_stop();
      }
#else
      fn();  // built without exceptions (wasm): nothing can be thrown
#endif
    });
  }

  // Calls the stop function now (once), e.g. before a normal join().
  void stop() { request_stop(); }

  // True once a thread has thrown (its exception comes from join()).
  bool failed() const { return failed_.load(std::memory_order_acquire); }

  // Joins every thread, then rethrows the first exception one threw.
  void join() {
    join_all();
#if SC_WORKERS_EXCEPTIONS
    std::exception_ptr e;
    {
      std::lock_guard<std::mutex> lock(mu_);
      e = std::exchange(first_, nullptr);
    }
    if (e) std::rethrow_exception(e);
#endif
  }

 private:
  void request_stop() {
    if (stop_ && !stopped_.exchange(true)) stop_();
  }
  void join_all() {
    for (std::thread& t : threads_)
      if (t.joinable()) t.join();
    threads_.clear();
  }

  std::function<void()> stop_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
#if SC_WORKERS_EXCEPTIONS
  std::exception_ptr first_;
#endif
  std::atomic<bool> failed_{false};
  std::atomic<bool> stopped_{false};
};

}  // namespace sc
