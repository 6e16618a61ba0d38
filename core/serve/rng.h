// A seeded random stream whose numbers are the same on every platform
// (native and wasm): splitmix64 seeds xoshiro256**, and the samplers use
// only IEEE-exact operations (+ - * / sqrt) and a logarithm written here,
// never <random>'s distributions (their algorithms differ between standard
// libraries) nor libm's log/cos (last-bit differences between libms).
// docs/inference.md, "Workload".
#pragma once

#include <cstdint>

namespace sc::serve {

class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();          // xoshiro256**
  double uniform();         // in [0, 1), 53 random bits
  double exponential();     // mean 1: -log(1 - U)
  double normal();          // mean 0, sd 1: Marsaglia's polar method
 private:
  uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0;
};

// Natural logarithm of x > 0 from IEEE-exact operations only: x = m * 2^e
// with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh((m-1)/(m+1)) by its series.
double portable_log(double x);

}  // namespace sc::serve
