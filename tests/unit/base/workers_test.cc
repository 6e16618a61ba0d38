// base/workers.h: a throw in a worker thread, or on the spawning thread
// while workers run, reaches the caller as that exception instead of
// std::terminate (which aborted `plan` under a memory limit: exit 134,
// "terminate called without an active exception"; tests/ctest/cli_limits.sh
// holds the CLI case).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <new>
#include <stdexcept>
#include <thread>

#include "base/workers.h"

namespace sc {
namespace {

TEST_CASE("workers: a worker's std::bad_alloc comes out of join and stops the others") {
  std::atomic<bool> stop{false};
  std::atomic<int> finished{0}, stops{0};
  bool caught = false;
  {
    Workers w([&] {
      stops.fetch_add(1);
      stop = true;
    });
    // Three threads that run until told to stop, one that throws.
    for (int k = 0; k < 3; ++k)
      w.spawn([&] {
        while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        finished.fetch_add(1);
      });
    w.spawn([] { throw std::bad_alloc(); });
    try {
      w.join();
    } catch (const std::bad_alloc&) {
      caught = true;
    }
    CHECK(w.failed());
  }
  CHECK(caught);
  CHECK(finished.load() == 3);  // the others saw the stop and ended
  CHECK(stops.load() == 1);     // called once
}

TEST_CASE("workers: the first of several exceptions is rethrown, once") {
  Workers w;
  std::atomic<bool> first_thrown{false};
  w.spawn([&] {
    first_thrown = true;
    throw std::runtime_error("first");
  });
  w.spawn([&] {
    while (!first_thrown.load()) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    throw std::runtime_error("second");
  });
  std::string what;
  try {
    w.join();
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  CHECK(what == "first");
  CHECK_NOTHROW(w.join());  // nothing left to rethrow
}

TEST_CASE("workers: unwinding the spawning thread stops and joins the workers") {
  std::atomic<bool> stop{false};
  std::atomic<int> finished{0};
  bool caught = false;
  try {
    Workers w([&] { stop = true; });
    for (int k = 0; k < 2; ++k)
      w.spawn([&] {
        while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        finished.fetch_add(1);
      });
    throw std::bad_alloc();  // as plan() did with the time-limit watch running
  } catch (const std::bad_alloc&) {
    caught = true;
  }
  CHECK(caught);
  CHECK(finished.load() == 2);
}

TEST_CASE("workers: without a throw, join returns after every worker and stop is not called") {
  std::atomic<int> sum{0};
  int stops = 0;
  Workers w([&] { ++stops; });
  for (int k = 1; k <= 4; ++k) w.spawn([&sum, k] { sum.fetch_add(k); });
  w.join();
  CHECK(sum.load() == 10);
  CHECK_FALSE(w.failed());
  CHECK(stops == 0);
}

}  // namespace
}  // namespace sc
