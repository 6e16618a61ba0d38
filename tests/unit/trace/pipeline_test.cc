// Pipeline parallelism: schedules, stage roles, send/recv, run to
// completion, bubbles and in-flight activations against the papers.
#include <map>
#include <set>

#include "../test_jobs.h"
#include "check/replay.h"
#include "trace/schedule.h"

using namespace sc;
using namespace sc::testing;

namespace {

Job pp_job(int64_t L, int64_t pp, int64_t v, Schedule sch, int64_t m, int64_t tp = 1, int64_t dp = 1) {
  Job j = gpt_job(L, 1024, 16, tp, dp, tp > 1, 1, 512, m * dp);
  j.parallel.pp = pp;
  j.parallel.virtual_stages = v;
  j.training.schedule = sch;
  return j;
}


}  // namespace

TEST_CASE("schedule: every forward precedes its backward, each exactly once") {
  for (Schedule s : {Schedule::kGPipe, Schedule::kOneFOneB, Schedule::kInterleaved, Schedule::kZeroBubble}) {
    const int64_t pp = 4, v = s == Schedule::kInterleaved ? 2 : 1, m = 8;
    for (int64_t stage = 0; stage < pp; ++stage) {
      std::map<std::tuple<int, int, int64_t>, int> seen;
      for (const Step& st : pipeline_schedule(s, pp, v, stage, m)) {
        if (st.kind != StepKind::kForward) CHECK(seen.count({int(StepKind::kForward), st.chunk, st.mb}));
        if (st.kind == StepKind::kWeight) CHECK(seen.count({int(StepKind::kBackward), st.chunk, st.mb}));
        CHECK(++seen[{int(st.kind), st.chunk, st.mb}] == 1);
      }
      size_t kinds = s == Schedule::kZeroBubble ? 3 : 2;
      CHECK(seen.size() == kinds * size_t(m * v));
    }
  }
}

TEST_CASE("schedule: 1F1B keeps pp - stage micro-batches in flight, GPipe all of them") {
  const int64_t pp = 4, m = 8;
  for (int64_t stage = 0; stage < pp; ++stage) {
    for (Schedule s : {Schedule::kOneFOneB, Schedule::kGPipe}) {
      int64_t alive = 0, peak = 0;
      for (const Step& st : pipeline_schedule(s, pp, 1, stage, m)) {
        alive += st.kind == StepKind::kForward ? 1 : -1;
        peak = std::max(peak, alive);
      }
      CHECK(peak == (s == Schedule::kGPipe ? m : pp - stage));
    }
  }
}

TEST_CASE("pipeline: every schedule runs to completion on every rank") {
  check_runs_to_completion(make(pp_job(4, 2, 1, Schedule::kOneFOneB, 4, 2, 2)));
  check_runs_to_completion(make(pp_job(4, 4, 1, Schedule::kGPipe, 4)));
  check_runs_to_completion(make(pp_job(8, 2, 2, Schedule::kInterleaved, 4, 2)));
  check_runs_to_completion(make(pp_job(4, 4, 1, Schedule::kZeroBubble, 8, 1, 2)));
  Job uneven = pp_job(5, 2, 1, Schedule::kOneFOneB, 4);
  uneven.parallel.pipeline_layout = {3, 2};
  auto g = make(uneven);
  check_runs_to_completion(g);
  auto s = summary(g);
  CHECK(s["stages"][0]["layers"].get<int64_t>() == 3);
  CHECK(s["stages"][1]["layers"].get<int64_t>() == 2);
  // Llama 3's layout: the first virtual stage holds the embedding alone,
  // the last the output layer and loss alone (one layer per other chunk).
  Job llama = pp_job(6, 2, 4, Schedule::kInterleaved, 4);
  llama.parallel.pipeline_layout = {0, 1, 1, 1, 1, 1, 1, 0};
  auto gl = make(llama);
  check_runs_to_completion(gl);
  auto sl = summary(gl);
  // Virtual stage k holds layer k - 1 (k = 1 … 6): rank 0 runs virtual
  // stages 0, 2, 4, 6 (the embedding, layers 1, 3, 5), rank 1 runs 1, 3,
  // 5, 7 (layers 0, 2, 4, the head).
  auto layers_of = [&](int st) {
    std::set<std::string> out;
    for (auto& [k, v] : sl["stages"][st]["activation_bytes_by_layer"].items()) out.insert(k);
    return out;
  };
  CHECK(layers_of(0) == std::set<std::string>{"1", "3", "5"});
  CHECK(layers_of(1) == std::set<std::string>{"0", "2", "4"});
  // An empty stage inside the pipeline is refused, naming the entry.
  Job hole = llama;
  hole.parallel.pipeline_layout = {1, 1, 0, 1, 1, 1, 1, 0};
  auto bad = Generator::create(hole);
  REQUIRE(!bad.ok());
  CHECK(bad.error().path == "parallel.pipeline_layout");
  CHECK(bad.error().message.find("entry 2 is 0") != std::string::npos);
  // Without a layout every virtual stage needs a layer.
  Job few = pp_job(6, 2, 4, Schedule::kInterleaved, 4);
  CHECK(Generator::create(few).error().path == "parallel.pp");
}

TEST_CASE("pipeline: one b*s*h activation per micro-batch, boundary and direction, matched pairs") {
  const int64_t m = 4;
  auto g = make(pp_job(4, 4, 1, Schedule::kOneFOneB, m));
  const int64_t bsh = 1 * 512 * 1024 * 2;
  std::map<std::tuple<int64_t, int64_t, int32_t, int64_t>, int> balance;  // (src, dst, tag, size)
  for (int64_t r = 0; r < g.world_size(); ++r) {
    int sends = 0;
    const RankTrace trace_r = g.rank_trace(r).value();
    for (const auto& n : trace_r.nodes) {
      if (n.kind == TraceNodeKind::kSend) {
        CHECK(n.comm_size == bsh);
        ++sends;
        balance[{r, n.peer, n.tag, n.comm_size}]++;
      } else if (n.kind == TraceNodeKind::kRecv) {
        balance[{n.peer, r, n.tag, n.comm_size}]--;
      }
    }
    // Inner stages send forward and backward once per micro-batch.
    CHECK(sends == (r == 0 || r == 3 ? 1 : 2) * m);
  }
  for (const auto& [k, v] : balance) CHECK(v == 0);
}

TEST_CASE("pipeline: tied embeddings are summed over the first and last stage") {
  auto g = make(pp_job(4, 2, 1, Schedule::kOneFOneB, 2, 1, 2));
  // Groups: dp pairs, pp pairs, then the embedding groups (first, last stage).
  int embd = 0;
  for (int64_t r = 0; r < g.world_size(); ++r) {
    const RankTrace trace_r = g.rank_trace(r).value();
    for (const auto& n : trace_r.nodes)
      if (n.name.find("all_reduce(embd)") != std::string::npos) {
        ++embd;
        const auto& members = g.groups().at(n.group);
        CHECK(members.size() == 2);
        CHECK(n.comm_size == 51200 * 1024 * 4);  // fp32 main grad of [V, h]
      }
  }
  CHECK(embd == 4);
  auto s = summary(g);
  // The copy on the last stage is not a second set of parameters.
  CHECK(s["parameters"]["total"].get<int64_t>() == s["stages"][0]["parameters_per_rank"].get<int64_t>() +
                                                        s["stages"][1]["parameters_per_rank"].get<int64_t>() -
                                                        51200 * 1024);
}

TEST_CASE("pipeline: measured bubble matches (p-1)/m and (p-1)/(v m) on uniform stages") {
  // A tiny vocabulary and no dropout keep the first and last stage as busy
  // as the others, the papers' assumption.
  auto uniform = [](int64_t L, int64_t pp, int64_t v, Schedule s, int64_t m) {
    Job j = pp_job(L, pp, v, s, m);
    j.model.hidden = 4096;
    j.model.num_heads = 32;
    j.model.head_dim = 128;
    j.model.ffn_hidden = 16384;
    j.model.vocab = 128;
    j.model.dropout = false;
    return j;
  };
  for (Schedule s : {Schedule::kOneFOneB, Schedule::kGPipe}) {
    auto sum = summary(make(uniform(8, 4, 1, s, 8)));
    CHECK(sum["pipeline"]["bubble_fraction"].get<double>() == doctest::Approx(3.0 / 8).epsilon(0.05));
  }
  auto inter = summary(make(uniform(16, 4, 2, Schedule::kInterleaved, 8)));
  CHECK(inter["pipeline"]["bubble_fraction"].get<double>() == doctest::Approx(3.0 / 16).epsilon(0.08));
  // ZB-H1 (Qi et al. 2024): with B and W split and W deferred on later
  // stages, the bubble is (p-1)(T_F + T_B - T_W) / (m (T_F + T_B + T_W)),
  // a third of 1F1B's when the three are equal. T_F, T_B, T_W: one
  // micro-batch's compute on a middle stage, read from its trace (W = the
  // weight- and bias-gradient nodes).
  Job zj = uniform(8, 4, 1, Schedule::kZeroBubble, 8);
  auto zg = make(zj);
  const RankTrace mid = zg.rank_trace(1).value();
  double tf = 0, tb = 0, tw = 0;
  for (const auto& n : mid.nodes) {
    if (n.kind != TraceNodeKind::kCompute) continue;
    const bool w = n.name.find("wgrad") != std::string::npos || n.name.find("bias_grad") != std::string::npos;
    if (n.name.rfind("mb0.fwd.", 0) == 0) tf += n.duration_micros;
    if (n.name.rfind("mb0.bwd.", 0) == 0) (w ? tw : tb) += n.duration_micros;
  }
  REQUIRE(tw > 0);
  const double zb_formula = 3.0 * (tf + tb - tw) / (8.0 * (tf + tb + tw));
  auto zb = summary(zg);
  CHECK(zb["pipeline"]["bubble_fraction"].get<double>() == doctest::Approx(zb_formula).epsilon(0.1));
  CHECK(zb["pipeline"]["bubble_fraction"].get<double>() < 3.0 / 8 * 0.6);
  // ...at 1F1B's peak memory: no stage holds more activations than the
  // first stage holds under 1F1B (p micro-batches).
  auto ob = summary(make(uniform(8, 4, 1, Schedule::kOneFOneB, 8)));
  const int64_t one_f_one_b_peak = ob["stages"][0]["memory_bytes"]["activations_peak"].get<int64_t>();
  for (const auto& st : zb["stages"]) CHECK(st["memory_bytes"]["activations_peak"].get<int64_t>() <= one_f_one_b_peak);
}

TEST_CASE("pipeline: interleaving keeps (1 + (p-1)/(p v)) of the model's layers in flight on stage 0") {
  const int64_t p = 4, v = 2;
  Job j = pp_job(16, p, v, Schedule::kInterleaved, 8);
  j.model.dropout = false;
  j.model.position = PositionKind::kRope;  // no embedding-side activations
  auto s = summary(make(j));
  auto st0 = s["stages"][0];
  const double per_layer = st0["activation_bytes_by_layer"]["0"].get<double>();
  const double layers_in_flight = st0["memory_bytes"]["activations_peak"].get<double>() / per_layer;
  CHECK(layers_in_flight == doctest::Approx(16.0 * (1 + double(p - 1) / (p * v))));
}

TEST_CASE("pipeline_warmup: the warm-up forwards before a stage's steady phase, by hand") {
  // 1F1B and zero-bubble: pp - stage - 1.
  CHECK(pipeline_warmup(Schedule::kOneFOneB, 4, 1, 0, 8) == 3);
  CHECK(pipeline_warmup(Schedule::kOneFOneB, 4, 1, 3, 8) == 0);
  CHECK(pipeline_warmup(Schedule::kZeroBubble, 4, 1, 1, 8) == 2);
  // Interleaved: (pp - stage - 1) * 2 + (v - 1) * pp; pp 4, v 2: stage 0
  // 3 * 2 + 4 = 10, stage 3 0 + 4 = 4.
  CHECK(pipeline_warmup(Schedule::kInterleaved, 4, 2, 0, 8) == 10);
  CHECK(pipeline_warmup(Schedule::kInterleaved, 4, 2, 3, 8) == 4);
  // At most the stage's m * v forward steps: 2 micro-batches of 2 chunks.
  CHECK(pipeline_warmup(Schedule::kInterleaved, 4, 2, 0, 2) == 4);
  // The schedule's list agrees: stage 0's steady phase starts at step 10
  // with a forward, so its first backward is step 11.
  const auto steps = pipeline_schedule(Schedule::kInterleaved, 4, 2, 0, 8);
  size_t first_backward = 0;
  while (first_backward < steps.size() && steps[first_backward].kind != StepKind::kBackward) ++first_backward;
  CHECK(first_backward == 11);
  // The steady phase: steps [10, 10 + 2 (16 - 10)) = [10, 22), forward /
  // backward pairs; the 10 steps after it are the cool-down backwards.
  const StepRange steady = pipeline_steady_steps(Schedule::kInterleaved, 4, 2, 0, 8);
  CHECK(steady.begin == 10);
  CHECK(steady.end == 22);
  REQUIRE(steps.size() == 32);
  for (size_t i = steady.begin; i < steady.end; ++i)
    CHECK(steps[i].kind == ((i - steady.begin) % 2 == 0 ? StepKind::kForward : StepKind::kBackward));
  for (size_t i = steady.end; i < steps.size(); ++i) CHECK(steps[i].kind == StepKind::kBackward);
  CHECK(steady.contains(10));
  CHECK_FALSE(steady.contains(22));
}
