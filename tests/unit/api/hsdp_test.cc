// HSDP (PyTorch FSDP's HYBRID_SHARD; DeepSpeed ZeRO++ hpZ-style groups):
// ZeRO state sharded over a group of S data-parallel ranks (dp_shard, the
// inner part of dp x cp) and replicated across the dp*cp/S replicas
// (dp_replicate). Gradients: reduce-scatter over dp_shard, then the shard
// all-reduced over dp_replicate; parameters all-gathered over dp_shard.
// Expected groups by hand: with the Megatron order (tp, cp, dp) the
// data-parallel index x = cp + cp*dp of rank 0's peers sits at rank tp*x,
// so rank 0's dp_shard group is {tp*x : x < S} and its dp_replicate group
// {tp*S*y : y < dp*cp/S}.
#include <map>
#include <set>

#include "../test_jobs.h"
#include "check/replay.h"

using namespace sc;
using namespace sc::testing;

namespace {

using Ranks = std::vector<int64_t>;

struct Hsdp {
  int64_t tp = 2, cp = 1, dp = 4, S = 2, zero = 1;
};

// 2 layers of GPT (h 512, 8 heads, LayerNorm, biases, tied embedding,
// learned positions), 2 micro-batches per data-parallel rank.
Job hsdp_job(const Hsdp& x, int64_t shard_group) {
  Job j = gpt_job(2, 512, 8, x.tp, x.dp, x.tp > 1, 1, 256, 2 * x.dp);
  j.parallel.cp = x.cp;
  j.parallel.zero = x.zero;
  j.parallel.shard_group = shard_group;
  return j;
}

// Parameters on one rank (Megatron GPT, tp-split): per layer qkv 3h^2/t +
// 3h/t, proj h^2/t + h, 2 LayerNorms 4h, fc1 4h^2/t + 4h/t, fc2 4h^2/t + h;
// word embedding V h / t, positions s h, final LayerNorm 2h.
int64_t params_per_rank(const Hsdp& x) {
  const int64_t h = 512, L = 2, V = 51200, s = 256, t = x.tp;
  return L * (12 * h * h / t + 7 * h / t + 6 * h) + V * h / t + s * h + 2 * h;
}

Ranks shard_group0(const Hsdp& x) {
  Ranks r;
  for (int64_t i = 0; i < x.S; ++i) r.push_back(x.tp * i);
  return r;
}
Ranks replica_group0(const Hsdp& x) {
  Ranks r;
  for (int64_t i = 0; i < x.dp * x.cp / x.S; ++i) r.push_back(x.tp * x.S * i);
  return r;
}
Ranks data_group0(const Hsdp& x) {  // every data-parallel rank (dp x cp)
  Ranks r;
  for (int64_t i = 0; i < x.dp * x.cp; ++i) r.push_back(x.tp * i);
  return r;
}


// The bucket a node belongs to: "opt.dp_grad_bucket3.reduce_scatter(dp_shard)" -> "dp_grad_bucket3".
std::string bucket_of(const std::string& name) {
  const size_t at = name.find("dp_grad_bucket");
  if (at == std::string::npos) return "";
  const size_t end = name.find('.', at);
  return name.substr(at, end - at);
}

// Whether `to` (transitively) depends on `from` in one rank's trace.
bool depends(const RankTrace& t, uint64_t to, uint64_t from) {
  std::map<uint64_t, const TraceNode*> by_id;
  for (const auto& n : t.nodes) by_id[n.id] = &n;
  std::vector<uint64_t> stack{to};
  std::set<uint64_t> seen;
  while (!stack.empty()) {
    uint64_t id = stack.back();
    stack.pop_back();
    if (id == from) return true;
    if (!seen.insert(id).second) continue;
    for (uint64_t d : by_id.at(id)->deps) stack.push_back(d);
  }
  return false;
}

}  // namespace

TEST_CASE("hsdp: gradient buckets reduce-scatter over dp_shard, then all-reduce the shard over dp_replicate") {
  const Hsdp layouts[] = {
      {2, 1, 4, 2, 0},  // tp 2, dp 4: shard {0, 2}, replicas {0, 4}
      {1, 1, 8, 4, 0},  // shard {0..3}, replicas {0, 4}
      {1, 1, 8, 2, 0},  // shard {0, 1}, replicas {0, 2, 4, 6}
      {1, 2, 2, 2, 0},  // cp 2: gradients over dp x cp = 4 ranks, sharded over the 2 cp ranks
  };
  for (Hsdp x : layouts)
    for (int64_t zero = 1; zero <= 3; ++zero) {
      x.zero = zero;
      CAPTURE(x.tp);
      CAPTURE(x.cp);
      CAPTURE(x.dp);
      CAPTURE(x.S);
      CAPTURE(zero);
      auto g = make(hsdp_job(x, x.S));
      const RankTrace t = g.rank_trace(0).value();
      const auto& groups = g.groups();
      std::map<std::string, std::vector<const TraceNode*>> rs;  // per bucket, in issue order
      std::map<std::string, const TraceNode*> ar;
      int64_t rs_bytes = 0;
      int param_gathers = 0;
      int64_t param_gather_bytes = 0;
      for (const auto& n : t.nodes) {
        if (n.kind != TraceNodeKind::kCollective) continue;
        CAPTURE(n.name);
        const Ranks& members = groups.at(n.group);
        // Nothing is reduced or gathered over all data-parallel ranks at once.
        if (x.dp * x.cp > x.S) CHECK(members != data_group0(x));
        const std::string bucket = bucket_of(n.name);
        if (!bucket.empty() && n.coll == CollectiveType::kReduceScatter) {
          CHECK(members == shard_group0(x));
          rs[bucket].push_back(&n);
          rs_bytes += n.comm_size;
        } else if (!bucket.empty() && n.coll == CollectiveType::kAllReduce) {
          CHECK(members == replica_group0(x));
          CHECK(!ar.count(bucket));
          ar[bucket] = &n;
        } else if (n.coll == CollectiveType::kAllGather && has(n.name, "param")) {
          // Parameter gathers (stage 1/2 after the step, stage 3 per unit) over dp_shard.
          CHECK(members == shard_group0(x));
          ++param_gathers;
          param_gather_bytes += n.comm_size;
        }
      }
      REQUIRE(!rs.empty());
      CHECK(rs.size() == ar.size());
      // Stage 1 reduces each bucket once; stages 2-3 (sharded gradients)
      // after each of the 2 micro-batches, and all-reduce over the
      // replicas once, after the last (Megatron-FSDP's outer reduction).
      const size_t rounds = zero == 1 ? 1 : 2;
      for (const auto& [bucket, rounds_of] : rs) {
        CAPTURE(bucket);
        REQUIRE(rounds_of.size() == rounds);
        REQUIRE(ar.count(bucket));
        const TraceNode* r = rounds_of.back();
        CHECK(rounds_of.front()->comm_size == r->comm_size);
        if (rounds == 2) CHECK(has(rounds_of.front()->name, "mb0.bwd.dp_grad_bucket"));
        const TraceNode* a = ar.at(bucket);
        // Chakra: the reduce-scatter's comm_size is its full input; the
        // all-reduce moves the 1/S output, rounded up.
        CHECK(a->comm_size == (r->comm_size + x.S - 1) / x.S);
        CHECK(a->id > r->id);
        CHECK(depends(t, a->id, r->id));
      }
      // Every fp32 gradient goes through the buckets once per round.
      const int64_t psi = params_per_rank(x);
      CHECK(rs_bytes == static_cast<int64_t>(rounds) * 4 * psi);
      CHECK(param_gathers > 0);
      // Stages 1-2 gather the bf16 shard once; stage 3 gathers every unit
      // before forward and backward of each of the 2 micro-batches.
      const double once = 2.0 * double(psi) / double(x.S);
      if (zero < 3) CHECK(double(param_gather_bytes) == doctest::Approx(once).epsilon(0.001));
      else CHECK(double(param_gather_bytes) == doctest::Approx(4 * once).epsilon(0.001));
      check_runs_to_completion(g);
    }
}

TEST_CASE("hsdp: memory shards over the shard group: optimizer 12 psi / S, gradients 4 psi / S, weights 2 psi / S") {
  for (Hsdp x : {Hsdp{2, 1, 4, 2, 0}, Hsdp{1, 1, 8, 4, 0}, Hsdp{1, 2, 2, 2, 0}, Hsdp{2, 1, 4, 1, 0}})
    for (int64_t zero = 1; zero <= 3; ++zero) {
      x.zero = zero;
      CAPTURE(x.tp);
      CAPTURE(x.cp);
      CAPTURE(x.dp);
      CAPTURE(x.S);
      CAPTURE(zero);
      const int64_t psi = params_per_rank(x);
      REQUIRE(2 * psi % x.S == 0);
      auto s = summary(make(hsdp_job(x, x.S)));
      CHECK(s["parameters"]["per_rank"].get<int64_t>() == psi);
      CHECK(s["layout"]["shard_group"].get<int64_t>() == x.S);
      auto mem = s["stages"][0]["memory_bytes"];
      // DeepSpeed's (2 + 2 + K) psi model states with K = 12, fp32 gradients
      // here (4 bytes), each sharded once its ZeRO stage is reached.
      CHECK(mem["optimizer"].get<int64_t>() == 12 * psi / x.S);
      CHECK(mem["gradients"].get<int64_t>() == (zero >= 2 ? 4 * psi / x.S : 4 * psi));
      CHECK(mem["weights"].get<int64_t>() == (zero >= 3 ? 2 * psi / x.S : 2 * psi));
    }
}

TEST_CASE("hsdp: a shard group of 1 shards nothing: plain data-parallel all-reduces, no parameter gathers") {
  // Every rank keeps the whole state (memory as ZeRO 0), so every rank
  // already holds all updated parameters: nothing is to be gathered.
  for (int64_t zero = 1; zero <= 3; ++zero) {
    CAPTURE(zero);
    Hsdp x{2, 1, 4, 1, zero};
    auto g = make(hsdp_job(x, 1));
    const RankTrace t = g.rank_trace(0).value();
    int buckets = 0;
    for (const auto& n : t.nodes) {
      if (n.kind != TraceNodeKind::kCollective) continue;
      CAPTURE(n.name);
      const Ranks& m = g.groups().at(n.group);
      if (m == data_group0(x)) CHECK_MESSAGE(n.coll == CollectiveType::kAllReduce, "only gradient all-reduces over dp");
      if (bucket_of(n.name).empty()) continue;
      CHECK(n.coll == CollectiveType::kAllReduce);
      CHECK(m == data_group0(x));
      ++buckets;
    }
    CHECK(buckets > 0);
    const int64_t psi = params_per_rank(x);
    auto s = summary(g);
    CHECK(s["stages"][0]["memory_bytes"]["optimizer"].get<int64_t>() == 12 * psi);
    CHECK(s["communication"]["per_rank_bytes_by_axis"]["dp"].get<int64_t>() == 4 * psi);
    check_runs_to_completion(g);
  }
}

TEST_CASE("hsdp: shard_group equal to dp x cp gives the same traces as leaving it out") {
  for (Hsdp x : {Hsdp{2, 1, 4, 4, 0}, Hsdp{1, 2, 2, 4, 0}, Hsdp{1, 1, 8, 8, 0}})
    for (int64_t zero = 0; zero <= 3; ++zero) {
      x.zero = zero;
      CAPTURE(x.tp);
      CAPTURE(x.cp);
      CAPTURE(x.dp);
      CAPTURE(zero);
      auto plain = make(hsdp_job(x, 0));
      auto full = make(hsdp_job(x, x.dp * x.cp));
      REQUIRE(plain.world_size() == full.world_size());
      CHECK(plain.groups() == full.groups());
      for (int64_t r = 0; r < plain.world_size(); ++r)
        CHECK(plain.rank_trace_bytes(r).value() == full.rank_trace_bytes(r).value());
      CHECK(plain.summary_json() == full.summary_json());
    }
}

TEST_CASE("hsdp: with experts, dense state shards over dp_shard and expert state over expert-dp") {
  // Mixtral-like 2-layer model, dp 4, ep 2, etp 1: edp 2 = {0, 2};
  // shard group 2 = {0, 1}; replicas {0, 2}.
  auto job = parse_job(R"({
    "model": {"num_layers": 2, "hidden": 256, "num_heads": 4, "num_kv_heads": 2, "vocab": 1024,
              "ffn_hidden": 512, "norm": "rmsnorm", "mlp": "swiglu", "position": "rope",
              "tied_embeddings": false, "linear_bias": false, "dropout": false,
              "num_experts": 8, "experts_per_token": 2, "moe_ffn_hidden": 128},
    "parallel": {"dp": 4, "ep": 2, "expert_tp": 1, "zero": 1, "shard_group": 2},
    "training": {"seq_len": 128, "global_batch_size": 8}})");
  REQUIRE(job.ok());
  auto g = make(*job);
  const RankTrace t = g.rank_trace(0).value();
  int64_t dense_rs = 0, expert_rs = 0;
  for (const auto& n : t.nodes) {
    if (n.kind != TraceNodeKind::kCollective) continue;
    CAPTURE(n.name);
    const Ranks& m = g.groups().at(n.group);
    if (has(n.name, "expert_grad")) {
      CHECK(m == Ranks{0, 2});  // expert-dp; no replica all-reduce for the experts
      CHECK(n.coll != CollectiveType::kAllReduce);
      if (n.coll == CollectiveType::kReduceScatter) expert_rs += n.comm_size;
    } else if (!bucket_of(n.name).empty()) {
      if (n.coll == CollectiveType::kReduceScatter) {
        CHECK(m == Ranks{0, 1});
        dense_rs += n.comm_size;
      }
      if (n.coll == CollectiveType::kAllReduce) CHECK(m == Ranks{0, 2});
    }
  }
  // Per rank: dense = 2 layers x (attention h(a+2kv)d + a d h, 2 RMSNorms 2h,
  // router 8h) + embedding and untied output 2 V h + final norm h; experts =
  // 2 layers x 4 local experts x 3 h fe.
  const int64_t h = 256, V = 1024, fe = 128;
  const int64_t dense = 2 * (h * (4 + 4) * 64 + 4 * 64 * h + 2 * h + 8 * h) + 2 * V * h + h;
  const int64_t experts = 2 * 4 * 3 * h * fe;
  CHECK(dense_rs == 4 * dense);
  CHECK(expert_rs == 4 * experts);
  auto mem = summary(g)["stages"][0]["memory_bytes"];
  CHECK(mem["optimizer"].get<int64_t>() == 12 * dense / 2 + 12 * experts / 2);
  check_runs_to_completion(g);
}
