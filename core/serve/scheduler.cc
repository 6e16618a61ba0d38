#include "serve/scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <deque>

#include "base/cancel.h"
#include "serve/rng.h"

namespace sc::serve {
namespace {

using std::to_string;

// Linear in tokens between grid points (extrapolated past the last one).
double interp(const std::vector<int64_t>& x, const std::vector<double>& y, double v) {
  const size_t n = x.size();
  if (n == 1) return y[0];
  size_t i = 1;
  while (i + 1 < n && static_cast<double>(x[i]) < v) ++i;
  const double x0 = static_cast<double>(x[i - 1]), x1 = static_cast<double>(x[i]);
  return y[i - 1] + (y[i] - y[i - 1]) * (v - x0) / (x1 - x0);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Live {
  int64_t id = 0;            // index in the results
  int64_t computed = 0;      // tokens whose K/V are in the cache
  int64_t generated = 0;     // output tokens produced so far
  int64_t blocks = 0;        // cache pages held
  int64_t prefix = 0;        // tokens found in the prefix cache (whole pages, shared)
  double last_token = 0;     // time of the latest output token
  bool pending = false;      // tokens made since the last one streamed (a multi-step run)
};

struct Rank {
  std::deque<Live> waiting;
  std::vector<Live> running;
  int64_t free_blocks = 0;
  // This iteration: the running entries scheduled and their new tokens.
  struct Sched {
    size_t i;
    int64_t n, draft;
  };
  std::vector<Sched> sched;
  int64_t run_left = 0;  // steps left in the current multi-step decode run
  double ratio = kReserveInitRatio;  // Admission::kReserve: the share of running outputs held back
};

}  // namespace

double CostModel::seconds(const IterationShape& s) const {
  if (s.tokens <= 0) return 0;
  const double t = static_cast<double>(s.tokens);
  double base = interp(grid, prefill_base, t);
  if (s.sampled > 1) {  // the head's extra sampled rows, as in a decode of that many rows
    const double k = static_cast<double>(s.sampled);
    base += interp(grid, decode_base, k) - interp(grid, prefill_base, k);
  }
  const double attn = std::max(seconds_per_prefill_pair * s.prefill_pairs + seconds_per_decode_pair * s.decode_pairs,
                               seconds_per_cached * s.cached);
  const double gpu = s.prefill ? std::max(base + attn, eager_floor) : base + attn;
  return gpu + step_overhead + per_sampled_overhead * static_cast<double>(s.sampled);
}

namespace {
// The figures of v, sorted ascending.
Percentiles of_sorted(const std::vector<double>& v) {
  Percentiles p;
  if (v.empty()) return p;
  double sum = 0;
  for (double x : v) sum += x;
  p.mean = sum / static_cast<double>(v.size());
  auto at = [&](double q) {
    const double r = q * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(r));
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (r - static_cast<double>(lo));
  };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  return p;
}

// As percentiles(v), stopped by a cancel: v holds a gap per output token
// (2 * 10^8 at the largest workloads, seconds of sorting).
Result<Percentiles> percentiles_cancellable(std::vector<double> v) {
  SC_RETURN_IF_ERROR(sort_cancellable(&v, "the workload simulation"));
  return of_sorted(v);
}
}  // namespace

Percentiles percentiles(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return of_sorted(v);
}

Status check_requests(const std::vector<Request>& requests, const SchedulerParams& p) {
  for (const Request& r : requests) {
    // A request whose whole sequence cannot be cached on an idle rank can
    // never finish: an error, not an endless preemption loop.
    const int64_t pages = ceil_div(r.prompt + r.output, p.page_tokens) + p.state_blocks;
    if (pages > p.blocks_per_rank)
      return make_error(ErrorCode::kInvalidArgument,
                        "a request of " + to_string(r.prompt) + " + " + to_string(r.output) + " tokens needs " +
                            to_string(pages) + " KV pages but a rank holds " + to_string(p.blocks_per_rank),
                        "serving.workload");
  }
  const int64_t budget = p.token_budget;  // sarathi: the chunk size (set by the caller)
  if (p.whole_prompts())
    for (const Request& r : requests)
      if (r.prompt + r.output > budget)
        return make_error(ErrorCode::kInvalidArgument,
                          "without chunked prefill a whole sequence must fit the token budget (as vLLM V0 "
                          "requires max_num_batched_tokens >= max_model_len): a request of " +
                              to_string(r.prompt) + " + " + to_string(r.output) + " tokens against a budget of " +
                              to_string(budget),
                          "serving.scheduler.max_num_batched_tokens");
  return ok_status();
}

Result<WorkloadResult> simulate_workload(const std::vector<Request>& requests, const CostModel& cost,
                                         const SchedulerParams& p) {
  SC_RETURN_IF_ERROR(check_requests(requests, p));
  WorkloadResult out;
  out.requests.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    RequestResult& r = out.requests[i];
    r.arrival = requests[i].arrival;
    r.prompt = requests[i].prompt;
    r.output = requests[i].output;
  }
  const int64_t budget = p.token_budget;  // sarathi: the chunk size (set by the caller)
  const bool whole_prompts = p.whole_prompts();
  const int64_t ranks_total = p.dp * p.replicas;
  // Request i goes to rank i mod (dp x replicas) (round robin, as a load
  // balancer in front of the replicas and the engine's dp ranks do);
  // ranks that step together form a group, every other rank is its own.
  const int64_t group_size = p.lockstep ? p.dp : 1;
  const int64_t groups = ranks_total / group_size;
  Rng spec(p.seed ^ 0x7370656375617465ULL);  // acceptance draws, in the order steps are applied
  std::vector<double> itl;
  std::vector<std::pair<double, double>> kv_trace;  // (iteration end, utilization x dt), all groups
  std::vector<std::pair<double, double>> kv_spans;  // (start, end) with utilization, for buckets
  std::vector<double> kv_util;
  double kv_weighted = 0;
  // The requests by group, each group's in arrival order, the groups in
  // order; a group no request reaches runs no iteration and is skipped
  // (with a million replicas and fewer requests, most are).
  auto group_of = [&](size_t i) {
    return static_cast<int64_t>(i % static_cast<size_t>(ranks_total)) / group_size;
  };
  std::vector<size_t> by_group(requests.size());
  for (size_t i = 0; i < by_group.size(); ++i) by_group[i] = i;
  std::stable_sort(by_group.begin(), by_group.end(), [&](size_t a, size_t b) { return group_of(a) < group_of(b); });
  for (size_t first = 0; first < by_group.size();) {
    size_t last = first;
    while (last < by_group.size() && group_of(by_group[last]) == group_of(by_group[first])) ++last;
    std::vector<Rank> ranks(static_cast<size_t>(group_size));
    for (Rank& r : ranks) r.free_blocks = p.blocks_per_rank;
    const std::vector<size_t> mine(by_group.begin() + static_cast<std::ptrdiff_t>(first),
                                   by_group.begin() + static_cast<std::ptrdiff_t>(last));  // arrival order
    first = last;
    size_t next = 0;
    double t = 0;
    int64_t live = 0;
    while (next < mine.size() || live > 0) {
      while (next < mine.size() && requests[mine[next]].arrival <= t) {
        const size_t id = mine[next];
        Live l{static_cast<int64_t>(id)};
        if (p.prefix_hit_rate > 0)
          l.prefix = static_cast<int64_t>(std::floor(p.prefix_hit_rate * static_cast<double>(requests[id].prompt) /
                                                     static_cast<double>(p.page_tokens))) *
                     p.page_tokens;
        l.computed = l.prefix;
        ranks[static_cast<size_t>(static_cast<int64_t>(id % static_cast<size_t>(ranks_total)) % group_size)]
            .waiting.push_back(l);
        ++live;
        ++next;
      }
      if (live == 0) {
        t = requests[mine[next]].arrival;
        continue;
      }
      if ((out.iterations & 4095) == 0) SC_RETURN_IF_ERROR(check_cancelled("the workload simulation"));
      if (++out.iterations > p.max_iterations)
        return make_error(ErrorCode::kInvalidArgument,
                          "the simulation passed " + to_string(p.max_iterations) +
                              " iterations; fewer or shorter requests (duration_seconds, requests, output_tokens)",
                          "serving.workload");
      double dt = 0;
      std::vector<IterationShape> shapes(ranks.size());
      for (size_t k = 0; k < ranks.size(); ++k) {
        Rank& rk = ranks[k];
        rk.sched.clear();
        IterationShape& sh = shapes[k];
        int64_t left = budget;
        bool preempted = false;
        auto total_tokens = [&](const Live& l) {
          return out.requests[static_cast<size_t>(l.id)].prompt + l.generated;
        };
        auto decoding = [&](const Live& l) { return l.generated > 0 && total_tokens(l) - l.computed == 1; };
        const bool prefill_first = p.policy == SchedulerParams::Policy::kPrefillFirst;
        const bool reserve = p.admission == SchedulerParams::Admission::kReserve;
        const bool guaranteed = p.admission == SchedulerParams::Admission::kGuaranteed;
        // The pages l needs before n more of its tokens are cached: its KV
        // pages past the shared prefix and its state pages, less those it
        // holds; under guaranteed admission those of its whole sequence,
        // taken when it is admitted (none afterwards).
        auto need_for = [&](const Live& l, int64_t n) {
          int64_t upto = l.computed + n;
          if (guaranteed) {
            const RequestResult& rr = out.requests[static_cast<size_t>(l.id)];
            upto = std::max(upto, rr.prompt + rr.output);
          }
          return std::max<int64_t>(
              0, ceil_div(upto, p.page_tokens) + p.state_blocks - l.prefix / p.page_tokens - l.blocks);
        };
        // Admission::kReserve: the free cache's tokens less what the running
        // requests' outputs are expected to take (SGLang's rem_total_tokens),
        // less what this iteration schedules and admits.
        double rem = 0;
        if (reserve) {
          rem = static_cast<double>(rk.free_blocks) * static_cast<double>(p.page_tokens);
          for (const Live& l : rk.running)
            rem -= static_cast<double>(std::min(out.requests[static_cast<size_t>(l.id)].output - l.generated,
                                                kReserveClip)) *
                   rk.ratio;
        }
        // Admission of a waiting request h (SGLang: its prompt left and its
        // clipped output must fit what is left; on an idle rank the request
        // runs, as the page check at the start guarantees it fits).
        auto reserve_ok = [&](const Live& h) {
          return !reserve || (rk.running.empty() && rk.sched.empty()) ||
                 static_cast<double>(total_tokens(h) - h.computed +
                                     std::min(out.requests[static_cast<size_t>(h.id)].output, kReserveClip)) < rem;
        };
        // What an admission takes from it: the tokens scheduled, and the
        // clipped output unless the prompt is only chunked this iteration.
        auto reserve_take = [&](const Live& h, int64_t n) {
          if (!reserve) return;
          rem -= static_cast<double>(n);
          if (n >= total_tokens(h) - h.computed)
            rem -= static_cast<double>(std::min(out.requests[static_cast<size_t>(h.id)].output, kReserveClip));
        };
        if (rk.run_left > 0) {
          // Inside a multi-step run: every request of the run that is still
          // generating takes one more decode step (its pages were reserved
          // when the run began); no admission.
          for (size_t i = 0; i < rk.running.size(); ++i) {
            const Live& l = rk.running[i];
            if (l.generated < out.requests[static_cast<size_t>(l.id)].output) rk.sched.push_back({i, 1, 0});
          }
          --rk.run_left;
        }
        const bool in_run = !rk.sched.empty();
        // Prefill first: running requests still in their prompt (chunked),
        // then waiting ones, as a batch of its own; decodes only when no
        // prompt can run.
        if (prefill_first && rk.sched.empty()) {
          for (size_t i = 0; i < rk.running.size() && left > 0; ++i) {
            Live& l = rk.running[i];
            if (decoding(l)) continue;
            const int64_t n = std::min(total_tokens(l) - l.computed, left);
            const int64_t need = need_for(l, n);
            if (need > rk.free_blocks) break;
            l.blocks += need;
            rk.free_blocks -= need;
            rk.sched.push_back({i, n, 0});
            left -= n;
            if (reserve) rem -= static_cast<double>(n);
          }
        }
        const bool prefill_batch = prefill_first && (!rk.sched.empty() || (!rk.waiting.empty() && [&] {
                                     const Live& h = rk.waiting.front();
                                     const int64_t n = std::min(total_tokens(h) - h.computed, left);
                                     if (whole_prompts && n < total_tokens(h) - h.computed) return false;
                                     return static_cast<int64_t>(rk.running.size()) < p.max_num_seqs &&
                                            reserve_ok(h) && need_for(h, n) <= rk.free_blocks;
                                   }()));
        // Admission::kReserve, a step that decodes: short of pages for its
        // decodes, it retracts running requests (SGLang's retract_decode:
        // fewest outputs first, then the longest prompt; to the end of the
        // queue, recomputed later) until the free cache holds kRetractSteps
        // tokens for each one left, and resets the ratio from those left;
        // otherwise the ratio decays.
        if (reserve && !in_run && !prefill_batch && !rk.running.empty()) {
          int64_t need = 0;
          for (const Live& l : rk.running)
            if (decoding(l)) need += need_for(l, 1);
          if (need > rk.free_blocks) {
            std::vector<size_t> order(rk.running.size());
            for (size_t i = 0; i < order.size(); ++i) order[i] = i;
            std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
              const Live &x = rk.running[a], &y = rk.running[b];
              if (x.generated != y.generated) return x.generated > y.generated;
              return out.requests[static_cast<size_t>(x.id)].prompt < out.requests[static_cast<size_t>(y.id)].prompt;
            });
            std::vector<char> gone(rk.running.size(), 0);
            while (order.size() > 1 && rk.free_blocks * p.page_tokens < static_cast<int64_t>(order.size()) * kRetractSteps) {
              Live& v = rk.running[order.back()];
              gone[order.back()] = 1;
              order.pop_back();
              rk.free_blocks += v.blocks;
              v.blocks = 0;
              v.computed = v.prefix;
              out.requests[static_cast<size_t>(v.id)].preemptions++;
              out.preemptions++;
              rk.waiting.push_back(v);
            }
            std::vector<Live> keep;
            double gen = 0, outs = 0;
            for (size_t i = 0; i < rk.running.size(); ++i)
              if (!gone[i]) {
                keep.push_back(rk.running[i]);
                gen += static_cast<double>(rk.running[i].generated);
                outs += static_cast<double>(out.requests[static_cast<size_t>(rk.running[i].id)].output);
              }
            rk.running.swap(keep);
            rk.ratio = std::min(1.0, (gen + static_cast<double>(kRetractSteps) * static_cast<double>(rk.running.size())) / outs);
            preempted = true;
          } else {
            rk.ratio = std::max(rk.ratio - kReserveDecay, kReserveMinRatio);
          }
        }
        // Running requests first, in order; a request that cannot get its
        // pages preempts the most recently admitted one (recompute).
        for (size_t i = 0; !in_run && !prefill_batch && i < rk.running.size() && left > 0;) {
          Live& l = rk.running[i];
          int64_t n = std::min(total_tokens(l) - l.computed, left), draft = 0;
          if (p.speculative_tokens > 0 && l.generated > 0 && total_tokens(l) - l.computed == 1) {
            const int64_t out_left = out.requests[static_cast<size_t>(l.id)].output - l.generated - 1;
            draft = std::max<int64_t>(0, std::min({p.speculative_tokens, out_left, left - 1}));
            n = 1 + draft;
          }
          const int64_t need = need_for(l, n);
          bool ok = true;
          while (need > rk.free_blocks) {
            Live victim = rk.running.back();
            rk.running.pop_back();
            rk.free_blocks += victim.blocks;
            victim.blocks = 0;
            victim.computed = victim.prefix;  // the shared prefix stays cached
            out.requests[static_cast<size_t>(victim.id)].preemptions++;
            out.preemptions++;
            rk.waiting.push_front(victim);
            preempted = true;
            if (rk.running.size() == i) {  // it was this one
              ok = false;
              break;
            }
          }
          if (!ok) break;
          Live& m = rk.running[i];
          m.blocks += need;
          rk.free_blocks -= need;
          rk.sched.push_back({i, n, draft});
          left -= n;
          if (reserve) rem -= static_cast<double>(n);  // SGLang's mixed_with_decode_tokens
          ++i;
        }
        // Then waiting requests, first come first served, while the budget,
        // the running cap and the cache allow (not after a preemption; with
        // prefill first, only into a prefill batch).
        while (!preempted && !in_run && (!prefill_first || prefill_batch) && !rk.waiting.empty() && left > 0 &&
               static_cast<int64_t>(rk.running.size()) < p.max_num_seqs) {
          Live l = rk.waiting.front();
          const int64_t n = std::min(total_tokens(l) - l.computed, left);
          if (whole_prompts && n < total_tokens(l) - l.computed) break;  // the whole prompt or wait
          if (!reserve_ok(l)) break;
          const int64_t need = need_for(l, n);
          if (need > rk.free_blocks) break;
          reserve_take(l, n);
          rk.waiting.pop_front();
          l.blocks += need;
          rk.free_blocks -= need;
          RequestResult& rr = out.requests[static_cast<size_t>(l.id)];
          if (rr.scheduled < 0) rr.scheduled = t;
          rk.running.push_back(l);
          rk.sched.push_back({rk.running.size() - 1, n, 0});
          left -= n;
        }
        // Multi-step: a decode-only batch starts a run of up to
        // scheduler_steps steps when the cache holds the run's pages now
        // (reserved as vLLM's lookahead slots); otherwise one step.
        if (p.scheduler_steps > 1 && !in_run && !preempted && !rk.sched.empty() &&
            std::all_of(rk.sched.begin(), rk.sched.end(), [&](const Rank::Sched& e) {
              return e.n == 1 && e.draft == 0 && decoding(rk.running[e.i]);
            })) {
          int64_t steps = 1, extra = 0;
          for (const Rank::Sched& e : rk.sched) {
            const Live& l = rk.running[e.i];
            const int64_t s =
                std::min(p.scheduler_steps, out.requests[static_cast<size_t>(l.id)].output - l.generated);
            steps = std::max(steps, s);
          }
          for (const Rank::Sched& e : rk.sched) {
            const Live& l = rk.running[e.i];
            const int64_t s =
                std::min(steps, out.requests[static_cast<size_t>(l.id)].output - l.generated);
            extra += need_for(l, s);
          }
          if (steps > 1 && extra <= rk.free_blocks) {
            for (const Rank::Sched& e : rk.sched) {
              Live& l = rk.running[e.i];
              const int64_t s =
                  std::min(steps, out.requests[static_cast<size_t>(l.id)].output - l.generated);
              const int64_t x = need_for(l, s);
              l.blocks += x;
              rk.free_blocks -= x;
            }
            rk.run_left = steps - 1;
          }
        }
        for (const Rank::Sched& e : rk.sched) {
          const Live& l = rk.running[e.i];
          const double c = static_cast<double>(l.computed), nn = static_cast<double>(e.n);
          sh.tokens += e.n;
          const double pr = nn * c + nn * (nn + 1) / 2;  // over the cached prefix and causally within
          const bool decode = l.generated > 0 && l.computed + 1 == total_tokens(l);
          if (decode) {
            sh.decode_pairs += pr;
          } else {
            sh.prefill_pairs += pr;
            sh.prefill = true;
          }
          sh.cached += c + nn;
          if (decode) sh.sampled += e.n;  // every verified position is sampled
          else if (l.computed + e.n >= total_tokens(l)) sh.sampled++;
        }
        const double used = static_cast<double>(p.blocks_per_rank - rk.free_blocks);
        kv_util.push_back(p.blocks_per_rank > 0 ? used / static_cast<double>(p.blocks_per_rank) : 0);
      }
      for (const IterationShape& sh : shapes) dt = std::max(dt, cost.seconds(sh));
      if (dt <= 0) {
        // Nothing could be scheduled on any rank (every waiting head blocked):
        // impossible with the page check above; guard against a loop anyway.
        return make_error(ErrorCode::kInternal, "the scheduler made no progress", "serving.workload");
      }
      const double t0 = t;
      t += dt;
      double u = 0;
      for (double x : kv_util) u += x;
      u /= static_cast<double>(kv_util.size());
      kv_util.clear();
      kv_spans.push_back({t0, t});
      kv_trace.push_back({t, u});
      kv_weighted += u * dt;
      out.kv_utilization_max = std::max(out.kv_utilization_max, u);
      for (Rank& rk : ranks) {
        std::vector<Live> keep;
        keep.reserve(rk.running.size());
        std::vector<char> done(rk.running.size(), 0);
        for (const Rank::Sched& e : rk.sched) {
          const size_t i = e.i;
          Live& l = rk.running[i];
          const int64_t total = out.requests[static_cast<size_t>(l.id)].prompt + l.generated;
          int64_t accepted = 0;
          if (e.draft > 0) {  // draft tokens accepted until the first rejection
            while (accepted < e.draft && spec.uniform() < p.acceptance_rate) ++accepted;
            l.computed += 1 + accepted;  // the rejected drafts' entries are dropped
          } else {
            l.computed += e.n;
          }
          if (l.computed < total) continue;  // a prefill chunk: no token yet
          RequestResult& rr = out.requests[static_cast<size_t>(l.id)];
          l.generated += 1 + accepted;
          out.output_tokens += 1 + accepted;
          if (rr.first_token < 0) {
            rr.first_token = t + p.request_overhead;
            l.last_token = t;
          } else {
            l.pending = true;
          }
        }
        // Stream what was made, except inside a multi-step run (its tokens
        // go out together when it ends); finished requests leave then.
        if (rk.run_left == 0)
          for (size_t i = 0; i < rk.running.size(); ++i) {
            Live& l = rk.running[i];
            RequestResult& rr = out.requests[static_cast<size_t>(l.id)];
            if (l.pending) {
              itl.push_back(t - l.last_token);
              l.last_token = t;
              l.pending = false;
            }
            if (l.generated >= rr.output) {
              rr.finish = t + p.request_overhead;
              rk.free_blocks += l.blocks;
              done[i] = 1;
              --live;
            }
          }
        for (size_t i = 0; i < rk.running.size(); ++i)
          if (!done[i]) keep.push_back(rk.running[i]);
        rk.running.swap(keep);
      }
    }
    out.makespan = std::max(out.makespan, t + p.request_overhead);
  }
  std::vector<double> ttft, tpot, e2e, queue;
  int64_t good = 0;
  for (const RequestResult& r : out.requests) {
    ttft.push_back(r.ttft());
    e2e.push_back(r.e2e());
    queue.push_back(r.queue());
    if (r.output > 1) tpot.push_back(r.tpot());
    if ((p.slo_ttft <= 0 || r.ttft() <= p.slo_ttft) && (p.slo_tpot <= 0 || r.tpot() <= p.slo_tpot)) ++good;
  }
  SC_ASSIGN_OR_RETURN(out.ttft, percentiles_cancellable(std::move(ttft)));
  SC_ASSIGN_OR_RETURN(out.tpot, percentiles_cancellable(std::move(tpot)));
  SC_ASSIGN_OR_RETURN(out.itl, percentiles_cancellable(std::move(itl)));
  SC_ASSIGN_OR_RETURN(out.e2e, percentiles_cancellable(std::move(e2e)));
  SC_ASSIGN_OR_RETURN(out.queue, percentiles_cancellable(std::move(queue)));
  if (out.makespan > 0) {
    const double n = static_cast<double>(out.requests.size());
    out.request_throughput = n / out.makespan;
    out.output_tokens_per_second = static_cast<double>(out.output_tokens) / out.makespan;
    out.goodput = static_cast<double>(good) / out.makespan;
    // Time-weighted utilization over [0, makespan] (idle gaps count as 0),
    // with several groups: their mean, weighting each iteration by its span.
    out.kv_utilization_mean = kv_weighted / (out.makespan * static_cast<double>(groups));
    const int buckets = 100;
    const double w = out.makespan / buckets;
    std::vector<double> acc(buckets, 0);
    for (size_t i = 0; i < kv_spans.size(); ++i) {
      const auto [a, b] = kv_spans[i];
      const double u = kv_trace[i].second;
      for (int k = std::max(0, static_cast<int>(a / w)); k < buckets && k * w < b; ++k) {
        const double lo = std::max(a, k * w), hi = std::min(b, (k + 1) * w);
        if (hi > lo) acc[static_cast<size_t>(k)] += u * (hi - lo);
      }
    }
    for (int k = 0; k < buckets; ++k)
      out.kv_utilization.push_back({k * w, acc[static_cast<size_t>(k)] / (w * static_cast<double>(groups))});
  }
  return out;
}

}  // namespace sc::serve
