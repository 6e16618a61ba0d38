// base/cancel.h: sort_cancellable sorts as std::sort does (checked against
// it on inputs that reach its own partition: random with many equal
// values, ascending, descending, all equal) and stops on a cancel; the
// simulation stops on a cancel (its checks are in core/sim/simulate.cc).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "api/api.h"
#include "api/simulate.h"
#include "base/cancel.h"
#include "job/job.h"

namespace sc {
namespace {

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

}  // namespace

TEST_CASE("sort_cancellable: the same sequence as std::sort") {
  clear_cancel();
  std::mt19937_64 rng(7);
  const size_t n = 300000;  // several ranges above its std::sort size (2^16)
  std::vector<std::vector<double>> inputs;
  {
    std::vector<double> v(n);
    for (double& x : v) x = static_cast<double>(rng() % 1000) * 0.001;  // many equal values, as the gaps are
    inputs.push_back(v);
  }
  {
    std::vector<double> v(n);
    std::uniform_real_distribution<double> u(0, 1);
    for (double& x : v) x = u(rng);
    inputs.push_back(v);
  }
  {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<double>(i);
    inputs.push_back(v);                          // ascending
    inputs.emplace_back(v.rbegin(), v.rend());    // descending
  }
  inputs.emplace_back(n, 0.25);                   // all equal
  inputs.push_back({3, 1, 2});                    // small: std::sort alone
  inputs.push_back({});
  for (const std::vector<double>& in : inputs) {
    std::vector<double> want = in, got = in;
    std::sort(want.begin(), want.end());
    REQUIRE(sort_cancellable(&got, "the test").ok());
    CHECK(same_bits(got, want));
  }
}

TEST_CASE("sort_cancellable: a cancel stops it with cancelled") {
  std::vector<double> v(300000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7919) % 1000);
  request_cancel();
  Status st = sort_cancellable(&v, "the test");
  clear_cancel();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kCancelled);
  CHECK(st.error().message == "cancelled during the test");
}

TEST_CASE("cancel: a requested cancel stops a simulation with cancelled") {
  clear_cancel();
  Result<Job> job = parse_job(R"({"model": {"preset": "gpt3-1.7b", "num_layers": 2}, "parallel": {"pp": 2, "dp": 2},
                                  "training": {"seq_len": 256, "global_batch_size": 8}})");
  REQUIRE(job.ok());
  Result<Generator> g = Generator::create(*job);
  REQUIRE(g.ok());
  SimulateOptions o;
  o.exhaustive = true;  // not the default simulation (Generator::create's, kept)
  request_cancel();
  Result<SimulateReport> r = simulate(*g, o);
  clear_cancel();
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kCancelled);
  CHECK(r.error().message == "cancelled during the simulation");
  CHECK(simulate(*g, o).ok());  // cleared: simulates again
}

}  // namespace sc
