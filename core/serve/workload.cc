#include "serve/workload.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "serve/rng.h"

namespace sc::serve {
namespace {

// Seeds of the two streams: arrivals and lengths are drawn apart, so a
// rate change moves the arrival times and not the lengths.
constexpr uint64_t kLengthStream = 0x6c656e6774687321ULL;

int64_t draw(const LengthDist& d, Rng& rng, int64_t cap) {
  double x = d.a;
  switch (d.kind) {
    case LengthDist::Kind::kUniform: x = d.a + std::floor(rng.uniform() * (d.b - d.a + 1)); break;
    case LengthDist::Kind::kNormal: x = std::floor(d.a + d.b * rng.normal() + 0.5); break;
    default: break;
  }
  return std::clamp<int64_t>(static_cast<int64_t>(std::min(x, 1e15)), 1, std::max<int64_t>(1, cap));
}

}  // namespace

Result<std::vector<Request>> make_requests(const ServingConfig& sv, int64_t max_context, double rate_scale) {
  const WorkloadConfig& w = sv.workload;
  std::vector<Request> out;
  if (w.arrival == WorkloadConfig::Arrival::kTrace) {
    for (const TraceRequest& t : w.trace) out.push_back({t.arrival_seconds, t.prompt_tokens, t.output_tokens});
    return out;
  }
  const std::vector<RequestClass> classes = serving_requests(sv);
  double total = 0;
  for (const RequestClass& c : classes) total += c.weight;
  Rng arr(w.seed), len(w.seed ^ kLengthStream);
  const double rate = w.rate * rate_scale;
  const int64_t cap = w.requests > 0 ? w.requests : kMaxWorkloadRequests + 1;
  double t = 0;
  for (int64_t i = 0; i < cap; ++i) {
    switch (w.arrival) {
      case WorkloadConfig::Arrival::kPoisson: t += arr.exponential() / rate; break;
      case WorkloadConfig::Arrival::kFixed: t = static_cast<double>(i) / rate; break;
      default: t = 0; break;  // burst: all at once
    }
    if (w.duration_seconds > 0 && t >= w.duration_seconds) break;
    if (i >= kMaxWorkloadRequests)
      return make_error(ErrorCode::kInvalidArgument,
                        "more than " + std::to_string(kMaxWorkloadRequests) +
                            " requests arrive in duration_seconds; shorten it or cap it with requests",
                        "serving.workload.duration_seconds");
    Request r;
    r.arrival = t;
    // The class first (one draw when there are several), then the lengths.
    const RequestClass* c = &classes[0];
    if (classes.size() > 1) {
      double u = len.uniform() * total, acc = 0;
      for (const RequestClass& k : classes) {
        c = &k;
        acc += k.weight;
        if (u < acc) break;
      }
    }
    r.prompt = w.prompt.kind == LengthDist::Kind::kDefault ? c->prompt_tokens : draw(w.prompt, len, max_context - 1);
    r.output = w.output.kind == LengthDist::Kind::kDefault ? c->output_tokens
                                                           : draw(w.output, len, max_context - r.prompt);
    out.push_back(r);
  }
  return out;
}

}  // namespace sc::serve
