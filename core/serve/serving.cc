// Inference jobs: three iteration kinds built from the same builder
// (forward only, BuildOptions::inference), sharded by the same propagation
// and lowered by the same lowering as training; memory, the fit and the
// times on top (docs/inference.md, "Formulas"); the workload run, the
// sweep and the capacity search over them.
#include "serve/serving.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include <nlohmann/json.hpp>

#include "base/bytes.h"
#include "base/cancel.h"
#include "base/json_fields.h"
#include "model/transformer.h"
#include "parallel/propagate.h"
#include "serve/scheduler.h"
#include "serve/workload.h"

namespace sc {
namespace {

using json = nlohmann::json;
using std::to_string;

// Tokens one attention-dp rank processes in an iteration, KV entries its
// attention reads, query-key pairs, and sampled tokens.
struct Shape {
  int64_t tokens = 1, cached = 1, pairs = 1, sampled = 1;
};

enum class Kind { kPrefill, kDecode, kMixed };

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The layout, groups and graphs of one iteration kind (numbers bound later).
Result<std::unique_ptr<BuiltJob>> build_kind(const Job& full, Kind kind) {
  const Job job = serving_pool_job(full, kind == Kind::kPrefill);
  auto s = std::make_unique<BuiltJob>();
  s->job = job;
  const auto& p = job.parallel;
  std::vector<MeshAxis> axes;
  for (const auto& name : p.order)
    axes.push_back({name, name == "tp" ? p.tp : name == "dp" ? p.dp : name == "cp" ? p.cp : p.pp});
  s->layout = RankLayout(std::move(axes));
  if (job.model.tied_embeddings) s->layout.enable_embedding_groups();
  const bool moe = job.model.is_moe();
  const int64_t etp = p.expert_tp_degree(), edp = p.expert_dp();
  if (moe) s->layout.add_derived({"tp", "cp", "dp"}, {{"etp", etp}, {"ep", p.ep}, {"edp", edp}});
  s->groups = s->layout.all_groups();
  for (int64_t stage = 0; stage < p.pp; ++stage) {
    SC_RETURN_IF_ERROR(check_cancelled("the graph build"));
    BuildOptions bo;
    bo.has_tp = p.tp > 1;
    bo.has_dp = p.dp > 1;
    bo.has_ep = moe && p.ep > 1;
    bo.has_etp = moe && etp > 1;
    bo.has_edp = moe && edp > 1;
    bo.experts_over_tp = moe && p.tp > 1;  // validate_serving: ep x expert_tp = tp
    bo.dtype = DType::kBF16;  // activations; the GEMMs run at weights_dtype (lower_kind)
    bo.has_weight_dtype = true;
    bo.weight_dtype = job.serving.weights_dtype;
    bo.kv_dtype = job.serving.kv_dtype;
    bo.inference = true;
    bo.mla_absorbed = kind != Kind::kPrefill;  // prefill of a whole prompt: MHA over decompressed K/V
    bo.num_virtual = p.pp;
    bo.chunks = stage_chunks(job.model.num_layers, p.pp, 1, p.pipeline_layout, stage);
    Graph g = build_transformer_forward(job.model, bo);
    propagate_shardings(g, propagation_options(bo));  // no cp, no SP in inference
    s->stages.push_back({std::move(g), RoleProgram{}});
  }
  return s;
}

// Two-batch overlap (serving.two_batch_overlap): the iteration's tokens as
// two micro-batches, each half of every count rounded up (prefill: a
// prompt's tokens and query-key pairs; decode: the sequences and their
// cached tokens); an iteration of one token runs whole, as SGLang runs a
// batch it cannot split (docs/inference.md, "Two-batch overlap").
bool tbo_split(const Job& job, const Shape& sh) { return job.serving.two_batch_overlap && sh.tokens >= 2; }

// Binds the iteration's numbers and lowers every stage's program.
Status lower_kind(BuiltJob& s, const Shape& full_shape) {
  const Job& job = s.job;
  const auto& p = job.parallel;
  const bool tbo = tbo_split(job, full_shape);
  const Shape sh = tbo ? Shape{ceil_div(full_shape.tokens, 2), ceil_div(full_shape.cached, 2),
                               ceil_div(full_shape.pairs, 2), ceil_div(full_shape.sampled, 2)}
                       : full_shape;
  s.bind = model_bindings(job.model, 1, sh.tokens);
  s.bind["tp"] = p.tp;
  s.bind["dp"] = p.dp;
  s.bind["cp"] = 1;
  s.bind["Lk"] = sh.cached;
  s.bind["pairs"] = sh.pairs;
  s.bind["n"] = sh.sampled;
  if (job.model.is_moe()) {
    s.bind["ep"] = p.ep;
    s.bind["etp"] = p.expert_tp_degree();
    s.bind["edp"] = p.expert_dp();
    s.bind["cap"] = std::max<int64_t>(1, moe_capacity(job.model, sh.tokens));
  }
  for (int64_t st = 0; st < s.num_stages(); ++st) {
    LowerOptions lo;
    lo.micro_batches = tbo ? 2 : 1;
    lo.pp = p.pp;
    lo.stage = st;
    // Two micro-batches: both forwards adjacent on every stage (no backward).
    lo.schedule = tbo ? Schedule::kGPipe : Schedule::kOneFOneB;
    lo.two_batch_overlap = tbo;
    lo.compute_dtype = job.serving.weights_dtype;
    lo.optimizer_bytes_per_param = 0;
    lo.moe_imbalance = p.moe_imbalance;
    lo.skinny_gemms = true;  // decode's few rows: the small-M kernels (docs/hardware.md, "Skinny GEMMs")
    SC_ASSIGN_OR_RETURN(RoleProgram prog, lower_program(s.stages[st].graph, s.bind, job.hardware, lo));
    SC_RETURN_IF_ERROR(check_role_program(prog, s.layout, p.pp, st));
    s.stages[st].program = std::move(prog);
  }
  return ok_status();
}

// Per-rank bytes (largest stage) of the weights, and of one cached token;
// the whole model's bytes of one cached token.
struct Footprint {
  int64_t weights_per_rank = 0, kv_token_per_rank = 0, kv_token_model = 0;
  // Hybrid models: the Mamba layers' fixed state of one sequence (conv and
  // SSM state), per stage on its rank and in the whole model; 0 without.
  std::vector<int64_t> stage_state;
  int64_t state_model = 0;
  // Per cache tensor: (layer, bytes per cached token), each stage's on its
  // rank and the whole model's; what a sliding window caps per layer.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> stage_caches;
  std::vector<std::pair<int64_t, int64_t>> model_caches;
};

Result<Footprint> footprint(const BuiltJob& s) {
  Footprint f;
  Bindings one = s.bind;
  one["Lk"] = 1;
  one["b"] = 1;
  one["n"] = 1;
  Bindings global = one;
  global["dp"] = 1;
  const auto per_token = [](const Tensor& t) {
    for (const Dim& d : t.dims)
      if (d.label == "Lk") return true;
    return false;
  };
  for (int64_t st = 0; st < s.num_stages(); ++st) {
    int64_t w = 0, kv = 0, state = 0;
    f.stage_caches.emplace_back();
    for (const Tensor& t : s.graph_of(st).tensors) {
      if (t.kind == TensorKind::kWeight && t.producer < 0) {
        SC_ASSIGN_OR_RETURN(int64_t b, t.local_bytes(s.bind, t.name));
        w += b;
      } else if (t.kind == TensorKind::kCache && t.producer < 0 && !per_token(t)) {  // a Mamba state
        SC_ASSIGN_OR_RETURN(int64_t b, t.local_bytes(one, t.name));
        SC_ASSIGN_OR_RETURN(int64_t g, (t.global_numel() * Expr(dtype_bytes(t.dtype))).eval(global, t.name));
        state += b;
        f.state_model += g;
      } else if (t.kind == TensorKind::kCache && t.producer < 0) {
        SC_ASSIGN_OR_RETURN(int64_t b, t.local_bytes(one, t.name));
        SC_ASSIGN_OR_RETURN(int64_t g, (t.global_numel() * Expr(dtype_bytes(t.dtype))).eval(global, t.name));
        kv += b;
        f.kv_token_model += g;
        f.stage_caches.back().push_back({t.layer, b});
        f.model_caches.push_back({t.layer, g});
      }
    }
    f.weights_per_rank = std::max(f.weights_per_rank, w);
    f.kv_token_per_rank = std::max(f.kv_token_per_rank, kv);
    f.stage_state.push_back(state);
  }
  return f;
}

int64_t activation_peak(const BuiltJob& s) {
  int64_t a = 0;
  for (int64_t st = 0; st < s.num_stages(); ++st) a = std::max(a, s.program_of(st).live_activation_peak);
  return a;
}

Result<double> step_seconds(const ServeBackend& be, const BuiltJob& s) {
  return be.step_seconds(s);
}

struct ClassTimes {
  double t_prefill = 0, ttft = 0;
};

// Everything one concurrency gives.
struct Serving {
  std::unique_ptr<BuiltJob> prefill, decode, mixed;  // mixed: colocated jobs only
  Footprint fp;
  int64_t per_dp = 0;  // sequences per attention-dp rank of the decode pool
  int64_t concurrency = 0, max_concurrency = 0;
  int64_t kv_seq_rank = 0, act = 0, chunks = 1;
  Shape dshape, pshape, mshape;
  double t_prefill = 0, t_decode = 0, t_mixed = 0, t_transfer = 0;
  double ttft = 0, tpot = 0, itl = 0, tps_gpu = 0;
  int64_t gpus = 0;
  bool fits = true;
  std::vector<ClassTimes> classes;  // per request class (serving_requests order)
};

struct Shapes {
  Shape prefill, decode, mixed;
  int64_t chunks = 1;
};

// The KV entries n decoding sequences read. Fixed lengths: every sequence
// at P + O/2. A mix: a class-i sequence holds a decode slot for O_i steps,
// so slots are shared in proportion to share_i x O_i, each at its average
// P_i + O_i/2 (docs/inference.md, "Request mixes").
int64_t decode_cached(const ServingConfig& sv, int64_t n) {
  if (sv.requests.empty()) return n * (sv.prompt_tokens + sv.output_tokens / 2);
  double num = 0, den = 0;
  for (const RequestClass& c : sv.requests) {
    num += c.weight * static_cast<double>(c.output_tokens) *
           static_cast<double>(c.prompt_tokens + c.output_tokens / 2);
    den += c.weight * static_cast<double>(c.output_tokens);
  }
  return std::llround(static_cast<double>(n) * num / den);
}

// The iterations at per_dp sequences per dp rank, the prefill and chunks
// of a prompt of P tokens.
Shapes shapes_for(const ServingConfig& sv, int64_t per_dp, int64_t P) {
  Shapes out;
  out.prefill = {P, P, P * (P + 1) / 2, 1};
  const int64_t dc = decode_cached(sv, per_dp);
  out.decode = {per_dp, dc, dc, per_dp};
  const int64_t C = sv.chunk_tokens > 0 ? std::min(sv.chunk_tokens, P) : P;
  out.chunks = ceil_div(P, C);
  const int64_t o = C * (out.chunks - 1) / 2;  // the average prefix a chunk attends to
  const int64_t d = per_dp - 1;                // the decode batch beside the chunk
  const int64_t dL = decode_cached(sv, d);
  out.mixed = {C + d, o + C + dL, C * o + C * (C + 1) / 2 + dL, d + 1};
  return out;
}
Shapes shapes_for(const ServingConfig& sv, int64_t per_dp) { return shapes_for(sv, per_dp, sv.prompt_tokens); }

// Request classes with their shares (weights normalized), and the means
// the formulas use.
struct Mix {
  std::vector<RequestClass> classes;
  std::vector<double> share;
  double mean_output = 0;      // E[O]
  double mean_seq_tokens = 0;  // E[ceil((P + O) / page) x page]: cache slots of one sequence
};

Mix mix_of(const ServingConfig& sv) {
  Mix m;
  m.classes = serving_requests(sv);
  double total = 0;
  for (const RequestClass& c : m.classes) total += c.weight;
  double o = 0, t = 0;
  for (const RequestClass& c : m.classes) {
    m.share.push_back(c.weight / total);
    o += c.weight * static_cast<double>(c.output_tokens);
    t += c.weight * static_cast<double>(ceil_div(c.prompt_tokens + c.output_tokens, sv.page_tokens) * sv.page_tokens);
  }
  m.mean_output = o / total;
  m.mean_seq_tokens = t / total;
  return m;
}

// Bytes of mean_seq_tokens cache slots at `per_token` bytes, whole bytes.
int64_t seq_bytes(const Mix& m, int64_t per_token) {
  return static_cast<int64_t>(std::ceil(m.mean_seq_tokens * static_cast<double>(per_token)));
}

// A sliding-window model's sequence: a windowed layer keeps only the last
// kv_positions(layer, P + O) = min(P + O, window) tokens (paged), a full
// layer all of them (docs/inference.md, "Sliding windows"); the mean over
// the mix, whole bytes rounded up. `caches`: (layer, bytes per token).
double windowed_bytes(const Job& job, const std::vector<std::pair<int64_t, int64_t>>& caches, int64_t ctx) {
  double b = 0;
  for (const auto& [layer, per_token] : caches) {
    const int64_t kept = job.model.kv_positions(layer, ctx);
    b += static_cast<double>(ceil_div(kept, job.serving.page_tokens) * job.serving.page_tokens) *
         static_cast<double>(per_token);
  }
  return b;
}

int64_t windowed_seq_bytes(const Job& job, const std::vector<std::pair<int64_t, int64_t>>& caches) {
  const Mix m = mix_of(job.serving);
  double total = 0;
  for (size_t i = 0; i < m.classes.size(); ++i)
    total += m.share[i] * windowed_bytes(job, caches, m.classes[i].prompt_tokens + m.classes[i].output_tokens);
  return static_cast<int64_t>(std::ceil(total));
}

// One sequence's cache on the largest rank (a hybrid model's: its KV pages
// and its Mamba state), and its KV cache in the whole model.
int64_t seq_rank_bytes(const Job& job, const Footprint& f, const Mix& m) {
  if (job.model.sliding_window <= 0 && f.state_model == 0) return seq_bytes(m, f.kv_token_per_rank);
  int64_t most = 0;
  for (size_t st = 0; st < f.stage_caches.size(); ++st) {
    int64_t kv = 0;
    if (job.model.sliding_window > 0) {
      kv = windowed_seq_bytes(job, f.stage_caches[st]);
    } else {
      int64_t per_token = 0;
      for (const auto& c : f.stage_caches[st]) per_token += c.second;
      kv = seq_bytes(m, per_token);
    }
    most = std::max(most, kv + f.stage_state[st]);
  }
  return most;
}
int64_t seq_model_bytes(const Job& job, const Footprint& f, const Mix& m) {
  if (job.model.sliding_window <= 0) return seq_bytes(m, f.kv_token_model);
  return windowed_seq_bytes(job, f.model_caches);
}

// The memory the engine may use: serving.gpu_memory_utilization of the
// GPU's (all of it when not given), as vLLM's --gpu-memory-utilization.
double usable_memory(const Job& job) {
  const double cap = job.hardware.memory_bytes;
  return job.serving.gpu_memory_utilization > 0 ? cap * job.serving.gpu_memory_utilization : cap;
}

std::string gib(double bytes) {
  char b[64];
  std::snprintf(b, sizeof b, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return b;
}

// What would make a model fit: more model parallelism, fp8 where not yet.
std::string fit_hints(const ServingConfig& cfg) {
  std::string h = "more tensor or pipeline parallelism (parallel.tp, parallel.pp; MoE: more dp with ep)";
  if (dtype_bits(cfg.weights_dtype) > 8) h += ", serving.weights_dtype \"fp8\" (half the weights)";
  if (cfg.kv_dtype != DType::kFP8) h += ", serving.kv_dtype \"fp8\" (half the cache)";
  return h + " or fewer tokens per sequence would help";
}

// Builds the kinds, finds the concurrency and lowers at it. `want`: the
// sequences per instance (0 = the job's, or as many as fit).
Status plan(const Job& full, Serving* sv, int64_t want, bool strict, const ServeBackend& be) {
  const ServingConfig& cfg = full.serving;
  const Job dj = serving_pool_job(full, false), pj = serving_pool_job(full, true);
  const int64_t dp = dj.parallel.dp;
  if (!sv->decode) {
    SC_ASSIGN_OR_RETURN(sv->prefill, build_kind(full, Kind::kPrefill));
    SC_ASSIGN_OR_RETURN(sv->decode, build_kind(full, Kind::kDecode));
    if (!cfg.disaggregated) {
      SC_ASSIGN_OR_RETURN(sv->mixed, build_kind(full, Kind::kMixed));
    }
  }
  Shapes one = shapes_for(cfg, 1);
  SC_RETURN_IF_ERROR(lower_kind(*sv->prefill, one.prefill));
  SC_RETURN_IF_ERROR(lower_kind(*sv->decode, one.decode));
  SC_ASSIGN_OR_RETURN(sv->fp, footprint(*sv->decode));
  SC_ASSIGN_OR_RETURN(Footprint pfp, footprint(*sv->prefill));
  const double cap = usable_memory(full);
  const Mix mix = mix_of(cfg);
  sv->kv_seq_rank = seq_rank_bytes(full, sv->fp, mix);
  const int64_t act1 = std::max(activation_peak(*sv->prefill), activation_peak(*sv->decode));
  auto fit = [&](int64_t act) -> int64_t {
    const double free = cap - static_cast<double>(sv->fp.weights_per_rank) - static_cast<double>(act);
    if (free <= 0 || sv->kv_seq_rank <= 0) return free > 0 ? INT32_MAX : 0;
    return static_cast<int64_t>(std::floor(free / static_cast<double>(sv->kv_seq_rank)));
  };
  // Per attention-dp rank, at most the instance's cap (serving_sweep's,
  // the workload's) over the dp ranks: "as many as fit" is a concurrency
  // every command accepts back.
  int64_t n = std::min<int64_t>(fit(act1), limits::kMaxMicroBatch / dp);
  if (n < 1) {
    const double need = static_cast<double>(sv->fp.weights_per_rank + act1 + sv->kv_seq_rank);
    // Held back by the engine's share of the memory: say so, and name it
    // when the whole memory would do.
    const bool share = cfg.gpu_memory_utilization > 0 && cfg.gpu_memory_utilization < 1;
    char held[128] = "";
    if (share)
      std::snprintf(held, sizeof held, " (serving.gpu_memory_utilization %g of %s)", cfg.gpu_memory_utilization,
                    gib(full.hardware.memory_bytes).c_str());
    const bool share_is_why = share && need <= full.hardware.memory_bytes;
    return make_error(
        ErrorCode::kInvalidArgument,
        "the model does not fit even at one sequence: a rank needs " + gib(need) + " (weights " +
            gib(static_cast<double>(sv->fp.weights_per_rank)) + ", activations " + gib(static_cast<double>(act1)) +
            ", one sequence's KV cache " + gib(static_cast<double>(sv->kv_seq_rank)) + ") but has " + gib(cap) +
            held + ", short by " + gib(need - cap) + "; " +
            (share_is_why ? std::string("a larger serving.gpu_memory_utilization, or ") : std::string()) +
            fit_hints(cfg),
        share_is_why ? "serving.gpu_memory_utilization"
                     : (cfg.disaggregated ? "serving.disaggregated.decode" : "parallel.tp"));
  }
  if (cfg.disaggregated) {  // the prefill pool holds its weights and one prompt's cache
    const int64_t pkv = ceil_div(cfg.prompt_tokens, cfg.page_tokens) * cfg.page_tokens * pfp.kv_token_per_rank;
    const double need = static_cast<double>(pfp.weights_per_rank + activation_peak(*sv->prefill) + pkv);
    if (need > cap)
      return make_error(ErrorCode::kInvalidArgument,
                        "the prefill pool does not fit one prompt: a rank needs " + gib(need) + " but has " + gib(cap) +
                            ", short by " + gib(need - cap) +
                            "; more tp or pp in the prefill pool, or serving.weights_dtype \"fp8\"",
                        "serving.disaggregated.prefill");
  }
  // As many as fit: the decode and mixed iterations' activations grow with
  // the batch; shrink it until they fit beside its cache (a few rounds).
  if (want == 0) {
    for (int round = 0; round < 4; ++round) {
      Shapes sh = shapes_for(cfg, n);
      SC_RETURN_IF_ERROR(lower_kind(*sv->decode, sh.decode));
      int64_t act = std::max(activation_peak(*sv->prefill), activation_peak(*sv->decode));
      if (sv->mixed) {
        SC_RETURN_IF_ERROR(lower_kind(*sv->mixed, sh.mixed));
        act = std::max(act, activation_peak(*sv->mixed));
      }
      const int64_t next = std::max<int64_t>(1, std::min(n, fit(act)));
      if (next == n) break;
      n = next;
    }
  }
  sv->max_concurrency = n * dp;
  sv->per_dp = want > 0 ? want / dp : n;
  sv->concurrency = sv->per_dp * dp;
  Shapes sh = shapes_for(cfg, sv->per_dp);
  sv->pshape = sh.prefill;
  sv->dshape = sh.decode;
  sv->mshape = sh.mixed;
  sv->chunks = sh.chunks;
  SC_RETURN_IF_ERROR(lower_kind(*sv->decode, sh.decode));
  if (sv->mixed) SC_RETURN_IF_ERROR(lower_kind(*sv->mixed, sh.mixed));
  sv->act = std::max(activation_peak(*sv->prefill), activation_peak(*sv->decode));
  if (sv->mixed) sv->act = std::max(sv->act, activation_peak(*sv->mixed));
  const double used = static_cast<double>(sv->fp.weights_per_rank + sv->act + sv->per_dp * sv->kv_seq_rank);
  sv->fits = used <= cap;
  if (!sv->fits && strict)
    return make_error(ErrorCode::kInvalidArgument,
                      "concurrency (" + to_string(sv->concurrency) + ") does not fit: a rank would need " + gib(used) +
                          " but has " + gib(cap) + "; at most " + to_string(sv->max_concurrency) +
                          " sequences of prompt_tokens + output_tokens fit (0 = as many as fit)",
                      "serving.concurrency");

  // Times (docs/inference.md, "Formulas"; a mix: "Request mixes").
  SC_ASSIGN_OR_RETURN(sv->t_prefill, step_seconds(be, *sv->prefill));
  SC_ASSIGN_OR_RETURN(sv->t_decode, step_seconds(be, *sv->decode));
  if (sv->mixed) {
    SC_ASSIGN_OR_RETURN(sv->t_mixed, step_seconds(be, *sv->mixed));
  }
  const int64_t world_d = dj.parallel.world_size(), world_p = pj.parallel.world_size();
  const double O = mix.mean_output;
  sv->tpot = sv->t_decode;
  // One prompt's cache moves from the prefill to the decode ranks over the
  // scale-out network, every sending rank at its NIC's bandwidth.
  const double bw = full.hardware.inter_node_bw * static_cast<double>(std::min(world_p, world_d));
  auto transfer = [&](int64_t P) {
    const double bytes = static_cast<double>(ceil_div(P, cfg.page_tokens) * cfg.page_tokens) *
                         static_cast<double>(sv->fp.kv_token_model);
    return bw > 0 ? bytes / bw : 0;
  };
  // Per class: its prefill iteration (or chunks), TTFT and the prefill work
  // a request costs its dp rank. The states keep the longest prompt's
  // programs (lowered last), the iteration the traces show.
  sv->classes.clear();
  sv->ttft = 0;
  // mean_chunk_time: with chunks, the mixed iterations one request's
  // prefill occupies (each carries one chunk), over the mix.
  double mean_prefill = 0, mean_cost = 0, mean_chunk_time = 0, mean_chunks = 0;
  for (size_t i = 0; i < mix.classes.size(); ++i) {
    const int64_t P = mix.classes[i].prompt_tokens;
    ClassTimes ct;
    ct.t_prefill = sv->t_prefill;
    double t_mixed = sv->t_mixed;
    int64_t chunks = sv->chunks;
    if (P != cfg.prompt_tokens) {
      const Shapes cs = shapes_for(cfg, sv->per_dp, P);
      chunks = cs.chunks;
      SC_RETURN_IF_ERROR(lower_kind(*sv->prefill, cs.prefill));
      SC_ASSIGN_OR_RETURN(ct.t_prefill, step_seconds(be, *sv->prefill));
      if (sv->mixed && cfg.chunk_tokens > 0) {
        SC_RETURN_IF_ERROR(lower_kind(*sv->mixed, cs.mixed));
        SC_ASSIGN_OR_RETURN(t_mixed, step_seconds(be, *sv->mixed));
      }
    }
    double cost = ct.t_prefill;  // per request, on its dp rank
    if (cfg.disaggregated) {
      ct.ttft = ct.t_prefill + transfer(P);
    } else if (cfg.chunk_tokens > 0) {
      ct.ttft = static_cast<double>(chunks) * t_mixed;
      cost = static_cast<double>(chunks) * std::max(0.0, t_mixed - sv->t_decode);
      mean_chunk_time += mix.share[i] * static_cast<double>(chunks) * t_mixed;
      mean_chunks += mix.share[i] * static_cast<double>(chunks);
    } else {
      ct.ttft = ct.t_prefill;
    }
    sv->ttft += mix.share[i] * ct.ttft;
    mean_prefill += mix.share[i] * ct.t_prefill;
    mean_cost += mix.share[i] * cost;
    sv->classes.push_back(ct);
  }
  if (mix.classes.size() > 1) {  // back to the longest prompt's iterations
    SC_RETURN_IF_ERROR(lower_kind(*sv->prefill, sh.prefill));
    if (sv->mixed) SC_RETURN_IF_ERROR(lower_kind(*sv->mixed, sh.mixed));
  }
  if (cfg.disaggregated) {
    sv->t_transfer = transfer(cfg.prompt_tokens);
    const int64_t rp = full.serving.prefill.replicas, rd = full.serving.decode.replicas;
    sv->gpus = world_p * rp + world_d * rd;
    const double decode_rate = static_cast<double>(sv->concurrency) / sv->t_decode * static_cast<double>(rd);
    const double prefill_rate = static_cast<double>(pj.parallel.dp) / mean_prefill * O * static_cast<double>(rp);
    sv->tps_gpu = std::min(decode_rate, prefill_rate) / static_cast<double>(sv->gpus);
    sv->itl = sv->tpot;  // the decode pool runs no prefills
  } else {
    sv->gpus = world_d * cfg.replicas;
    const double cycle = static_cast<double>(sv->per_dp) * mean_cost + O * sv->t_decode;
    // With chunks, an iteration carries one chunk: refilling the c_r slots
    // takes c_r x k mixed iterations, which cannot overlap each other, so
    // the cycle is at least that long (small chunks make the prefill, not
    // the decode steps, set the pace; docs/inference.md, "Throughput").
    const double chunk_bound = static_cast<double>(sv->per_dp) * mean_chunk_time;
    sv->tps_gpu = static_cast<double>(sv->concurrency) * O / std::max(cycle, chunk_bound) /
                  static_cast<double>(world_d);
    // Inter-token latency as a request sees it: per E[O] decode steps each
    // of the other c_r - 1 slots on its dp rank is refilled once, and that
    // request's prefill stalls the decode batch (docs/inference.md, "ITL");
    // when the chunks set the pace every iteration is a mixed one.
    sv->itl = chunk_bound > cycle ? mean_chunk_time / mean_chunks
                                  : sv->tpot + static_cast<double>(sv->per_dp - 1) * mean_cost / O;
  }
  return ok_status();
}

double sig(double v) {
  if (v == 0 || !std::isfinite(v)) return 0;
  char b[40];
  std::snprintf(b, sizeof b, "%.9g", v);
  return std::strtod(b, nullptr);
}

json iteration_json(const BuiltJob& s, const Shape& sh, double seconds) {
  return {{"world_size", s.layout.world_size()},
          {"tokens_per_rank", sh.tokens},
          {"cached_tokens_per_rank", sh.cached},
          {"seconds", sig(seconds)}};
}

json inference_json(const Job& full, const Serving& sv) {
  const double cap = usable_memory(full);
  const int64_t kv = sv.per_dp * sv.kv_seq_rank;
  const int64_t total = sv.fp.weights_per_rank + sv.act + kv;
  const Mix mix = mix_of(full.serving);
  json it = {{"prefill", iteration_json(*sv.prefill, sv.pshape, sv.t_prefill)},
             {"decode", iteration_json(*sv.decode, sv.dshape, sv.t_decode)}};
  if (sv.mixed) it["mixed"] = iteration_json(*sv.mixed, sv.mshape, sv.t_mixed);
  json out = {
      {"kv_cache_bytes_per_token", sv.fp.kv_token_model},
      {"kv_cache_bytes_per_sequence", seq_model_bytes(full, sv.fp, mix)},
      {"kv_cache_bytes_per_token_per_rank", sv.fp.kv_token_per_rank},
      {"max_concurrent_sequences", sv.max_concurrency},
      {"concurrency", sv.concurrency},
      {"weights_bytes_per_rank", sv.fp.weights_per_rank},
      {"memory_bytes_per_rank",
       {{"weights", sv.fp.weights_per_rank},
        {"kv_cache", kv},
        {"activations", sv.act},
        {"total", total},
        {"capacity", static_cast<int64_t>(cap)},
        {"free", static_cast<int64_t>(cap) - total}}},
      {"ttft_seconds", sig(sv.ttft)},
      {"tpot_seconds", sig(sv.tpot)},
      {"itl_seconds", sig(sv.itl)},
      {"tokens_per_second_per_gpu", sig(sv.tps_gpu)},
      {"tokens_per_second_per_user", sig(sv.tpot > 0 ? 1.0 / sv.tpot : 0)},
      {"gpus", sv.gpus},
      {"prefill_chunks", sv.chunks},
      {"iterations", it},
  };
  if (full.serving.disaggregated) out["kv_transfer_seconds"] = sig(sv.t_transfer);
  if (sv.fp.state_model > 0) {  // a hybrid model's Mamba state (docs/inference.md, "Hybrid models")
    int64_t rank = 0;
    for (int64_t x : sv.fp.stage_state) rank = std::max(rank, x);
    out["state_cache_bytes_per_sequence"] = sv.fp.state_model;
    out["state_cache_bytes_per_sequence_per_rank"] = rank;
  }
  if (!full.serving.requests.empty()) {
    json classes = json::array();
    for (size_t i = 0; i < mix.classes.size(); ++i) {
      const RequestClass& c = mix.classes[i];
      const int64_t slots = ceil_div(c.prompt_tokens + c.output_tokens, full.serving.page_tokens) *
                            full.serving.page_tokens;
      classes.push_back({{"prompt_tokens", c.prompt_tokens},
                         {"output_tokens", c.output_tokens},
                         {"share", sig(mix.share[i])},
                         {"kv_cache_bytes_per_sequence",
                          full.model.sliding_window > 0
                              ? static_cast<int64_t>(windowed_bytes(full, sv.fp.model_caches,
                                                                    c.prompt_tokens + c.output_tokens))
                              : slots * sv.fp.kv_token_model},
                         {"prefill_seconds", sig(sv.classes[i].t_prefill)},
                         {"ttft_seconds", sig(sv.classes[i].ttft)}});
    }
    out["requests"] = classes;
  }
  return out;
}

// ---- Workloads (docs/inference.md, "Workload") -------------------------

Result<double> probe(const ServeBackend& be, BuiltJob& s, const Shape& sh) {
  SC_RETURN_IF_ERROR(lower_kind(s, sh));
  return step_seconds(be, s);
}

serve::SchedulerParams scheduler_params(const Job& full, const Serving& sv) {
  const ServingConfig& cfg = full.serving;
  serve::SchedulerParams p;
  const SchedulerConfig& sc = cfg.scheduler;
  p.policy = sc.policy == SchedulerConfig::Policy::kSarathi        ? serve::SchedulerParams::Policy::kSarathi
             : sc.policy == SchedulerConfig::Policy::kPrefillFirst ? serve::SchedulerParams::Policy::kPrefillFirst
                                                                   : serve::SchedulerParams::Policy::kVllm;
  p.scheduler_steps = sc.scheduler_steps;
  p.chunked_prefill = sc.chunked_prefill;
  p.admission = sc.admission == SchedulerConfig::Admission::kReserve      ? serve::SchedulerParams::Admission::kReserve
                : sc.admission == SchedulerConfig::Admission::kGuaranteed ? serve::SchedulerParams::Admission::kGuaranteed
                                                                          : serve::SchedulerParams::Admission::kGreedy;
  p.token_budget = sc.policy == SchedulerConfig::Policy::kSarathi ? sc.chunk_tokens : sc.max_num_batched_tokens;
  p.max_num_seqs = sc.max_num_seqs;
  p.page_tokens = cfg.page_tokens;
  const double free = usable_memory(full) - static_cast<double>(sv.fp.weights_per_rank + sv.act);
  const double page = static_cast<double>(cfg.page_tokens * sv.fp.kv_token_per_rank);
  p.blocks_per_rank = free > 0 && page > 0 ? static_cast<int64_t>(std::floor(free / page)) : 0;
  // A hybrid model's Mamba state: whole pages each running sequence holds
  // beside its KV pages (as vLLM's hybrid allocator gives it pages of the
  // KV page's size).
  int64_t state = 0;
  for (int64_t b : sv.fp.stage_state) state = std::max(state, b);
  if (state > 0 && page > 0) p.state_blocks = static_cast<int64_t>(std::ceil(static_cast<double>(state) / page));
  // A model with no attention layer (Mamba only) has no KV cache: a
  // sequence holds its fixed state and nothing per token. Its "page" is
  // then one state slot, held whole from the first token (a page of more
  // tokens than any request has), so the pages per rank are the states
  // that fit (docs/inference.md, "Hybrid models").
  if (state > 0 && !(page > 0)) {
    p.page_tokens = int64_t{1} << 31;
    p.blocks_per_rank = free > 0 ? static_cast<int64_t>(std::floor(free / static_cast<double>(state))) : 0;
  }
  p.dp = serving_pool_job(full, false).parallel.dp;
  p.lockstep = full.model.is_moe() && p.dp > 1;
  p.replicas = cfg.replicas;
  p.slo_ttft = cfg.slo.ttft_seconds_p99;
  p.slo_tpot = cfg.slo.tpot_seconds_p99;
  p.prefix_hit_rate = cfg.workload.prefix_cache_hit_rate;
  p.speculative_tokens = sc.speculative_tokens;
  p.acceptance_rate = sc.acceptance_rate;
  p.request_overhead = sc.request_overhead_seconds;
  p.seed = cfg.workload.seed;
  return p;
}

// The iteration cost as a function of the batch (serve::CostModel): the
// prefill and decode iterations simulated at a grid of token counts with
// no attention work, and attention's cost per query-key pair and per
// cached token from three more; the states are lowered back to the
// iterations the traces show afterwards.
Result<serve::CostModel> cost_model(const Job& full, Serving& sv, const serve::SchedulerParams& p,
                                    const ServeBackend& be) {
  serve::CostModel m;
  const int64_t top = std::max(p.token_budget, p.max_num_seqs * (1 + p.speculative_tokens));
  for (int64_t x = 1;;) {
    m.grid.push_back(x);
    if (x >= top) break;
    const int64_t half = x / 2;  // two points per octave: 1 2 3 4 6 8 12 16 ...
    x = (x >= 2 && (x & (x - 1)) == 0) ? x + half : (x < 2 ? 2 : (x / 3) * 4);
  }
  BuiltJob& pre = *sv.prefill;
  BuiltJob& dec = *sv.decode;
  for (int64_t x : m.grid) {
    SC_ASSIGN_OR_RETURN(double tp, probe(be, pre, Shape{x, 1, 1, 1}));
    m.prefill_base.push_back(tp);
    if (x <= p.max_num_seqs * (1 + p.speculative_tokens) * 3 / 2 + 1) {
      SC_ASSIGN_OR_RETURN(double td, probe(be, dec, Shape{x, 1, 1, x}));
      m.decode_base.push_back(td);
    } else {
      m.decode_base.push_back(tp);  // never read: at most max_num_seqs rows are sampled
    }
  }
  const int64_t big = int64_t{1} << 24;
  SC_ASSIGN_OR_RETURN(double p0, probe(be, pre, Shape{1, 1, 1, 1}));
  SC_ASSIGN_OR_RETURN(double pp, probe(be, pre, Shape{1, 1, big, 1}));
  SC_ASSIGN_OR_RETURN(double d0, probe(be, dec, Shape{1, 1, 1, 1}));
  SC_ASSIGN_OR_RETURN(double dpair, probe(be, dec, Shape{1, 1, big, 1}));
  SC_ASSIGN_OR_RETURN(double dc, probe(be, dec, Shape{1, big, 1, 1}));
  m.seconds_per_prefill_pair = std::max(0.0, pp - p0) / static_cast<double>(big - 1);
  m.seconds_per_decode_pair = std::max(0.0, dpair - d0) / static_cast<double>(big - 1);
  m.seconds_per_cached = std::max(0.0, dc - d0) / static_cast<double>(big - 1);
  SC_RETURN_IF_ERROR(lower_kind(pre, sv.pshape));
  SC_RETURN_IF_ERROR(lower_kind(dec, sv.dshape));
  m.step_overhead = full.serving.scheduler.step_overhead_seconds;
  m.per_sampled_overhead = full.serving.scheduler.token_overhead_seconds;
  // The engines whose scheduler is prefill_first (vLLM V0, SGLang <= 0.3)
  // capture CUDA graphs for decode batches only: an iteration with prompt
  // tokens launches every kernel and collective from Python. Its floor is
  // the prefill iteration's launches per rank (the busiest stage's nodes)
  // at kEagerLaunchSeconds each (docs/inference.md, "Cost of an iteration").
  if (p.policy == serve::SchedulerParams::Policy::kPrefillFirst) {
    size_t launches = 0;
    for (int64_t st = 0; st < pre.num_stages(); ++st) launches = std::max(launches, pre.program_of(st).nodes.size());
    m.eager_floor = static_cast<double>(launches) * serve::kEagerLaunchSeconds;
  }
  return m;
}

json pct_json(const char* name, const serve::Percentiles& p, json* out) {
  const std::string n = name;
  (*out)[n + "_mean"] = sig(p.mean);
  (*out)[n + "_p50"] = sig(p.p50);
  (*out)[n + "_p90"] = sig(p.p90);
  (*out)[n + "_p99"] = sig(p.p99);
  return *out;
}

int64_t max_context(const Job& job) {
  return job.model.max_positions > 0 ? job.model.max_positions : limits::kMaxSeqLen;
}

// The workload's figures into the inference block: percentiles under
// explicit keys, the rest in inference.workload.
void workload_json(const Job& full, const serve::WorkloadResult& r, const serve::SchedulerParams& p,
                   const serve::CostModel& m, const Serving& sv, json* inf) {
  pct_json("ttft_seconds", r.ttft, inf);
  pct_json("tpot_seconds", r.tpot, inf);
  pct_json("itl_seconds", r.itl, inf);
  pct_json("e2e_seconds", r.e2e, inf);
  pct_json("queue_seconds", r.queue, inf);
  json kv = json::array();
  for (const auto& [t, u] : r.kv_utilization) kv.push_back({sig(t), sig(u)});
  json w = {{"requests", static_cast<int64_t>(r.requests.size())},
            {"makespan_seconds", sig(r.makespan)},
            {"iterations", r.iterations},
            {"preemptions", r.preemptions},
            {"output_tokens", r.output_tokens},
            {"requests_per_second", sig(r.request_throughput)},
            {"output_tokens_per_second", sig(r.output_tokens_per_second)},
            {"output_tokens_per_second_per_gpu", sig(r.output_tokens_per_second / static_cast<double>(sv.gpus))},
            {"kv_cache_pages_per_rank", p.blocks_per_rank},
            {"kv_cache_utilization_mean", sig(r.kv_utilization_mean)},
            {"kv_cache_utilization_max", sig(r.kv_utilization_max)},
            {"kv_cache_utilization", kv},
            {"scheduler",
             {{"policy", p.policy == serve::SchedulerParams::Policy::kSarathi        ? "sarathi"
                         : p.policy == serve::SchedulerParams::Policy::kPrefillFirst ? "prefill_first"
                                                                                     : "vllm"},
              {"token_budget", p.token_budget},
              {"max_num_seqs", p.max_num_seqs},
              {"dp_lockstep", p.lockstep}}},
            {"cost_model",
             {{"seconds_per_prefill_pair", sig(m.seconds_per_prefill_pair)},
              {"seconds_per_decode_pair", sig(m.seconds_per_decode_pair)},
              {"seconds_per_cached_token", sig(m.seconds_per_cached)},
              {"grid_points", static_cast<int64_t>(m.grid.size())}}}};
  if (p.scheduler_steps > 1) w["scheduler"]["scheduler_steps"] = p.scheduler_steps;
  if (!p.chunked_prefill) w["scheduler"]["chunked_prefill"] = false;
  if (full.serving.scheduler.admission != SchedulerConfig::Admission::kGreedy)
    w["scheduler"]["admission"] = admission_name(full.serving.scheduler.admission);
  if (m.eager_floor > 0) w["cost_model"]["eager_prefill_floor_seconds"] = sig(m.eager_floor);
  if (full.serving.slo.present) {
    w["goodput_requests_per_second"] = sig(r.goodput);
  }
  if (r.requests.size() <= 32) {
    json per = json::array();
    for (const serve::RequestResult& q : r.requests)
      per.push_back({{"arrival_seconds", sig(q.arrival)},
                     {"prompt_tokens", q.prompt},
                     {"output_tokens", q.output},
                     {"ttft_seconds", sig(q.ttft())},
                     {"tpot_seconds", sig(q.tpot())},
                     {"e2e_seconds", sig(q.e2e())},
                     {"queue_seconds", sig(q.queue())},
                     {"preemptions", q.preemptions}});
    w["per_request"] = per;
  }
  (*inf)["workload"] = w;
}

// The memory a workload run holds, estimated from its drawn requests before
// it runs (docs/inference.md, "Workload"): per request its record and live
// state (256 bytes), per output token one inter-token gap (a double, 16
// bytes with the vector's growth), per iteration its KV-utilisation span
// (64 bytes with growth); the iterations without preemption are at most
// the output tokens plus the prompt chunks. Refused past the engine budget
// (ServeBackend::max_engine_bytes, api/budget.h: 2 GiB in the browser, the
// CLI's 8 GiB or --allow-large's),
// so the wasm module never runs out of memory mid-run.
Status check_workload_budget(const std::vector<serve::Request>& reqs, const serve::SchedulerParams& p,
                             int64_t limit) {
  double tokens = 0, iterations = 0;
  const double chunk = static_cast<double>(std::max<int64_t>(1, p.token_budget));
  for (const serve::Request& r : reqs) {
    tokens += static_cast<double>(r.output);
    iterations += static_cast<double>(r.output) + std::ceil(static_cast<double>(r.prompt) / chunk);
  }
  iterations = std::min(iterations, static_cast<double>(p.max_iterations));
  const double bytes = 256.0 * static_cast<double>(reqs.size()) + 16.0 * tokens + 64.0 * iterations;
  if (bytes <= static_cast<double>(limit)) return ok_status();
  return make_error(ErrorCode::kTooLarge,
                    "this workload needs about " + human_bytes(static_cast<int64_t>(bytes)) + " of engine memory (" +
                        to_string(static_cast<int64_t>(reqs.size())) + " requests, " +
                        to_string(static_cast<int64_t>(tokens)) +
                        " output tokens, one inter-token gap each); the budget is " + human_bytes(limit) +
                        ": fewer requests (serving.workload.requests or duration_seconds) or shorter outputs",
                    "serving.workload");
}

Result<serve::WorkloadResult> run_workload(const Job& full, const serve::CostModel& m, const serve::SchedulerParams& p,
                                           double rate_scale, int64_t requests_cap, const ServeBackend& be) {
  ServingConfig cfg = full.serving;
  if (requests_cap > 0) {
    cfg.workload.requests = requests_cap;
    cfg.workload.duration_seconds = 0;
  }
  SC_ASSIGN_OR_RETURN(std::vector<serve::Request> reqs, serve::make_requests(cfg, max_context(full), rate_scale));
  SC_RETURN_IF_ERROR(check_workload_budget(reqs, p, be.max_engine_bytes));
  return serve::simulate_workload(reqs, m, p);
}

}  // namespace

namespace serve {

Result<ServingBuild> build_serving(const Job& job, const ServeBackend& be) {
  Serving sv;
  SC_RETURN_IF_ERROR(plan(job, &sv, job.serving.concurrency, /*strict=*/true, be));
  ServingBuild out;
  out.inference = inference_json(job, sv);
  if (job.serving.workload.present) {
    const serve::SchedulerParams p = scheduler_params(job, sv);
    SC_ASSIGN_OR_RETURN(serve::CostModel m, cost_model(job, sv, p, be));
    SC_ASSIGN_OR_RETURN(serve::WorkloadResult r, run_workload(job, m, p, 1.0, 0, be));
    workload_json(job, r, p, m, sv, &out.inference);
  }
  out.prefill = std::move(sv.prefill);
  out.decode = std::move(sv.decode);
  out.mixed = std::move(sv.mixed);
  return out;
}

Result<std::vector<ServingPoint>> serving_sweep(const Job& full, const ServeBackend& be,
                                                const std::vector<int64_t>& concurrency) {
  const int64_t dp = serving_pool_job(full, false).parallel.dp;
  std::vector<ServingPoint> out;
  Serving sv;
  for (size_t i = 0; i < concurrency.size(); ++i) {
    const int64_t c = concurrency[i];
    if (c < 1 || c > limits::kMaxMicroBatch || c % dp != 0)
      return make_error(ErrorCode::kInvalidArgument,
                        "must be a multiple of the decode pool's dp (" + to_string(dp) + ") in [1, " +
                            to_string(limits::kMaxMicroBatch) + "] (got " + to_string(c) + ")",
                        "concurrency[" + to_string(i) + "]");
    SC_RETURN_IF_ERROR(plan(full, &sv, c, /*strict=*/false, be));
    ServingPoint p;
    p.concurrency = c;
    p.fits = sv.fits;
    p.ttft_seconds = sig(sv.ttft);
    p.tpot_seconds = sig(sv.tpot);
    p.tokens_per_second_per_gpu = sig(sv.tps_gpu);
    p.tokens_per_second_per_user = sig(sv.tpot > 0 ? 1.0 / sv.tpot : 0);
    p.itl_seconds = sig(sv.itl);
    out.push_back(p);
  }
  return out;
}

}  // namespace serve

std::string serving_sweep_json(const std::vector<ServingPoint>& points) {
  json a = json::array();
  for (const ServingPoint& p : points)
    a.push_back({{"concurrency", p.concurrency},
                 {"fits", p.fits},
                 {"ttft_seconds", p.ttft_seconds},
                 {"tpot_seconds", p.tpot_seconds},
                 {"tokens_per_second_per_gpu", p.tokens_per_second_per_gpu},
                 {"tokens_per_second_per_user", p.tokens_per_second_per_user},
                 {"itl_seconds", p.itl_seconds}});
  return a.dump();
}

namespace serve {

Status capacity_searchable(const Job& job) {
  if (job.serving.disaggregated)
    return make_error(ErrorCode::kUnsupported, "the capacity search simulates colocated serving only",
                      "serving.disaggregated");
  const WorkloadConfig& w = job.serving.workload;
  if (w.present && (w.arrival == WorkloadConfig::Arrival::kTrace || w.arrival == WorkloadConfig::Arrival::kBurst))
    return make_error(ErrorCode::kInvalidArgument,
                      std::string("the capacity search varies the arrival rate: it needs poisson or fixed arrivals (got ") +
                          (w.arrival == WorkloadConfig::Arrival::kTrace ? "trace" : "burst") + ")",
                      "serving.workload.arrival");
  return ok_status();
}

// Everything before the capacity search's first run: the job with its
// workload at rate 1 and n requests, its plan, scheduler and cost model,
// and the drawn requests checked (each can finish on an idle rank, the
// run fits the engine's memory budget). A layout whose model or requests
// do not fit fails here, before anything is simulated.
struct CapacitySetup {
  Job job;
  Serving sv;
  SchedulerParams p;
  CostModel m;
  int64_t n = 0;
};

Result<CapacitySearch> prepare_capacity(const Job& full, const ServeBackend& be, int64_t requests) {
  SC_RETURN_IF_ERROR(capacity_searchable(full));
  auto out = std::make_shared<CapacitySetup>();
  out->job = full;
  WorkloadConfig& w = out->job.serving.workload;
  if (requests < 0 || requests > kMaxWorkloadRequests)
    return make_error(ErrorCode::kInvalidArgument,
                      "must be in [0, " + to_string(kMaxWorkloadRequests) + "] (got " + to_string(requests) + ")",
                      "requests");
  out->n = requests > 0 ? requests : (w.present && w.requests > 0 ? w.requests : 1000);
  if (!w.present) {
    w = WorkloadConfig{};
    w.present = true;
  }
  w.rate = 1.0;  // rate_scale is then the rate itself
  w.requests = out->n;
  w.duration_seconds = 0;
  SC_RETURN_IF_ERROR(plan(out->job, &out->sv, out->job.serving.concurrency, /*strict=*/false, be));
  out->p = scheduler_params(out->job, out->sv);
  SC_ASSIGN_OR_RETURN(out->m, cost_model(out->job, out->sv, out->p, be));
  // The same draws at every rate (only their spacing changes): checked once.
  SC_ASSIGN_OR_RETURN(std::vector<Request> reqs,
                      make_requests(out->job.serving, max_context(out->job), 1.0));
  SC_RETURN_IF_ERROR(check_workload_budget(reqs, out->p, be.max_engine_bytes));
  SC_RETURN_IF_ERROR(check_requests(reqs, out->p));
  return CapacitySearch(std::move(out));
}

Result<CapacityResult> serving_capacity(const Job& full, const ServeBackend& be, double slo_ttft, double slo_tpot,
                                        int64_t requests) {
  SC_ASSIGN_OR_RETURN(CapacitySearch search, prepare_capacity(full, be, requests));
  return serving_capacity(search, be, slo_ttft, slo_tpot);
}

Result<CapacityResult> serving_capacity(const CapacitySearch& search, const ServeBackend& be, double slo_ttft,
                                        double slo_tpot) {
  const CapacitySetup& s = search.setup();
  if (!(slo_ttft > 0) && !(slo_tpot > 0)) {  // neither given: the job's serving.slo
    slo_ttft = s.job.serving.slo.ttft_seconds_p99;
    slo_tpot = s.job.serving.slo.tpot_seconds_p99;
  }
  if (!(slo_ttft > 0) && !(slo_tpot > 0))
    return make_error(ErrorCode::kInvalidArgument,
                      "give a P99 TTFT or TPOT target (seconds > 0), or both, or a serving.slo block in the job",
                      "serving.slo.ttft_seconds_p99");
  const Job& job = s.job;
  const int64_t n = s.n;
  SchedulerParams p = s.p;
  p.slo_ttft = slo_ttft;
  p.slo_tpot = slo_tpot;
  const CostModel& m = s.m;
  const Serving& sv = s.sv;
  CapacityResult out;
  out.slo_ttft = slo_ttft;
  out.slo_tpot = slo_tpot;
  out.requests = n;
  out.gpus = sv.gpus;
  auto run = [&](double rate) -> Result<CapacityPoint> {
    SC_ASSIGN_OR_RETURN(serve::WorkloadResult r, run_workload(job, m, p, rate, 0, be));
    ++out.simulations;
    CapacityPoint c;
    c.rate = rate;
    c.ttft_p50 = r.ttft.p50;
    c.ttft_p99 = r.ttft.p99;
    c.tpot_p50 = r.tpot.p50;
    c.tpot_p99 = r.tpot.p99;
    c.output_tokens_per_second = r.output_tokens_per_second;
    c.e2e_p99 = r.e2e.p99;
    c.meets_slo = (!(slo_ttft > 0) || r.ttft.p99 <= slo_ttft) && (!(slo_tpot > 0) || r.tpot.p99 <= slo_tpot);
    return c;
  };
  // Bracket: double from 1 request/s while the SLOs hold, or halve until
  // they do; then bisect to 0.5 % of the rate.
  double lo = 0, hi = 1;
  SC_ASSIGN_OR_RETURN(CapacityPoint first, run(hi));
  if (first.meets_slo) {
    while (hi < 1e6) {
      SC_ASSIGN_OR_RETURN(CapacityPoint c, run(hi * 2));
      if (!c.meets_slo) {
        lo = hi;
        hi *= 2;
        break;
      }
      hi *= 2;
      lo = hi;
    }
  } else {
    while (hi > 1e-4) {
      SC_ASSIGN_OR_RETURN(CapacityPoint c, run(hi / 2));
      if (c.meets_slo) {
        lo = hi / 2;
        break;
      }
      hi /= 2;
    }
  }
  if (lo > 0) {
    for (int i = 0; i < 30 && hi - lo > 0.005 * hi; ++i) {
      const double mid = (lo + hi) / 2;
      SC_ASSIGN_OR_RETURN(CapacityPoint c, run(mid));
      (c.meets_slo ? lo : hi) = mid;
    }
  }
  out.capacity = sig(lo);
  const double ref = lo > 0 ? lo : hi;
  for (double f : {0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5}) {
    SC_ASSIGN_OR_RETURN(CapacityPoint c, run(sig(ref * f)));
    out.curve.push_back(c);
    if (f == 1.0) out.reference = c;
    if (f == 1.0 && lo > 0) {
      out.e2e_p99_at_capacity = c.e2e_p99;
      out.short_run = static_cast<double>(n) / lo < kSteadyRunLatencies * c.e2e_p99;
    }
  }
  return out;
}

}  // namespace serve

std::string serving_capacity_json(const CapacityResult& r) {
  json curve = json::array();
  for (const CapacityPoint& c : r.curve)
    curve.push_back({{"requests_per_second", sig(c.rate)},
                     {"ttft_seconds_p50", sig(c.ttft_p50)},
                     {"ttft_seconds_p99", sig(c.ttft_p99)},
                     {"tpot_seconds_p50", sig(c.tpot_p50)},
                     {"tpot_seconds_p99", sig(c.tpot_p99)},
                     {"output_tokens_per_second", sig(c.output_tokens_per_second)},
                     {"meets_slo", c.meets_slo}});
  json j = {{"capacity_requests_per_second", sig(r.capacity)},
            {"capacity_requests_per_second_per_gpu", sig(r.gpus > 0 ? r.capacity / static_cast<double>(r.gpus) : 0)},
            {"slo", {{"ttft_seconds_p99", sig(r.slo_ttft)}, {"tpot_seconds_p99", sig(r.slo_tpot)}}},
            {"requests_per_run", r.requests},
            {"gpus", r.gpus},
            {"simulations", r.simulations},
            {"curve", curve}};
  // Not even requests alone (the lowest rate the search tries) meet the
  // targets: the curve then runs around that rate.
  if (!(r.capacity > 0)) j["no_rate_meets_slo"] = true;
  if (r.short_run) {
    j["short_run"] = true;
    j["run_seconds_at_capacity"] = sig(static_cast<double>(r.requests) / r.capacity);
    j["e2e_seconds_p99_at_capacity"] = sig(r.e2e_p99_at_capacity);
  }
  return j.dump();
}

}  // namespace sc
