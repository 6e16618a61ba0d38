// Mixture of experts through the Generator: Megatron-LM's all-to-all token
// dispatcher (per MoE layer: permute, all-to-all over ep, all-gather over
// expert tp, experts, reduce-scatter over expert tp, all-to-all back), the
// expert weights' gradients over expert-dp, ZeRO over expert-dp, parameter
// and FLOP counts against closed forms written out here, the job errors,
// and a sweep of mixes that must replay, validate and be deterministic.
//
// Rank layout used for expected groups (Megatron default order tp, cp, dp,
// pp; expert order tp-ep-dp-pp): on pipeline stage 0 a rank's stage-local
// index is the rank itself, so rank 0's groups are
//   etp: {0, 1, ..., etp-1}   ep: {0, etp, 2 etp, ...}   edp: {0, etp ep, ...}.
#include <array>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <tuple>

#include "../test_jobs.h"
#include "check/replay.h"
#include "check/validate.h"
#include "emit/chakra_writer.h"

using namespace sc;
using namespace sc::testing;

namespace {

using Ranks = std::vector<int64_t>;

// A small Mixtral-style model (RMSNorm, SwiGLU, RoPE, untied, no bias, no
// dropout) and its parallel layout.
struct Spec {
  int64_t L = 2, h = 256, a = 4, kv = 2, d = 64, f = 512, V = 1024;
  int64_t E = 8, k = 2, fe = 128, shared = 0, first_dense = 0;
  double cf = 1.0;
  bool router_bias = false;
  bool mla = false;  // q_lora 64, kv_lora 32, rope 16, v_head 32 (head_dim = d)
  int64_t tp = 1, cp = 1, dp = 1, pp = 1, v = 1, ep = 1, etp = 0, zero = 0, shard = 0;
  bool sp = false;
  std::vector<std::string> order = {"tp", "cp", "dp", "pp"};
  int64_t s = 128, b = 1, m = 1;  // m: micro-batches per data-parallel rank
  Schedule schedule = Schedule::kOneFOneB;
  Recompute recompute = Recompute::kNone;

  static constexpr int64_t qr = 64, kvr = 32, dr = 16, dv = 32;
  int64_t etp_deg() const { return etp > 0 ? etp : tp; }
  int64_t edp() const { return tp * cp * dp / (etp_deg() * ep); }
  int64_t shard_deg() const { return shard > 0 ? shard : dp * cp; }
};

Job moe_job(const Spec& x) {
  Job j;
  auto& m = j.model;
  m.name = "test-moe";
  m.num_layers = x.L;
  m.hidden = x.h;
  m.num_heads = x.a;
  m.num_kv_heads = x.mla ? x.a : x.kv;
  m.head_dim = x.d;
  m.ffn_hidden = x.f;
  m.vocab = x.V;
  m.max_positions = x.s;
  m.norm = NormKind::kRMSNorm;
  m.mlp = MlpKind::kSwiGLU;
  m.position = PositionKind::kRope;
  m.tied_embeddings = false;
  m.linear_bias = false;
  m.dropout = false;
  m.num_experts = x.E;
  m.experts_per_token = x.k;
  m.moe_ffn_hidden = x.fe;
  m.shared_experts = x.shared;
  m.first_dense_layers = x.first_dense;
  m.capacity_factor = x.cf;
  m.router_bias = x.router_bias;
  if (x.mla) {
    m.q_lora_rank = Spec::qr;
    m.kv_lora_rank = Spec::kvr;
    m.qk_rope_head_dim = Spec::dr;
    m.v_head_dim = Spec::dv;
  }
  auto& p = j.parallel;
  p.tp = x.tp;
  p.cp = x.cp;
  p.dp = x.dp;
  p.pp = x.pp;
  p.virtual_stages = x.v;
  p.ep = x.ep;
  p.expert_tp = x.etp;
  p.zero = x.zero;
  p.shard_group = x.shard;
  p.sequence_parallel = x.sp;
  p.order = x.order;
  auto& t = j.training;
  t.seq_len = x.s;
  t.micro_batch_size = x.b;
  t.global_batch_size = x.b * x.dp * x.m;
  t.schedule = x.schedule;
  t.recompute = x.recompute;
  j.hardware = hardware_preset("h100").value();
  return j;
}

// ---- closed forms (written from the architecture, not from the code) ----

// Attention weights of one layer: {replicated over tp, split over tp}.
std::pair<int64_t, int64_t> attention_params(const Spec& x) {
  if (!x.mla) return {0, x.h * x.a * x.d + 2 * x.h * x.kv * x.d + x.a * x.d * x.h};  // q, k, v, o
  // DeepSeek MLA: down projections and latent norms replicated; the
  // per-head up projections and the output split over heads.
  const int64_t rep = x.h * Spec::qr + Spec::qr + x.h * Spec::kvr + x.h * Spec::dr + Spec::kvr;
  const int64_t split = Spec::qr * x.a * (x.d + Spec::dr) + Spec::kvr * x.a * (x.d + Spec::dv) + x.a * Spec::dv * x.h;
  return {rep, split};
}

int64_t swiglu(int64_t h, int64_t width) { return 3 * h * width; }  // gate, up, down

bool moe_layer(const Spec& x, int64_t l) { return l >= x.first_dense; }

struct Params {
  int64_t total = 0, active = 0;
  int64_t dense_local = 0, expert_local = 0;  // one rank of pipeline stage 0 (pp = 1: the whole model)
};

Params params(const Spec& x) {
  Params p;
  auto [att_rep, att_split] = attention_params(x);
  const int64_t norms = 2 * x.h;  // RMSNorm ln1 + ln2
  const int64_t expert = swiglu(x.h, x.fe);
  const int64_t router = x.h * x.E + (x.router_bias ? x.E : 0);
  for (int64_t l = 0; l < x.L; ++l) {
    p.total += att_rep + att_split + norms;
    p.dense_local += att_rep + att_split / x.tp + norms;
    if (moe_layer(x, l)) {
      p.total += router + x.E * expert + x.shared * expert;
      p.active += router + x.k * expert + x.shared * expert + att_rep + att_split + norms;
      p.dense_local += router + x.shared * expert / x.tp;
      p.expert_local += x.E / x.ep * expert / x.etp_deg();
    } else {
      p.total += swiglu(x.h, x.f);
      p.active += swiglu(x.h, x.f) + att_rep + att_split + norms;
      p.dense_local += swiglu(x.h, x.f) / x.tp;
    }
  }
  const int64_t outer = 2 * x.V * x.h + x.h;  // embedding, untied output, final norm
  p.total += outer;
  p.active += outer;
  p.dense_local += 2 * x.V * x.h / x.tp + x.h;
  return p;
}

// Local tokens T of one rank and the expert capacity ceil(cf T k / E),
// with cf given as a fraction num/den.
int64_t local_tokens(const Spec& x) { return x.b * x.s / (x.cp * (x.sp ? x.tp : 1)); }
int64_t capacity(const Spec& x, int64_t num = 1, int64_t den = 1) {
  const int64_t units = num * local_tokens(x) * x.k;
  return (units + den * x.E - 1) / (den * x.E);
}

// Model FLOPs of one iteration: per token, forward, 2 per multiply-add,
// times 3 for forward + backward (2x), times the tokens of the iteration.
unsigned __int128 model_flops(const Spec& x) {
  using u = unsigned __int128;
  u per_token = 0;
  for (int64_t l = 0; l < x.L; ++l) {
    if (!x.mla) {
      per_token += 2 * u(x.h * (x.a + 2 * x.kv) * x.d + x.a * x.d * x.h);  // qkv, proj
      per_token += 2 * u(x.a * x.s * x.d) * 2;                             // scores + values (full s x s)
    } else {
      const int64_t dq = x.d + Spec::dr;
      per_token += 2 * u(x.h * Spec::qr + Spec::qr * x.a * dq + x.h * Spec::kvr + x.h * Spec::dr +
                         Spec::kvr * x.a * (x.d + Spec::dv) + x.a * Spec::dv * x.h);
      per_token += 2 * u(x.a * x.s * dq) + 2 * u(x.a * x.s * Spec::dv);
    }
    if (moe_layer(x, l)) {
      per_token += 2 * u(x.h * x.E);                       // router
      per_token += u(x.k) * 2 * u(swiglu(x.h, x.fe));      // k routed experts
      per_token += u(x.shared) * 2 * u(swiglu(x.h, x.fe));  // shared experts
    } else {
      per_token += 2 * u(swiglu(x.h, x.f));
    }
  }
  per_token += 2 * u(x.h * x.V);  // output layer
  const u tokens = u(x.b * x.dp * x.m) * u(x.s);
  return 3 * per_token * tokens;
}

Ranks ep_group0(const Spec& x) {
  Ranks r;
  for (int64_t e = 0; e < x.ep; ++e) r.push_back(e * x.etp_deg());
  return r;
}
Ranks etp_group0(const Spec& x) {
  Ranks r;
  for (int64_t t = 0; t < x.etp_deg(); ++t) r.push_back(t);
  return r;
}
Ranks edp_group0(const Spec& x) {
  Ranks r;
  for (int64_t e = 0; e < x.edp(); ++e) r.push_back(e * x.etp_deg() * x.ep);
  return r;
}
Ranks dp_group0(const Spec& x) {  // order tp, cp, dp: dp stride tp*cp
  Ranks r;
  for (int64_t e = 0; e < x.dp; ++e) r.push_back(e * x.tp * x.cp);
  return r;
}

const Ranks& members(const Generator& g, const TraceNode& n) { return g.groups().at(n.group); }


Error parse_error(const std::string& text) {
  auto r = parse_job(text);
  REQUIRE_MESSAGE(!r.ok(), text);
  return r.error();
}

}  // namespace

TEST_CASE("moe: per MoE layer and micro-batch, 2 all-to-alls over ep each way, expert-tp gathers around the experts") {
  struct Case {
    int64_t tp, dp, ep, etp, pp, L, first_dense, m;
  };
  const Case cases[] = {
      {2, 4, 4, 0, 1, 2, 0, 1},  // etp = tp = 2, edp 1
      {2, 4, 2, 1, 1, 2, 0, 2},  // etp 1, edp 4
      {1, 4, 2, 2, 1, 2, 0, 2},  // expert tp without tp
      {2, 2, 1, 0, 1, 2, 0, 1},  // ep 1: no all-to-all, etp still gathers
      {1, 4, 1, 1, 1, 2, 0, 1},  // ep 1, etp 1: no expert communication in the layers
      {2, 2, 2, 1, 2, 4, 1, 3},  // pp 2: rank 0 holds layers 0 (dense) and 1 (MoE)
      {1, 2, 2, 1, 1, 3, 2, 1},  // two dense layers first
  };
  for (const Case& c : cases) {
    Spec x;
    x.tp = c.tp, x.sp = c.tp > 1, x.dp = c.dp, x.ep = c.ep, x.etp = c.etp, x.pp = c.pp, x.L = c.L;
    x.first_dense = c.first_dense, x.m = c.m;
    CAPTURE(c.tp);
    CAPTURE(c.dp);
    CAPTURE(c.ep);
    CAPTURE(x.etp_deg());
    CAPTURE(c.pp);
    auto g = make(moe_job(x));
    const RankTrace t = g.rank_trace(0).value();
    const std::regex where(R"(^mb(\d+)\.(fwd|bwd)\.L(\d+)\.)");
    // (micro-batch, phase, layer) -> counts
    std::map<std::tuple<int, std::string, int>, std::array<int, 3>> seen;  // a2a, ag(etp), rs(etp)
    int a2a_total = 0, etp_total = 0;
    for (const auto& n : t.nodes) {
      if (n.kind != TraceNodeKind::kCollective) continue;
      const bool a2a = n.coll == CollectiveType::kAllToAll;
      const bool etp = has(n.name, "(etp)");
      if (!a2a && !etp) continue;
      CAPTURE(n.name);
      std::smatch mt;
      REQUIRE(std::regex_search(n.name, mt, where));
      auto& cnt = seen[{std::stoi(mt[1]), mt[2], std::stoi(mt[3])}];
      if (a2a) {
        CHECK(members(g, n) == ep_group0(x));
        cnt[0]++, a2a_total++;
      } else {
        CHECK(members(g, n) == etp_group0(x));
        CHECK((n.coll == CollectiveType::kAllGather || n.coll == CollectiveType::kReduceScatter));
        cnt[n.coll == CollectiveType::kAllGather ? 1 : 2]++, etp_total++;
      }
    }
    const int64_t layers_here = c.L / c.pp;  // stage 0: layers 0 .. L/pp - 1
    int moe_layers = 0;
    for (int mb = 0; mb < c.m; ++mb)
      for (const char* ph : {"fwd", "bwd"})
        for (int l = 0; l < layers_here; ++l) {
          CAPTURE(mb);
          CAPTURE(ph);
          CAPTURE(l);
          const bool moe = l >= c.first_dense;
          moe_layers += moe;
          std::array<int, 3> want{moe && c.ep > 1 ? 2 : 0, moe && x.etp_deg() > 1 ? 1 : 0,
                                  moe && x.etp_deg() > 1 ? 1 : 0};
          std::array<int, 3> got{0, 0, 0};
          if (auto it = seen.find({mb, ph, l}); it != seen.end()) got = it->second;
          CHECK(got == want);
        }
    // Nothing outside the expected (micro-batch, phase, layer) slots.
    CHECK(a2a_total == (c.ep > 1 ? 2 * moe_layers : 0));
    CHECK(etp_total == (x.etp_deg() > 1 ? 2 * moe_layers : 0));
  }
}

TEST_CASE("moe: full recomputation re-runs the layer's dispatch and combine in backward; selective does not") {
  // Megatron's full recompute checkpoints the whole transformer layer, the
  // token dispatcher included; selective recomputes the attention core only.
  for (Recompute rc : {Recompute::kFull, Recompute::kSelective}) {
    Spec x;
    x.tp = 2, x.sp = true, x.dp = 2, x.ep = 2, x.etp = 2, x.m = 2, x.recompute = rc;
    CAPTURE(int(rc));
    auto g = make(moe_job(x));
    const RankTrace t0 = g.rank_trace(0).value();
    std::map<std::string, int> fwd, bwd;  // "a2a" / "ag" / "rs" -> count
    for (const auto& n : t0.nodes) {
      if (n.kind != TraceNodeKind::kCollective) continue;
      const char* kind = n.coll == CollectiveType::kAllToAll ? "a2a"
                         : !has(n.name, "(etp)")               ? nullptr
                         : n.coll == CollectiveType::kAllGather ? "ag"
                                                                : "rs";
      if (!kind) continue;
      CAPTURE(n.name);
      CHECK(members(g, n) == (std::string(kind) == "a2a" ? ep_group0(x) : etp_group0(x)));
      (has(n.name, ".fwd.") ? fwd : bwd)[kind]++;
    }
    const int per = int(x.L * x.m);  // MoE layers x micro-batches
    const int again = rc == Recompute::kFull ? 1 : 0;
    CHECK(fwd["a2a"] == 2 * per);
    CHECK(fwd["ag"] == per);
    CHECK(fwd["rs"] == per);
    CHECK(bwd["a2a"] == (2 + 2 * again) * per);
    CHECK(bwd["ag"] == (1 + again) * per);
    CHECK(bwd["rs"] == (1 + again) * per);
    check_runs_to_completion(g);
  }
}

TEST_CASE("moe: the all-to-all moves E x capacity x h elements; capacity_factor pads and rounds up") {
  struct Case {
    int64_t s, tp, cp, dp, ep, etp;
    int64_t cf_num, cf_den;
    int64_t want_cap;  // ceil(cf T k / E), by hand
  };
  // E 8, k 2, h 256, b 1. T = s / (cp * tp) with sequence parallelism.
  const Case cases[] = {
      {256, 2, 1, 4, 4, 0, 1, 1, 32},  // T 128: 128*2/8 = 32
      {240, 2, 1, 2, 2, 1, 1, 1, 30},  // T 120: 30
      {240, 2, 1, 2, 2, 1, 5, 4, 38},  // 1.25 * 30 = 37.5 -> 38
      {240, 2, 1, 2, 2, 2, 5, 4, 38},  // the same with expert tp 2
      {240, 1, 2, 2, 4, 1, 1, 1, 30},  // cp 2, tp 1: T = 240 / 2
      {240, 1, 2, 2, 2, 1, 5, 4, 38},
      {200, 1, 1, 2, 2, 1, 5, 4, 63},  // T 200: 1.25 * 50 = 62.5 -> 63
  };
  for (const Case& c : cases) {
    Spec x;
    x.s = c.s, x.tp = c.tp, x.sp = c.tp > 1, x.cp = c.cp, x.dp = c.dp, x.ep = c.ep, x.etp = c.etp;
    x.cf = double(c.cf_num) / double(c.cf_den);
    CAPTURE(c.s);
    CAPTURE(c.cp);
    CAPTURE(x.cf);
    REQUIRE(capacity(x, c.cf_num, c.cf_den) == c.want_cap);
    auto g = make(moe_job(x));
    const int64_t buffer = x.E * c.want_cap * x.h * 2;  // bf16 bytes of [E, cap, h]
    int a2a = 0, ag = 0, rs = 0;
    const RankTrace t0 = g.rank_trace(0).value();  // kept: value() of a temporary would dangle
    for (const auto& n : t0.nodes) {
      if (n.kind != TraceNodeKind::kCollective) continue;
      if (n.coll == CollectiveType::kAllToAll) {
        CHECK(n.comm_size == buffer);
        a2a++;
      } else if (has(n.name, "(etp)")) {
        // Chakra: all-gather comm_size is the per-rank input, reduce-scatter the full input.
        if (n.coll == CollectiveType::kAllGather) {
          CHECK(n.comm_size == buffer);
          ag++;
        }
        if (n.coll == CollectiveType::kReduceScatter) {
          CHECK(n.comm_size == buffer * x.etp_deg());
          rs++;
        }
      }
    }
    CHECK(a2a == 4 * x.L);
    CHECK(ag == (x.etp_deg() > 1 ? 2 * x.L : 0));
    CHECK(rs == ag);
    auto sm = summary(g);
    CHECK(sm["communication"]["per_rank_bytes_by_axis"]["ep"].get<int64_t>() == 4 * x.L * buffer);
  }
}

TEST_CASE("moe: expert gradients are reduced over expert-dp only, dense ones over dp") {
  struct Case {
    int64_t tp, dp, ep, etp;
  };
  const Case cases[] = {
      {1, 4, 2, 1},  // edp 2 = {0, 2}; dp = {0, 1, 2, 3}
      {2, 2, 1, 1},  // edp 4 = {0, 1, 2, 3}; dp = {0, 2}
      {2, 4, 2, 1},  // edp 4 = {0, 2, 4, 6} (the dp ranks, but its own group)
      {2, 4, 4, 0},  // edp 1: no expert gradient collective at all
      {1, 4, 4, 1},  // edp 1
  };
  for (const Case& c : cases) {
    Spec x;
    x.tp = c.tp, x.sp = c.tp > 1, x.dp = c.dp, x.ep = c.ep, x.etp = c.etp, x.m = 2;
    CAPTURE(c.tp);
    CAPTURE(c.dp);
    CAPTURE(c.ep);
    auto g = make(moe_job(x));
    const Params p = params(x);
    int64_t expert_bytes = 0, dense_bytes = 0, expert_colls = 0;
    const RankTrace t0 = g.rank_trace(0).value();  // kept: value() of a temporary would dangle
    for (const auto& n : t0.nodes) {
      if (n.kind != TraceNodeKind::kCollective) continue;
      CAPTURE(n.name);
      if (has(n.name, "expert_grad")) {
        CHECK(n.coll == CollectiveType::kAllReduce);
        CHECK(members(g, n) == edp_group0(x));
        expert_bytes += n.comm_size;
        expert_colls++;
      } else if (has(n.name, "dp_grad_bucket")) {
        CHECK(n.coll == CollectiveType::kAllReduce);
        CHECK(members(g, n) == dp_group0(x));
        dense_bytes += n.comm_size;
      }
    }
    // fp32 gradients (grad_reduce_dtype), once per iteration.
    CHECK(dense_bytes == 4 * p.dense_local);
    if (x.edp() > 1) {
      CHECK(expert_bytes == 4 * p.expert_local);
    } else {
      CHECK(expert_colls == 0);
      CHECK(g.groups().size() > 0);
      for (const auto& n : t0.nodes) CHECK_FALSE(has(n.name, "(edp)"));
    }
    auto sm = summary(g);
    CHECK(sm["parameters"]["per_rank"].get<int64_t>() == p.dense_local + p.expert_local);
    CHECK(sm["layout"]["expert_dp"].get<int64_t>() == x.edp());
  }
}

TEST_CASE("moe: total and active parameters against the closed form") {
  SUBCASE("small custom models") {
    for (int variant = 0; variant < 4; ++variant) {
      Spec x;
      x.L = 3;
      if (variant >= 1) x.first_dense = 1, x.shared = 1;
      if (variant >= 2) x.router_bias = true, x.E = 16, x.k = 4;
      if (variant == 3) x.mla = true, x.d = 32;
      CAPTURE(variant);
      const Params p = params(x);
      auto sm = summary(make(moe_job(x)));
      CHECK(sm["parameters"]["total"].get<int64_t>() == p.total);
      CHECK(sm["parameters"]["active"].get<int64_t>() == p.active);
      CHECK(p.total == closed_form_parameters(moe_job(x).model));
      CHECK(p.active == closed_form_active_parameters(moe_job(x).model));
    }
  }
  SUBCASE("the count does not depend on the parallel layout") {
    Spec x;
    x.L = 4, x.first_dense = 1, x.shared = 1;
    const Params p = params(x);
    x.tp = 2, x.sp = true, x.dp = 2, x.pp = 2, x.ep = 4, x.etp = 1;
    auto sm = summary(make(moe_job(x)));
    CHECK(sm["parameters"]["total"].get<int64_t>() == p.total);
    CHECK(sm["parameters"]["active"].get<int64_t>() == p.active);
  }
  SUBCASE("mixtral-8x7b: 46.7B total, 12.9B active") {
    auto job = parse_job(R"({"model": {"preset": "mixtral-8x7b"}, "training": {"seq_len": 256}})");
    REQUIRE(job.ok());
    auto sm = summary(make(*job));
    // Published (Mistral AI): 46.7B parameters, 12.9B used per token; exact
    // from config.json: L 32, h 4096, 32 heads, 8 kv heads of 128, expert
    // width 14336, vocab 32000, 8 experts, top 2, untied.
    CHECK(sm["parameters"]["total"].get<int64_t>() == 46'702'792'704);
    CHECK(sm["parameters"]["active"].get<int64_t>() == 12'879'925'248);
  }
  SUBCASE("deepseek-v3: 671B total, 37B active") {
    auto job = parse_job(R"({"model": {"preset": "deepseek-v3"}, "training": {"seq_len": 256}})");
    REQUIRE(job.ok());
    auto sm = summary(make(*job));
    // From DeepSeek-V3's config.json: h 7168, 61 layers of which the first
    // 3 dense (f 18432), 128 heads, q_lora 1536, kv_lora 512, nope 128,
    // rope 64, v 128; 256 routed experts of width 2048, top 8, 1 shared,
    // e_score_correction_bias (256) per MoE layer; vocab 129280, untied.
    const int64_t h = 7168, a = 128, dn = 128, dr = 64, dv = 128, qr = 1536, kvr = 512;
    const int64_t attn = h * qr + qr + qr * a * (dn + dr) + h * (kvr + dr) + kvr + kvr * a * (dn + dv) + a * dv * h;
    const int64_t expert = 3 * h * 2048;
    const int64_t dense_layer = attn + 2 * h + 3 * h * 18432;
    const int64_t moe_layer = attn + 2 * h + h * 256 + 256 + 257 * expert;
    const int64_t total = 3 * dense_layer + 58 * moe_layer + 2 * 129280 * h + h;
    const int64_t active = total - 58 * (256 - 8) * expert;
    CHECK(total == 671'026'419'200);  // the paper's "671B total parameters"
    CHECK(active / 1'000'000'000 == 37);  // "37B activated for each token"
    CHECK(sm["parameters"]["total"].get<int64_t>() == total);
    CHECK(sm["parameters"]["active"].get<int64_t>() == active);
  }
}

TEST_CASE("moe: model FLOPs = 3 x tokens x (attention + router + k experts + shared experts + head)") {
  struct Case {
    int64_t tp, dp, pp, ep, etp, L, first_dense, shared;
    bool mla;
  };
  const Case cases[] = {
      {1, 1, 1, 1, 0, 2, 0, 0, false},
      {2, 2, 1, 2, 1, 3, 1, 1, false},
      {2, 2, 2, 4, 1, 4, 1, 2, false},
      {1, 4, 1, 4, 1, 3, 1, 1, true},
      {2, 2, 1, 2, 2, 2, 0, 1, true},
  };
  for (const Case& c : cases) {
    Spec x;
    x.tp = c.tp, x.sp = c.tp > 1, x.dp = c.dp, x.pp = c.pp, x.ep = c.ep, x.etp = c.etp, x.L = c.L;
    x.first_dense = c.first_dense, x.shared = c.shared, x.mla = c.mla, x.m = 2;
    if (c.mla) x.d = 32;
    CAPTURE(c.tp);
    CAPTURE(c.pp);
    CAPTURE(c.ep);
    CAPTURE(c.mla);
    REQUIRE(local_tokens(x) * x.k % x.E == 0);  // capacity exact: no padding
    auto sm = summary(make(moe_job(x)));
    const auto want = model_flops(x);
    CHECK(sm["flops"]["model_per_iteration"].get<uint64_t>() == static_cast<uint64_t>(want));
    // No recomputation: the hardware FLOPs are the model FLOPs.
    CHECK(sm["flops"]["hardware_per_iteration"].get<uint64_t>() == static_cast<uint64_t>(want));
  }
}

TEST_CASE("moe: ZeRO shards dense state over the sharding group and expert state over expert-dp") {
  struct Case {
    int64_t tp, dp, ep, etp, shard;
  };
  const Case cases[] = {
      {2, 4, 4, 1, 0},  // shard group 4, edp 2
      {2, 4, 2, 1, 0},  // shard group 4, edp 4
      {1, 8, 2, 1, 2},  // HSDP: shard group 2, edp 4
      {1, 4, 4, 1, 0},  // edp 1: expert state not sharded
      {2, 1, 1, 1, 0},  // dp 1: dense state not sharded, experts over edp 2 (the tp ranks)
  };
  for (const Case& c : cases)
    for (int64_t zero = 0; zero <= 3; ++zero) {
      Spec x;
      x.tp = c.tp, x.sp = c.tp > 1, x.dp = c.dp, x.ep = c.ep, x.etp = c.etp, x.shard = c.shard, x.zero = zero;
      x.first_dense = 1, x.shared = 1, x.L = 3;
      if (zero == 0 && c.shard > 0) continue;  // a shard group needs ZeRO
      CAPTURE(c.tp);
      CAPTURE(c.dp);
      CAPTURE(c.ep);
      CAPTURE(c.shard);
      CAPTURE(zero);
      const Params p = params(x);
      const int64_t S = x.shard_deg(), edp = x.edp();
      REQUIRE(p.dense_local * 2 % S == 0);  // divisible: no padding to reason about
      REQUIRE(p.expert_local * 2 % edp == 0);
      auto mem = summary(make(moe_job(x)))["stages"][0]["memory_bytes"];
      // bytes per parameter: bf16 weights 2, fp32 gradients 4, Adam 12;
      // sharded from ZeRO stage 3, 2, 1 on.
      auto sharded = [&](int64_t bytes, int64_t from) {
        if (zero < from) return (p.dense_local + p.expert_local) * bytes;
        return p.dense_local * bytes / S + p.expert_local * bytes / edp;
      };
      CHECK(mem["optimizer"].get<int64_t>() == sharded(12, 1));
      CHECK(mem["gradients"].get<int64_t>() == sharded(4, 2));
      CHECK(mem["weights"].get<int64_t>() == sharded(2, 3));
    }
}

TEST_CASE("moe: ZeRO reduce-scatters expert gradient buckets over expert-dp") {
  Spec x;
  x.tp = 1, x.dp = 4, x.ep = 2, x.etp = 1, x.zero = 1;  // edp 2 = {0, 2}
  auto g = make(moe_job(x));
  const Params p = params(x);
  int64_t rs_bytes = 0, ag_bytes = 0;
  const RankTrace t0 = g.rank_trace(0).value();
  for (const auto& n : t0.nodes) {
    if (n.kind != TraceNodeKind::kCollective || !has(n.name, "expert_grad")) continue;
    CAPTURE(n.name);
    CHECK(members(g, n) == edp_group0(x));
    CHECK(n.coll != CollectiveType::kAllReduce);
    if (n.coll == CollectiveType::kReduceScatter) rs_bytes += n.comm_size;
    if (n.coll == CollectiveType::kAllGather) ag_bytes += n.comm_size;
  }
  CHECK(rs_bytes == 4 * p.expert_local);           // full fp32 input
  CHECK(ag_bytes == 2 * p.expert_local / x.edp());  // the bf16 shard each rank updated
}

TEST_CASE("moe: job errors name the field and the values") {
  const std::string moe_model =
      R"("model": {"num_layers": 2, "hidden": 256, "num_heads": 4, "vocab": 1024, "ffn_hidden": 512,
                   "num_experts": 8, "experts_per_token": 2, "moe_ffn_hidden": 128})";
  const std::string dense_model = R"("model": {"num_layers": 2, "hidden": 256, "num_heads": 4, "vocab": 1024})";
  auto job = [](const std::string& model, const std::string& parallel) {
    return "{" + model + R"(, "training": {"seq_len": 128}, "parallel": )" + parallel + "}";
  };
  REQUIRE(parse_job(job(moe_model, R"({"dp": 4, "ep": 4})")).ok());

  SUBCASE("ep without experts") {
    Error e = parse_error(job(dense_model, R"({"dp": 2, "ep": 2})"));
    CHECK(e.path == "parallel.ep");
    CHECK(has(e.message, "ep (2)"));
    CHECK(has(e.message, "num_experts"));
  }
  SUBCASE("ep does not divide num_experts") {
    Error e = parse_error(job(moe_model, R"({"dp": 3, "ep": 3})"));
    CHECK(e.path == "parallel.ep");
    CHECK(has(e.message, "(8)"));
    CHECK(has(e.message, "(3)"));
  }
  SUBCASE("expert_tp x ep does not divide tp x cp x dp") {
    Error e = parse_error(job(moe_model, R"({"dp": 6, "ep": 4})"));
    CHECK(e.path == "parallel.ep");
    CHECK(has(e.message, "ep (4)"));
    CHECK(has(e.message, "= 6"));
    // expert_tp given (and not tp's): the error names it.
    Error e2 = parse_error(job(moe_model, R"({"dp": 4, "ep": 4, "expert_tp": 2})"));
    CHECK(e2.path == "parallel.expert_tp");
    CHECK(has(e2.message, "expert_tp (2)"));
    CHECK(has(e2.message, "= 8"));
    CHECK(has(e2.message, "= 4"));
  }
  SUBCASE("MoE with tp > 1 needs sequence parallelism") {
    Error e = parse_error(job(moe_model, R"({"tp": 2, "dp": 2, "ep": 2})"));
    CHECK(e.path == "parallel.sequence_parallel");
    CHECK(has(e.message, "(2)"));
    CHECK(parse_job(job(moe_model, R"({"tp": 2, "dp": 2, "ep": 2, "sequence_parallel": true})")).ok());
  }
  SUBCASE("shard_group does not divide dp x cp") {
    Error e = parse_error(job(moe_model, R"({"dp": 4, "zero": 1, "shard_group": 3})"));
    CHECK(e.path == "parallel.shard_group");
    CHECK(has(e.message, "shard_group (3)"));
    CHECK(has(e.message, "= 4"));
    Error e2 = parse_error(job(dense_model, R"({"dp": 2, "cp": 2, "zero": 1, "shard_group": 8})"));
    CHECK(e2.path == "parallel.shard_group");
    CHECK(has(e2.message, "(8)"));
  }
  SUBCASE("shard_group without ZeRO") {
    Error e = parse_error(job(dense_model, R"({"dp": 4, "shard_group": 2})"));
    CHECK(e.path == "parallel.shard_group");
    CHECK(has(e.message, "shard_group (2)"));
    CHECK(has(e.message, "zero"));
    CHECK(parse_job(job(dense_model, R"({"dp": 4, "shard_group": 4})")).ok());  // = dp: nothing to shard differently
  }
}

namespace {

struct Mix {
  const char* what;
  Spec x;
};

Spec mix(std::function<void(Spec&)> f) {
  Spec x;
  x.L = 4;
  x.m = 2;
  f(x);
  return x;
}

using testing::validate_generated;

}  // namespace

TEST_CASE("moe: sweep of expert-parallel mixes replays, balances, adds up, validates and is deterministic") {
  const Mix mixes[] = {
      {"tp2 sp, ep4 (etp 2)", mix([](Spec& x) { x.tp = 2, x.sp = true, x.dp = 4, x.ep = 4; })},
      {"tp2 sp, ep2 etp1 edp4, zero 1", mix([](Spec& x) {
         x.tp = 2, x.sp = true, x.dp = 4, x.ep = 2, x.etp = 1, x.zero = 1;
       })},
      {"cp2 tp1, ep4, zero 2", mix([](Spec& x) { x.cp = 2, x.dp = 2, x.ep = 4, x.etp = 1, x.zero = 2; })},
      {"cp2 tp2 sp, ep2 etp2", mix([](Spec& x) { x.tp = 2, x.sp = true, x.cp = 2, x.ep = 2, x.s = 256; })},
      {"pp2 1f1b, zero 3, full recompute", mix([](Spec& x) {
         x.tp = 2, x.sp = true, x.dp = 2, x.pp = 2, x.ep = 2, x.etp = 1, x.zero = 3, x.recompute = Recompute::kFull;
       })},
      {"pp2 interleaved, selective recompute", mix([](Spec& x) {
         x.dp = 4, x.pp = 2, x.v = 2, x.ep = 4, x.etp = 1, x.L = 8, x.m = 2;
         x.schedule = Schedule::kInterleaved, x.recompute = Recompute::kSelective;
       })},
      {"pp2 gpipe, MLA, shared experts, first dense layer", mix([](Spec& x) {
         x.mla = true, x.d = 32, x.shared = 1, x.first_dense = 1, x.tp = 2, x.sp = true, x.dp = 2, x.pp = 2;
         x.ep = 2, x.etp = 2, x.schedule = Schedule::kGPipe;
       })},
      {"pp2 zero-bubble, router bias, zero 1", mix([](Spec& x) {
         x.router_bias = true, x.dp = 4, x.pp = 2, x.ep = 2, x.etp = 1, x.zero = 1, x.schedule = Schedule::kZeroBubble;
       })},
      {"llama3 order, pp2", mix([](Spec& x) {
         x.order = {"tp", "cp", "pp", "dp"}, x.tp = 2, x.sp = true, x.dp = 2, x.pp = 2, x.ep = 4, x.etp = 1;
       })},
      {"capacity factor 1.25, rounded up", mix([](Spec& x) {
         x.cf = 1.25, x.s = 240, x.tp = 2, x.sp = true, x.dp = 2, x.ep = 2, x.etp = 2;
       })},
      {"ep 1, etp 1 under tp 2, zero 3", mix([](Spec& x) { x.tp = 2, x.sp = true, x.dp = 2, x.etp = 1, x.zero = 3; })},
      {"HSDP + experts, zero 3", mix([](Spec& x) { x.dp = 4, x.ep = 2, x.etp = 1, x.zero = 3, x.shard = 2; })},
      {"HSDP + experts, zero 2, cp", mix([](Spec& x) {
         x.cp = 2, x.dp = 4, x.ep = 4, x.etp = 1, x.zero = 2, x.shard = 4, x.shared = 1;
       })},
      {"DeepSeek-like: MLA, router bias, shared, dense first, top-4 of 16", mix([](Spec& x) {
         x.mla = true, x.d = 32, x.router_bias = true, x.shared = 1, x.first_dense = 1, x.E = 16, x.k = 4;
         x.tp = 2, x.sp = true, x.dp = 4, x.ep = 8, x.etp = 1, x.zero = 1;
       })},
  };
  for (const Mix& mx : mixes) {
    CAPTURE(mx.what);
    const Job j = moe_job(mx.x);
    auto g = make(j);
    auto s = summary(g);
    check_complete_balanced_and_summed(g, s);
    auto rep = validate_generated(g);
    if (!rep.ok() || rep.warnings() > 0) MESSAGE(rep.text());
    CHECK(rep.errors() == 0);
    CHECK(rep.warnings() == 0);
    // Same job, same bytes (every rank) and the same summary.
    auto again = make(j);
    for (int64_t r = 0; r < g.world_size(); ++r)
      CHECK(again.rank_trace_bytes(r).value() == g.rank_trace_bytes(r).value());
    CHECK(again.summary_json() == g.summary_json());
    CHECK(again.groups() == g.groups());
  }
}
