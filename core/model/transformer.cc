#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "graph/ops.h"

namespace sc {
namespace {

Expr S(const std::string& n) { return Expr::sym(n); }

class Builder {
 public:
  Builder(const ModelConfig& m, const BuildOptions& o) : m_(m), o_(o) {}

  int input(const std::string& name, std::vector<Dim> dims, DType dt) {
    Tensor t = make_tensor(name, std::move(dims), dt, TensorKind::kInput);
    int id = g_.add_tensor(std::move(t));
    shard_batch(id);
    return id;
  }

  // A weight, optionally sharded on tp along the dim labelled `tp_label`.
  // `gemm`: a linear layer's matrix, the only weights a 4-bit format
  // quantizes (AWQ/GPTQ, NVFP4 checkpoints); the others (norms, biases,
  // embeddings, the output head, the router) keep the activations' dtype.
  int weight(const std::string& name, std::vector<Dim> dims, const std::string& tp_label, int layer,
             bool gemm = false) {
    DType dt = o_.has_weight_dtype ? o_.weight_dtype : o_.dtype;
    if (dtype_is_4bit(dt) && !gemm) dt = o_.dtype;
    Tensor t = make_tensor(name, std::move(dims), dt, TensorKind::kWeight);
    t.sharding_fixed = true;
    t.layer = layer;
    int id = g_.add_tensor(std::move(t));
    auto& w = g_.tensors[id];
    for (size_t i = 0; i < w.dims.size(); ++i)
      if (o_.has_tp && w.dims[i].label == tp_label) w.sharding.dim_axis[i] = "tp";
    return id;
  }

  int act(const std::string& name, std::vector<Dim> dims, DType dt, TensorKind k = TensorKind::kActivation) {
    Tensor t = make_tensor(prefix_ + name, std::move(dims), dt, k);
    t.layer = layer_;
    return g_.add_tensor(std::move(t));
  }

  // An op of table entry `def` (graph/ops.h).
  Op op(const std::string& name, const OpDef& def, std::vector<int> in, std::vector<int> out) {
    Op o;
    o.name = prefix_ + name;
    o.def = &def;
    o.kind = def.kind;
    o.fn = def.fn;
    o.layer = layer_;
    o.chunk = chunk_;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    return o;
  }
  int add(Op o) { return g_.add_op(std::move(o)); }

  // Common dims. Batch is global (b*dp) so the dp shard reads "b".
  Dim B() const { return {"b", o_.has_dp ? S("b") * S("dp") : S("b")}; }
  // The sequence: one dim, or under context parallelism two, [c, s/cp]: the
  // cp chunk and the position in it, so that cp and sequence parallelism's
  // tp can shard the sequence at once (c on cp, s on tp). Keys use t/tc.
  std::vector<Dim> seq(const char* s_label = "s", const char* c_label = "c") const {
    if (!o_.has_cp) return {{s_label, S("s")}};
    return {{c_label, S("cp")}, {s_label, S("s") / S("cp")}};
  }
  static std::vector<Dim> cat(std::vector<Dim> a, const std::vector<Dim>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  // [b, sequence..., rest...]
  std::vector<Dim> BS(const std::vector<Dim>& rest) const { return cat(cat({B()}, seq()), rest); }
  // Factor labels of such a tensor; key = the key sequence (t, tc).
  std::vector<std::string> lab(const std::vector<std::string>& rest, bool key = false) const {
    std::vector<std::string> l{"b"};
    if (o_.has_cp) l.push_back(key ? "tc" : "c");
    l.push_back(key ? "t" : "s");
    l.insert(l.end(), rest.begin(), rest.end());
    return l;
  }
  Dim H() const { return {"h", S("h")}; }

  Expr numel(int t) const { return g_.tensors[t].global_numel(); }

  // Pointwise op over x (and optional extra inputs) producing a same-shape
  // tensor (the entry's shape rule), FLOPs by the entry's rule.
  int pointwise(const std::string& name, const OpDef& def, std::vector<int> in, bool sp_region) {
    int y = act(name, g_.tensors[in[0]].dims, g_.tensors[in[0]].dtype);
    Op o = op(name, def, std::move(in), {y});
    o.flops = rule_flops(g_, o);
    o.sp_region = sp_region;
    add(std::move(o));
    return y;
  }

  int dropout(const std::string& name, int x, bool sp_region, const OpDef& def = ops::kDropout) {
    if (!m_.dropout) return x;
    const std::vector<Dim> dims = g_.tensors[x].dims;  // act() grows g_.tensors
    int y = act(name, dims, g_.tensors[x].dtype);
    int mask = act(name + ".mask", dims, DType::kUInt8, TensorKind::kMask);
    Op o = op(name, def, {x}, {y, mask});
    o.flops = rule_flops(g_, o);
    o.sp_region = sp_region;
    add(std::move(o));
    return y;
  }

  // Normalizes over the last dim (h for the residual stream; MLA's latents),
  // or over the last `span` dims (OLMo-2's q/k norms over heads x d): the
  // normalized dims are unsharded (gathered over tp first).
  int norm(const std::string& name, int x, size_t span = 1) {
    const std::vector<Dim> xd = g_.tensors[x].dims;  // weight() grows g_.tensors
    const std::vector<Dim> nd(xd.end() - static_cast<std::ptrdiff_t>(span), xd.end());
    bool ln = m_.norm == NormKind::kLayerNorm;
    std::vector<int> in{x, weight(prefix_ + name + ".weight", nd, "", layer_)};
    if (ln) in.push_back(weight(prefix_ + name + ".bias", nd, "", layer_));
    int y = act(name, xd, o_.dtype);
    Op o = op(name, ln ? ops::kLayerNorm : ops::kRMSNorm, std::move(in), {y});
    o.flops = rule_flops(g_, o);
    for (const Dim& d : nd) o.unshardable.insert(d.label);
    o.sp_region = span == 1 && nd[0].label == "h";
    add(std::move(o));
    return y;
  }

  // RoPE on q or k ([b, s, heads, d]); partial rotary rotates the first
  // rotary_dim ("dro") features of each head only (operator table
  // rope.partial: 3 FLOPs per rotated element, rope_bwd the same).
  int rope(const std::string& name, int x) {
    if (m_.rope_dim() == m_.head_dim) return pointwise(name, ops::kRope, {x}, false);
    const std::vector<Dim> xd = g_.tensors[x].dims;
    int y = act(name, xd, g_.tensors[x].dtype);
    Op o = op(name, ops::kRopePartial, {x}, {y});
    o.flops = B().size * S("s") * xd[xd.size() - 2].size * S("dro") * Expr(ops::kRopePartial.flops_per_element);
    add(std::move(o));
    return y;
  }

  // y[b,s,out] = x[b,s,in] . W[in,out] (+ bias), W sharded on tp along tp_label.
  // force_bias: a bias even when linear_bias is off (Qwen2's q/k/v).
  int linear(const std::string& name, int x, Dim in_dim, std::vector<Dim> out_dims, const std::string& tp_label,
             bool bias_in_sp_region, bool with_bias = true, bool force_bias = false) {
    std::vector<Dim> wdims{in_dim};
    wdims.insert(wdims.end(), out_dims.begin(), out_dims.end());
    int w = weight(prefix_ + name + ".weight", wdims, tp_label, layer_, /*gemm=*/name != "moe.router" && name != "moe.shared_gate");
    std::vector<Dim> ydims = BS({});
    ydims.insert(ydims.end(), out_dims.begin(), out_dims.end());
    int y = act(name, ydims, o_.dtype);
    Op o = op(name, ops::kMatmul, {x, w}, {y});
    o.flops = Expr(2) * numel(x) * numel(w) / in_dim.size;
    o.model_flops = o.flops;
    add(std::move(o));
    if (!(m_.linear_bias || force_bias) || !with_bias) return y;
    std::vector<Dim> bdims(out_dims);
    int bias = weight(prefix_ + name + ".bias", bdims, tp_label, layer_);
    return pointwise(name + ".bias_add", ops::kBiasAdd, {y, bias}, bias_in_sp_region);
  }

  // Standard (MHA/GQA/MQA) projections: q [b,s,a,d], k/v [b,s,kv,d].
  int attention(int x) {
    if (m_.is_mla()) return mla_attention(x);
    Dim qkv{"qkv", S("qkv")};
    int q_k_v = linear("attn.qkv", x, H(), {qkv}, "qkv", false, true, /*force_bias=*/m_.qkv_bias);
    Dim a{"a", S("a")}, kvh{"kv", S("kv")}, d{"d", S("d")};
    int q = act("attn.q", BS({a, d}), o_.dtype);
    int k = act("attn.k", BS({kvh, d}), o_.dtype);
    int v = act("attn.v", BS({kvh, d}), o_.dtype);
    Op split = op("attn.split", ops::kSplit, {q_k_v}, {q, k, v});
    split.out_labels = {lab({"qkv", "d"}), lab({"qkv", "d"}), lab({"qkv", "d"})};
    add(std::move(split));
    if (m_.qk_norm) {  // per-head RMSNorm over d (weights of d, replicated over tp), or over all heads (OLMo-2)
      const size_t span = m_.qk_norm_across_heads ? 2 : 1;
      q = norm("attn.q_norm", q, span);
      k = norm("attn.k_norm", k, span);
    }
    if (m_.position == PositionKind::kRope) {  // learned: at the embedding; none (NoPE): nothing
      q = rope("attn.rope_q", q);
      k = rope("attn.rope_k", k);
    }
    if (o_.inference) return attention_out(cached_attention(q, k, v, d));
    return attention_out(attention_core(q, k, v, d, d));
  }

  // Multi-head latent attention (DeepSeek-V2/V3): queries (optionally) and
  // keys/values pass through low-rank latents; the down projections are
  // replicated over tp, the up projections column-parallel over heads.
  // MLA's query: through the low-rank q_down / q_norm / q_up when the model
  // has q_lora_rank (DeepSeek-V2/V3), else one projection; both forms of
  // attention (decompressed and absorbed) start from it.
  int mla_query(int x, const Dim& a, const Dim& dq) {
    if (m_.q_lora_rank <= 0) return linear("attn.q", x, H(), {a, dq}, "a", false);
    Dim qr{"qr", S("qr")};
    int cq = linear("attn.q_down", x, H(), {qr}, "", false);
    cq = norm("attn.q_norm", cq);
    return linear("attn.q_up", cq, qr, {a, dq}, "a", false);
  }

  // Keys' RoPE part (dr) is one head shared by all heads.
  int mla_attention(int x) {
    if (o_.inference && o_.mla_absorbed) return mla_absorbed_attention(x);
    Dim a{"a", S("a")}, dq{"dq", S("dq")}, dn{"d", S("d")}, dv{"dv", S("dv")}, dr{"dr", S("dr")};
    const int q = mla_query(x, a, dq);
    Dim kvr{"kvr", S("kvr")};
    int ckv = linear("attn.kv_down", x, H(), {kvr}, "", false);
    int kr = linear("attn.k_rope", x, H(), {dr}, "", false);
    ckv = norm("attn.kv_norm", ckv);
    Dim dkv{"dkv", S("d") + S("dv")};
    int kv = linear("attn.kv_up", ckv, kvr, {a, dkv}, "a", false);
    int kn = act("attn.k_nope", BS({a, dn}), o_.dtype);
    int v = act("attn.v", BS({a, dv}), o_.dtype);
    Op split = op("attn.split", ops::kSplit, {kv}, {kn, v});
    split.out_labels = {lab({"a", "dkv"}), lab({"a", "dkv"})};
    add(std::move(split));
    // RoPE on the query's dr part and on the shared key part.
    Expr tokens = B().size * S("s");
    int qr_ = act("attn.rope_q", g_.tensors[q].dims, o_.dtype);
    Op rq = op("attn.rope_q", ops::kRope, {q}, {qr_});
    rq.flops = tokens * S("a") * S("dr") * Expr(ops::kRope.flops_per_element);  // the dr part only
    add(std::move(rq));
    kr = pointwise("attn.rope_k", ops::kRope, {kr}, false);
    if (o_.inference) write_latent(ckv, kr);
    // k = [k_nope | k_rope broadcast over heads].
    int k = act("attn.k", BS({a, dq}), o_.dtype);
    Op cat = op("attn.k_concat", ops::kConcat, {kn, kr}, {k});
    cat.out_labels = {lab({"a", "dq"})};
    add(std::move(cat));
    if (o_.inference) {  // prefill: MHA over the fresh (decompressed) keys and values
      Expr fl = Expr(2) * B().size * S("a") * S("pairs") * (dq.size + dv.size);
      return attention_out(paged_attention({qr_, k, v}, {lab({"a", "dq"}), lab({"a", "dq"}, true), lab({"a", "dv"}, true)},
                                           dv, fl));
    }
    return attention_out(attention_core(qr_, k, v, dq, dv));
  }

  // ---- Inference (serving) --------------------------------------------------
  // A layer's cache: persistent, the batch on dp, heads (if any) on tp.
  int cache(const std::string& name, std::vector<Dim> dims, const std::string& tp_label) {
    return cache_tensor(name, std::move(dims), tp_label, o_.kv_dtype);
  }
  // A persistent per-sequence tensor at `dtype`: the KV cache (above) or a
  // Mamba layer's state (state_cache below).
  int cache_tensor(const std::string& name, std::vector<Dim> dims, const std::string& tp_label, DType dtype) {
    Tensor t = make_tensor(prefix_ + name, std::move(dims), dtype, TensorKind::kCache);
    t.sharding_fixed = true;
    t.layer = layer_;
    int id = g_.add_tensor(std::move(t));
    shard_batch(id);
    auto& c = g_.tensors[id];
    for (size_t i = 0; i < c.dims.size(); ++i)
      if (o_.has_tp && c.dims[i].label == tp_label) c.sharding.dim_axis[i] = "tp";
    return id;
  }

  // The iteration's new entries stored into the cache (at the cache dtype).
  void cache_write(std::vector<int> in, std::vector<std::vector<std::string>> in_labels, std::vector<Dim> dims,
                   std::vector<std::string> out_labels) {
    int w = act("attn.kv_cache_write", std::move(dims), o_.kv_dtype);
    Op o = op("attn.kv_cache_write", ops::kKvCacheWrite, std::move(in), {w});
    o.in_labels = std::move(in_labels);
    o.out_labels = {std::move(out_labels)};
    o.flops = Expr(0);
    add(std::move(o));
  }

  // Attention of the iteration's queries (first input) over keys/values
  // (the cache, or fresh ones): FLOPs given, model FLOPs the same.
  int paged_attention(std::vector<int> in, std::vector<std::vector<std::string>> labels, const Dim& vd, Expr flops) {
    Dim a{"a", S("a")};
    int ctx = act("attn.ctx", BS({a, vd}), o_.dtype);
    Op o = op("attn.paged", ops::kPagedAttention, std::move(in), {ctx});
    o.in_labels = std::move(labels);
    o.unshardable = {"Lk", "t", "kvc"};
    o.flops = flops;
    o.model_flops = flops;
    add(std::move(o));
    return ctx;
  }

  // MHA/GQA/MQA: K and V written to the cache, attention over Lk cached tokens.
  int cached_attention(int q, int k, int v, const Dim& d) {
    Dim kvh{"kv", S("kv")}, Lk{"Lk", S("Lk")};
    cache_write({k, v}, {lab({"a", "d"}), lab({"a", "d"})}, BS({Dim{"g2", Expr(2)}, kvh, d}), lab({"g2", "a", "d"}));
    int kc = cache("attn.k_cache", {B(), Lk, kvh, d}, "kv");
    int vc = cache("attn.v_cache", {B(), Lk, kvh, d}, "kv");
    Expr fl = Expr(2) * B().size * S("a") * S("pairs") * (d.size + d.size);
    return paged_attention({q, kc, vc}, {lab({"a", "d"}), {"b", "Lk", "a", "d"}, {"b", "Lk", "a", "d"}}, d, fl);
  }

  // MLA caches the normalized latent and the RoPE key: kvr + dr per token.
  void write_latent(int ckv, int kr) {
    cache_write({ckv, kr}, {lab({"kvr"}), lab({"dr"})}, BS({Dim{"kvc", S("kvr") + S("dr")}}), lab({"kvc"}));
  }

  // MLA's absorbed form (decode, chunks over a cached prefix): W_UK folded
  // into the query (q_nope . W_UK: per head, dn -> kvr), attention over the
  // latent cache (scores over kvr + dr, values over kvr), W_UV after
  // (kvr -> dv per head); the weights are kv_up's two halves.
  int mla_absorbed_attention(int x) {
    Dim a{"a", S("a")}, dq{"dq", S("dq")}, dn{"d", S("d")}, dv{"dv", S("dv")}, dr{"dr", S("dr")},
        kvr{"kvr", S("kvr")}, Lk{"Lk", S("Lk")};
    const int q = mla_query(x, a, dq);
    int ckv = linear("attn.kv_down", x, H(), {kvr}, "", false);
    int kr = linear("attn.k_rope", x, H(), {dr}, "", false);
    ckv = norm("attn.kv_norm", ckv);
    kr = pointwise("attn.rope_k", ops::kRope, {kr}, false);
    write_latent(ckv, kr);
    int qn = act("attn.q_nope", BS({a, dn}), o_.dtype);
    int qp = act("attn.q_pe", BS({a, dr}), o_.dtype);
    Op split = op("attn.q_split", ops::kSplit, {q}, {qn, qp});
    split.out_labels = {lab({"a", "dq"}), lab({"a", "dq"})};
    add(std::move(split));
    qp = pointwise("attn.rope_q", ops::kRope, {qp}, false);
    const Expr tokens = B().size * S("s");
    int wuk = weight(prefix_ + "attn.kv_up_k.weight", {kvr, a, dn}, "a", layer_);
    int ql = act("attn.q_latent", BS({a, kvr}), o_.dtype);
    Op absorb = op("attn.q_absorb", ops::kMatmul, {qn, wuk}, {ql});
    absorb.in_labels = {lab({"a", "d"}), {"kvr", "a", "d"}};
    absorb.flops = Expr(2) * tokens * S("a") * S("d") * S("kvr");
    absorb.model_flops = absorb.flops;
    add(std::move(absorb));
    int lc = cache("attn.latent_cache", {B(), Lk, Dim{"kvc", S("kvr") + S("dr")}}, "");
    Expr fl = Expr(2) * B().size * S("a") * S("pairs") * (S("kvr") + S("dr")) +
              Expr(2) * B().size * S("a") * S("pairs") * S("kvr");
    int cl = paged_attention({ql, qp, lc}, {lab({"a", "kvr"}), lab({"a", "dr"}), {"b", "Lk", "kvc"}}, kvr, fl);
    int wuv = weight(prefix_ + "attn.kv_up_v.weight", {kvr, a, dv}, "a", layer_);
    int ctx = act("attn.ctx_v", BS({a, dv}), o_.dtype);
    Op up = op("attn.v_absorb", ops::kMatmul, {cl, wuv}, {ctx});
    up.in_labels = {lab({"a", "kvr"}), {"kvr", "a", "dv"}};
    up.flops = Expr(2) * tokens * S("a") * S("kvr") * S("dv");
    up.model_flops = up.flops;
    add(std::move(up));
    return attention_out(ctx);
  }

  // Logits of the sampled tokens only (the sampler itself is not modelled).
  void serving_head(int x, int wout) {
    Dim n{"n", S("n")}, V{"V", S("V")};
    int sel = act("output.select", {B(), n, H()}, o_.dtype);
    Op so = op("output.select", ops::kTokenSelect, {x}, {sel});
    so.in_labels = {lab({"h"})};
    so.out_labels = {{"b", "n", "h"}};
    so.unshardable = {"s", "n"};
    add(std::move(so));
    int logits = act("output.logits", {B(), n, V}, o_.dtype);
    Op lo = op("output.logits", ops::kMatmul, {sel, wout}, {logits});
    lo.in_labels = {{"b", "n", "h"}, {"V", "h"}};
    lo.flops = Expr(2) * B().size * S("n") * S("h") * S("V");
    lo.model_flops = lo.flops;
    add(std::move(lo));
  }

  // Scores, softmax, (dropout) and the weighted sum, or one fused op
  // (flash / ring): q [b,s,a,qk], k [b,s,h',qk], v [b,s,h',vd] -> [b,s,a,vd].
  // K and V heads are labelled "a" inside attention: a kv head serves a/kv
  // query heads, and both split over tp together.
  int attention_core(int q, int k, int v, const Dim& qk, const Dim& vd) {
    Dim a{"a", S("a")};
    const std::vector<std::string> q_lab = lab({"a", qk.label}), k_lab = lab({"a", qk.label}, true),
                                   v_lab = lab({"a", vd.label}, true);
    // Full attention counts every query against all s keys (the causal
    // mask's upper triangle included, Megatron's convention).
    // A windowed layer's kernel visits only the causal band: query i sees
    // min(i + 1, w) keys, wk = sum over i of that (bound by model_bindings;
    // s^2 when the window covers the sequence), and stores w score columns
    // per query (a band of s x w, "w" = min(s, window)).
    const bool windowed = m_.layer_windowed(layer_);
    const Expr keys = windowed ? S("wk") : S("s") * S("s");
    Expr scores_flops = Expr(2) * B().size * S("a") * keys * qk.size;
    Expr values_flops = Expr(2) * B().size * S("a") * keys * vd.size;
    const std::vector<Dim> key_dims = windowed ? std::vector<Dim>{{"w", S("w")}} : seq("t", "tc");
    const std::set<std::string> key_labels = windowed ? std::set<std::string>{"w"}
                                                      : std::set<std::string>{"t", "tc"};
    int ctx = act("attn.ctx", BS({a, vd}), o_.dtype);
    // A fused kernel with the causal mask skips the key blocks above the
    // diagonal: it executes half the square (FlashAttention's own FLOP count
    // for causal runs), while the model FLOPs keep the full square. Context
    // parallelism splits the sequence into 2 cp chunks, rank i holding chunks
    // i and 2cp-1-i (Llama 3, Megatron-LM), so every rank executes the same
    // half of its s/cp x s share. A windowed layer already counts its band.
    // ("wx": the band's keys, or s^2 / 2 when the window covers the sequence.)
    const Expr fused_flops = windowed ? Expr(2) * B().size * S("a") * S("wx") * (qk.size + vd.size)
                                      : (scores_flops + values_flops) / Expr(2);
    if (o_.cp_ring) {
      // Ring attention (flash-style blocks): K/V keep their sequence shard;
      // the key axis is the query's "s", so nothing is gathered.
      int lse = act("attn.lse", cat({B(), a}, seq()), DType::kFP32);
      Op o = op("attn.ring", ops::kRingAttention, {q, k, v}, {ctx, lse});
      o.in_labels = {q_lab, lab({"a", qk.label}), lab({"a", vd.label})};
      o.flops = fused_flops;
      o.model_flops = scores_flops + values_flops;
      o.ring_axis = "cp";
      add(std::move(o));
    } else if (m_.flash_attention) {
      int lse = act("attn.lse", cat({B(), a}, seq()), DType::kFP32);
      Op o = op("attn.flash", ops::kFlashAttention, {q, k, v}, {ctx, lse});
      o.in_labels = {q_lab, k_lab, v_lab};
      o.unshardable = {"t", "tc"};
      o.flops = fused_flops;
      o.model_flops = scores_flops + values_flops;
      add(std::move(o));
    } else {
      // Scores [b, a, s, keys]: s x s, or the s x w band of a windowed layer.
      int scores = act("attn.scores", cat(cat({B(), a}, seq()), key_dims), o_.dtype);
      Op qk_op = op("attn.qk", ops::kAttentionScores, {q, k}, {scores});
      qk_op.in_labels = {q_lab, k_lab};
      qk_op.flops = scores_flops;
      qk_op.model_flops = scores_flops;
      add(std::move(qk_op));
      if (m_.attn_softcap > 0) scores = pointwise("attn.softcap", ops::kAttentionSoftcap, {scores}, false);
      int probs = act("attn.softmax", cat(cat({B(), a}, seq()), key_dims), o_.dtype);
      Op sm = op("attn.softmax", ops::kSoftmax, {scores}, {probs});
      sm.flops = rule_flops(g_, sm);
      sm.unshardable = key_labels;
      add(std::move(sm));
      probs = dropout("attn.softmax_dropout", probs, false, ops::kAttentionDropout);
      Op av = op("attn.av", ops::kAttentionValues, {probs, v}, {ctx});
      av.in_labels = {{}, v_lab};
      av.flops = values_flops;
      av.model_flops = values_flops;
      add(std::move(av));
    }
    return ctx;
  }

  // Heads merged, then the row-parallel output projection.
  int attention_out(int ctx) {
    const Dim vd = g_.tensors[ctx].dims.back();
    Dim ad{"ad", S("a") * vd.size};
    int merged = act("attn.ctx_merged", BS({ad}), o_.dtype);
    Op view = op("attn.merge_heads", ops::kMerge, {ctx}, {merged});
    view.out_labels = {lab({"a"})};
    add(std::move(view));
    int out = linear("attn.proj", merged, ad, {H()}, "ad", true);
    return dropout("attn.dropout", out, true);
  }

  // The dense MLP: width f, or a named width (the shared experts' fs).
  int mlp(int x, const std::string& width = "f", const std::string& prefix = "mlp") {
    Dim f{width, S(width)};
    int y;
    if (m_.gated_mlp()) {
      int gu = linear(prefix + ".fc1", x, H(), {Dim{"g2", Expr(2)}, f}, width, false);
      y = swiglu(prefix + gated_suffix(), gu);
    } else {
      int h1 = linear(prefix + ".fc1", x, H(), {f}, width, false);
      y = activation(prefix, h1);
    }
    int out = linear(prefix + ".fc2", y, f, {H()}, width, true);
    return dropout(prefix + ".dropout", out, true);
  }

  // The non-gated MLP's activation: GeLU, or squared ReLU (Nemotron-H).
  int activation(const std::string& prefix, int h1) {
    if (m_.mlp == MlpKind::kReLU2) return pointwise(prefix + ".relu2", ops::kReLU2, {h1}, false);
    return pointwise(prefix + ".gelu", ops::kGelu, {h1}, false);
  }

  // The depthwise causal conv (width k) of both Mamba mixers over the
  // channels c of `in`, with its weight and bias split over tp with the
  // channels; SiLU included in its FLOPs.
  int causal_conv(int in, const Dim& c, const Dim& k) {
    int cw = weight(prefix_ + "mamba.conv1d.weight", {c, k}, c.label, layer_);
    int cb = weight(prefix_ + "mamba.conv1d.bias", {c}, c.label, layer_);
    int out = act("mamba.conv1d", BS({c}), o_.dtype);
    std::vector<int> ins{in, cw, cb}, outs{out};
    if (o_.inference) {  // each sequence's last k - 1 inputs: read, and written back shifted
      const std::vector<Dim> st{B(), Dim{"n", S("n")}, c, Dim{"mkc", S(k.label) - Expr(1)}};
      ins.push_back(state_cache("mamba.conv_state", st, c.label));
      outs.push_back(state_update("mamba.conv_state_new", st));
    }
    Op conv = op("mamba.conv1d", ops::kCausalConv1d, std::move(ins), std::move(outs));
    conv.flops = numel(out) * (Expr(2) * S(k.label) + Expr(4));
    conv.unshardable = {"s", "c", k.label, "n", "mkc"};
    add(std::move(conv));
    return out;
  }

  // ---- Inference: a Mamba layer's fixed-size state (docs/inference.md,
  // "Hybrid models"). Per sequence (n of them in the iteration), at the
  // activations' dtype (vLLM's mamba_cache_dtype "auto"): the conv state
  // (the last k - 1 inputs of every conv channel) and the SSM state, read
  // by the step and written back in place. The read is a cache tensor
  // (producer-less, what the memory counts), the write one more, produced
  // by the op (bytes moved, neither memory nor an activation).
  int state_cache(const std::string& name, std::vector<Dim> dims, const std::string& tp_label) {
    return cache_tensor(name, std::move(dims), tp_label, o_.dtype);
  }
  int state_update(const std::string& name, std::vector<Dim> dims) {
    return act(name, std::move(dims), o_.dtype, TensorKind::kCache);
  }

  // Mamba-2 (SSD) mixer, as Megatron-Core's MambaMixer splits it over tp:
  // in_proj is column-parallel and yields this rank's heads of z, x and
  // dt and its groups of B and C; the depthwise conv, the scan and the
  // gated norm (normalized per group, groups never straddle ranks) are
  // local to the heads; out_proj is row-parallel (a partial sum over tp,
  // resolved like attention's output). Symbols: mh heads, mp head dim,
  // mg groups, mn state, mk conv width, mi = mh x mp, mc = mi + 2 mg mn
  // (conv channels), mx = 2 mi + 2 mg mn + mh (in_proj width). Inside the
  // scan B and C's group dim carries the heads' factor (mh): groups split
  // over tp with the heads.
  int mamba(int x) {
    Dim mx{"mx", S("mx")}, mc{"mc", S("mc")}, mh{"mh", S("mh")}, mp{"mp", S("mp")}, mg{"mg", S("mg")},
        mn{"mn", S("mn")}, mk{"mk", S("mk")}, mi{"mi", S("mi")};
    int zxbcdt = linear("mamba.in_proj", x, H(), {mx}, "mx", false, /*with_bias=*/false);
    int z = act("mamba.z", BS({mh, mp}), o_.dtype);
    int xbc = act("mamba.xBC", BS({mc}), o_.dtype);
    int dt = act("mamba.dt", BS({mh}), o_.dtype);
    Op split = op("mamba.split", ops::kSplit, {zxbcdt}, {z, xbc, dt});
    split.out_labels = {lab({"mx", "mp"}), lab({"mx"}), lab({"mx"})};
    add(std::move(split));
    // Depthwise causal conv (width mk) over [x, B, C], then SiLU.
    int xbc_c = causal_conv(xbc, mc, mk);
    int xs = act("mamba.x", BS({mh, mp}), o_.dtype);
    int bt = act("mamba.B", BS({mg, mn}), o_.dtype);
    int ct = act("mamba.C", BS({mg, mn}), o_.dtype);
    Op split2 = op("mamba.split_xbc", ops::kSplit, {xbc_c}, {xs, bt, ct});
    split2.out_labels = {lab({"mc", "mp"}), lab({"mc", "mn"}), lab({"mc", "mn"})};
    add(std::move(split2));
    // The scan: per head, A (as A_log), D and the dt bias (fp32 in Megatron; kept in the model dtype here).
    int a_log = weight(prefix_ + "mamba.A_log", {mh}, "mh", layer_);
    int d_skip = weight(prefix_ + "mamba.D", {mh}, "mh", layer_);
    int dt_bias = weight(prefix_ + "mamba.dt_bias", {mh}, "mh", layer_);
    int y = act("mamba.ssd", BS({mh, mp}), o_.dtype);
    std::vector<int> ins{xs, dt, bt, ct, a_log, d_skip, dt_bias}, outs{y};
    std::vector<std::vector<std::string>> labels{
        lab({"mh", "mp"}), lab({"mh"}), lab({"mh", "mn"}), lab({"mh", "mn"}), {"mh"}, {"mh"}, {"mh"}};
    if (o_.inference) {  // per sequence: heads x head dim x state
      const std::vector<Dim> st{B(), Dim{"n", S("n")}, mh, mp, mn};
      ins.push_back(state_cache("mamba.ssm_state", st, "mh"));
      labels.push_back({"b", "n", "mh", "mp", "mn"});
      outs.push_back(state_update("mamba.ssm_state_new", st));
    }
    Op scan = op("mamba.ssd", ops::kSsdScan, std::move(ins), std::move(outs));
    scan.in_labels = std::move(labels);
    scan.unshardable = {"s", "c", "mn", "n"};
    scan.flops = Expr(7) * B().size * S("s") * S("mi") * S("mn");
    scan.model_flops = scan.flops;
    add(std::move(scan));
    // Gated RMSNorm: rmsnorm(y * silu(z)) per group of mi / mg channels.
    int nw = weight(prefix_ + "mamba.norm.weight", {mh, mp}, "mh", layer_);
    int yn = act("mamba.norm", BS({mh, mp}), o_.dtype);
    Op gn = op("mamba.norm", ops::kGatedRMSNorm, {y, z, nw}, {yn});
    gn.flops = rule_flops(g_, gn);
    gn.unshardable = {"mp"};
    add(std::move(gn));
    int merged = act("mamba.merged", BS({mi}), o_.dtype);
    Op view = op("mamba.merge_heads", ops::kMerge, {yn}, {merged});
    view.out_labels = {lab({"mh"})};
    add(std::move(view));
    return linear("mamba.out_proj", merged, mi, {H()}, "mi", true, /*with_bias=*/false);
  }

  // Mamba-1 (S6) mixer (HF JambaMambaMixer; tp as Megatron-style Mamba-1
  // and vLLM's MambaMixer split it): in_proj column-parallel over the
  // d_inner channels (x and z), the depthwise conv per channel, x_proj
  // row-parallel (its [dt, B, C] output a partial sum over tp, resolved by
  // one all-reduce before the split), the dt/B/C RMSNorms (Jamba)
  // replicated, dt_proj column-parallel, the scan (A_log, D and dt_proj's
  // bias per channel; B and C shared by all channels) gated by silu(z), and
  // the row-parallel out_proj. Symbols: si d_inner, sr dt_rank, sq = sr + 2
  // mn (x_proj width), mn state, mk conv width.
  int mamba1(int x) {
    Dim si{"si", S("si")}, sr{"sr", S("sr")}, sq{"sq", S("sq")}, mn{"mn", S("mn")}, mk{"mk", S("mk")};
    int xz = linear("mamba.in_proj", x, H(), {Dim{"x2", Expr(2)}, si}, "si", false, /*with_bias=*/false);
    int xs = act("mamba.x", BS({si}), o_.dtype);
    int z = act("mamba.z", BS({si}), o_.dtype);
    Op split = op("mamba.split", ops::kSplit, {xz}, {xs, z});
    split.out_labels = {lab({"si"}), lab({"si"})};
    add(std::move(split));
    // Depthwise causal conv (width mk) over x, then SiLU.
    int xc = causal_conv(xs, si, mk);
    int dbc = linear("mamba.x_proj", xc, si, {sq}, "si", false, /*with_bias=*/false);
    int dt = act("mamba.dt_low", BS({sr}), o_.dtype);
    int bt = act("mamba.B", BS({mn}), o_.dtype);
    int ct = act("mamba.C", BS({mn}), o_.dtype);
    Op split2 = op("mamba.split_dbc", ops::kSplitReduced, {dbc}, {dt, bt, ct});
    split2.out_labels = {lab({"sq"}), lab({"sq"}), lab({"sq"})};
    add(std::move(split2));
    if (m_.mamba1_dt_bc_norms) {
      dt = norm("mamba.dt_layernorm", dt);
      bt = norm("mamba.b_layernorm", bt);
      ct = norm("mamba.c_layernorm", ct);
    }
    int delta = linear("mamba.dt_proj", dt, sr, {si}, "si", false, /*with_bias=*/false);
    // The scan: A_log [d_inner, N], D and dt_proj's bias (softplus(dt + bias)
    // inside the kernel) per channel.
    int a_log = weight(prefix_ + "mamba.A_log", {si, mn}, "si", layer_);
    int d_skip = weight(prefix_ + "mamba.D", {si}, "si", layer_);
    int dt_bias = weight(prefix_ + "mamba.dt_proj.bias", {si}, "si", layer_);
    int y = act("mamba.scan", BS({si}), o_.dtype);
    std::vector<int> ins{xc, delta, bt, ct, z, a_log, d_skip, dt_bias}, outs{y};
    if (o_.inference) {  // per sequence: d_inner x state
      const std::vector<Dim> st{B(), Dim{"n", S("n")}, si, mn};
      ins.push_back(state_cache("mamba.ssm_state", st, "si"));
      outs.push_back(state_update("mamba.ssm_state_new", st));
    }
    Op scan = op("mamba.scan", ops::kSelectiveScan, std::move(ins), std::move(outs));
    scan.unshardable = {"s", "c", "mn", "n"};
    const Expr tokens = B().size * S("s");
    scan.flops = Expr(9) * tokens * S("si") * S("mn") + Expr(2) * tokens * S("si");
    scan.model_flops = scan.flops;
    add(std::move(scan));
    return linear("mamba.out_proj", y, si, {H()}, "si", true, /*with_bias=*/false);
  }

  const char* gated_suffix() const { return m_.mlp == MlpKind::kGeGLU ? ".geglu" : ".swiglu"; }

  // [..., 2, f] -> [..., f]: silu(gate) * up (gelu_tanh(gate) * up for GeGLU).
  int swiglu(const std::string& name, int gu) {
    std::vector<Dim> dims = g_.tensors[gu].dims;
    dims.erase(dims.end() - 2);
    int y = act(name, dims, o_.dtype);
    Op o = op(name, m_.mlp == MlpKind::kGeGLU ? ops::kGeGLU : ops::kSwiGLU, {gu}, {y});
    o.flops = rule_flops(g_, o);
    o.unshardable = {"g2"};
    add(std::move(o));
    return y;
  }

  // A routed expert's weight: experts on ep, the width on etp.
  int expert_weight(const std::string& name, std::vector<Dim> dims, bool gemm = false) {
    int w = weight(prefix_ + name, std::move(dims), "", layer_, gemm);
    Tensor& t = g_.tensors[w];
    t.expert = true;
    for (size_t i = 0; i < t.dims.size(); ++i) {
      if (o_.has_ep && t.dims[i].label == "E") t.sharding.dim_axis[i] = "ep";
      if (o_.has_etp && t.dims[i].label == "fe") t.sharding.dim_axis[i] = "etp";
    }
    return w;
  }

  // Batched expert GEMM: x [..., E, c, in] . W [E, in, out...] -> [..., E, c, out...].
  int expert_linear(const std::string& name, int x, const std::vector<Dim>& out_dims) {
    const std::vector<Dim> xd = g_.tensors[x].dims;
    const Dim in = xd.back();
    std::vector<Dim> wd{Dim{"E", S("E")}, in};
    wd.insert(wd.end(), out_dims.begin(), out_dims.end());
    int w = expert_weight(name + ".weight", wd, /*gemm=*/true);
    std::vector<Dim> yd(xd.begin(), xd.end() - 1);
    yd.insert(yd.end(), out_dims.begin(), out_dims.end());
    int y = act(name, yd, o_.dtype);
    Op o = op(name, ops::kMatmul, {x, w}, {y});
    o.flops = Expr(2) * numel(y) * in.size;
    o.model_flops = o.flops;
    add(std::move(o));
    if (!m_.linear_bias) return y;
    std::vector<Dim> bd{Dim{"E", S("E")}};
    bd.insert(bd.end(), out_dims.begin(), out_dims.end());
    int bias = expert_weight(name + ".bias", bd);
    return pointwise(name + ".bias_add", ops::kBiasAdd, {y, bias}, false);
  }

  // The expert layout's source dims: which (edp, etp, ep) rank the tokens
  // came from, each sharded on its own axis, in this order. A dim exists
  // only where its axis has degree > 1.
  struct Source { const char* label; const char* axis; };
  // With the experts over tp the tokens are the same on every etp and ep
  // rank: only edp (the attention-dp ranks) holds distinct tokens.
  std::vector<Source> expert_sources() const {
    std::vector<Source> out;
    if (o_.has_edp) out.push_back({"re", "edp"});
    if (o_.experts_over_tp) return out;
    if (o_.has_etp) out.push_back({"rt", "etp"});
    if (o_.has_ep) out.push_back({"rp", "ep"});
    return out;
  }

  // Mixture of experts (Megatron-Core's all-to-all dispatcher): route,
  // permute the local tokens into per-expert buffers, all-to-all over ep
  // (then all-gather over etp), the experts, the way back, and the
  // probability-weighted combine; shared experts run beside on tp.
  int moe(int x) {
    Dim Ed{"E", S("E")}, kd{"k", S("k")}, cap{"c", S("cap")}, fe{"fe", S("fe")};
    int logits = linear("moe.router", x, H(), {Ed}, "", false, /*with_bias=*/false);
    std::vector<int> route_in{logits};
    if (m_.router_bias) route_in.push_back(weight(prefix_ + "moe.router.bias", {Ed}, "", layer_));
    int probs = act("moe.router.probs", BS({kd}), DType::kFP32);
    int idx = act("moe.router.indices", BS({kd}), DType::kInt32, TensorKind::kMask);
    Op topk = op("moe.router.topk", ops::kTopK, route_in, {probs, idx});
    topk.flops = rule_flops(g_, topk);  // per logit: scores, top-k selection, normalization
    add(std::move(topk));

    const Sharding tokens = stream_sharding();
    Sharding per_token = tokens;  // [b, s, k]: like the stream, k whole
    // [sources..., E, cap, h]: each rank holds its own E x cap x h buffer.
    std::vector<Dim> disp_dims;
    Sharding src;
    std::vector<std::string> source_axes;
    for (const Source& x : expert_sources()) {
      disp_dims.push_back({x.label, S(x.axis)});
      src.dim_axis.push_back(x.axis);
      source_axes.push_back(x.axis);
    }
    disp_dims.insert(disp_dims.end(), {Ed, cap, H()});
    src.dim_axis.resize(disp_dims.size(), "");
    // Experts over tp: each rank fills only its own experts' buffers from
    // the tokens it already holds (a slice of E on ep, no traffic).
    Sharding expert_out = src;  // the experts' output as the combine reads it
    if (o_.experts_over_tp) {
      if (o_.has_ep) src.dim_axis[source_axes.size()] = "ep";
      expert_out = src;
      if (o_.has_etp) expert_out.partial = {"etp"};  // fc2 contracts fe, split on etp
    }
    // fp8 weights (inference): tokens are quantized before the dispatch and
    // sent in fp8, the combine returns bf16 (DeepSeek-V3 report, DeepEP).
    // 4-bit weights: the tokens go in the activations' dtype.
    int disp = act("moe.dispatch", disp_dims,
                   o_.has_weight_dtype && !dtype_is_4bit(o_.weight_dtype) ? o_.weight_dtype : o_.dtype);
    g_.tensors[disp].sharding = src;
    Op perm = op("moe.permute", ops::kMoePermute, {x, idx}, {disp});
    perm.remesh_in = {tokens, per_token};
    perm.flops = Expr(0);
    perm.flops_axes = source_axes;
    add(std::move(perm));

    int y;
    if (m_.gated_mlp()) {
      int gu = expert_linear("moe.experts.fc1", disp, {Dim{"g2", Expr(2)}, fe});
      y = swiglu(std::string("moe.experts") + gated_suffix(), gu);
    } else {
      int h1 = expert_linear("moe.experts.fc1", disp, {fe});
      y = activation("moe.experts", h1);
    }
    int out = expert_linear("moe.experts.fc2", y, {H()});

    int combined = act("moe.combine", BS({H()}), o_.dtype);
    g_.tensors[combined].sharding = tokens;
    Op comb = op("moe.combine", ops::kMoeCombine, {out, probs, idx}, {combined});
    comb.remesh_in = {src, per_token, per_token};
    comb.flops = Expr(2) * g_.tensors[out].global_numel();  // scale by the probability, sum the k copies
    comb.flops_axes = source_axes;
    if (o_.experts_over_tp) {
      // Each rank sums the k copies over its own experts (and its fe slice):
      // a partial sum over the ep x etp ranks, which are the tp group.
      comb.remesh_in[0] = expert_out;
      if (o_.has_ep) comb.flops_axes.push_back("ep");
      g_.tensors[combined].sharding.partial = {"tp"};
    }
    comb.sp_region = true;
    add(std::move(comb));
    int result = combined;
    if (m_.shared_experts > 0) {
      int shared = mlp(x, "fs", "moe.shared");
      if (m_.shared_expert_gate) {  // Qwen2-MoE: shared * sigmoid(x . w_g), w_g replicated over tp
        int gl = linear("moe.shared_gate", x, H(), {Dim{"g1", Expr(1)}}, "", false, /*with_bias=*/false);
        int y = act("moe.shared_gated", g_.tensors[shared].dims, o_.dtype);
        Op o = op("moe.shared_gated", ops::kSigmoidGate, {shared, gl}, {y});
        o.flops = numel(shared) * Expr(ops::kSigmoidGate.flops_per_element) + numel(gl) * Expr(4);
        o.sp_region = true;
        add(std::move(o));
        shared = y;
      }
      if (o_.experts_over_tp) {  // both partial over tp: one all-reduce of the sum, not one each
        result = act("moe.add_shared", g_.tensors[combined].dims, o_.dtype);
        Op o = op("moe.add_shared", ops::kAdd, {combined, shared}, {result});
        o.flops = rule_flops(g_, o);
        o.sp_region = true;
        o.linear = true;  // a sum of partial sums is a partial sum
        add(std::move(o));
      } else {
        result = pointwise("moe.add_shared", ops::kAdd, {combined, shared}, true);
      }
    }
    return result;
  }

  // A decoder layer (attention + MLP or MoE) over the residual stream x;
  // layer l >= L is an MTP module's (ModelConfig::layer_moe, layer_windowed).
  int decoder_layer(int64_t l, int x) {
    // post_norms (OLMo-2): the sublayers read the stream itself.
    int h1 = m_.post_norms ? x : norm("ln1", x);
    int attn = attention(h1);
    if (m_.sandwich_norms || m_.post_norms) attn = norm("ln1_post", attn);  // post-attention norm (Gemma-2/3, OLMo-2)
    if (m_.residual_multiplier != 1) attn = pointwise("attn.scale", ops::kScale, {attn}, true);
    x = pointwise("attn.residual", ops::kAdd, {x, attn}, true);
    int h2 = m_.post_norms ? x : norm("ln2", x);
    int ffn = m_.layer_moe(l) ? moe(h2) : mlp(h2);
    if (m_.sandwich_norms || m_.post_norms) ffn = norm("ln2_post", ffn);  // post-feedforward norm
    if (m_.residual_multiplier != 1) ffn = pointwise("mlp.scale", ops::kScale, {ffn}, true);
    return pointwise("mlp.residual", ops::kAdd, {x, ffn}, true);
  }

  // Multi-token prediction (training; ModelConfig::mtp_num_layers), on the
  // last stage after the main head, as Megatron-Core's
  // MultiTokenPredictionLayer runs it (megatron/core/transformer/
  // multi_token_prediction.py): module k embeds the tokens (the shared word
  // embedding; its copy on the last stage when pipelined), normalizes that
  // and the previous depth's hidden states (enorm, hnorm), projects their
  // concatenation 2h -> h (eh_proj: column-parallel, then gathered over tp
  // and, with sequence parallelism, scattered back to the sequence), runs
  // one decoder layer and a final norm, and computes logits with the shared
  // output layer and a cross entropy of its own (a second loss). The labels
  // are the same tensor rolled one more step (a copy, not modelled).
  void mtp(int h, int tokens, int wte, int wout, int labels) {
    if (wte < 0) {
      if (m_.tied_embeddings) {
        wte = wout;  // the last stage's tied copy
      } else {
        wte = weight("embedding.word.weight", {Dim{"V", S("V")}, H()}, "V", -1);
        g_.tensors[wte].tied_copy = true;
      }
    }
    for (int64_t k = 0; k < m_.mtp_num_layers; ++k) {
      prefix_ = "mtp" + std::to_string(k) + ".";
      layer_ = -1;  // the embedding is outside the layer (and its recomputation)
      int e = embedding(tokens, wte);
      layer_ = static_cast<int>(m_.num_layers + k);
      int en = norm("enorm", e);
      int hn = norm("hnorm", h);
      Dim h2{"h2", Expr(2) * S("h")};
      int cat = act("concat", BS({h2}), o_.dtype);
      Op c = op("concat", ops::kConcatHidden, {en, hn}, {cat});
      c.out_labels = {lab({"h2"})};
      c.sp_region = true;
      add(std::move(c));
      int x = linear("eh_proj", cat, h2, {H()}, "h", false, /*with_bias=*/false);
      if (o_.has_tp) {
        // gather_from_tensor_model_parallel_region (all-gather over tp along
        // h, then a concatenating copy) and, with sequence parallelism,
        // scatter_to_sequence_parallel_region (a local split): the input
        // brought whole, the output laid out as the residual stream.
        const std::vector<Dim> dims = g_.tensors[x].dims;
        int y = act("eh_proj.gather", dims, o_.dtype);
        Op gth = op("eh_proj.gather", ops::kGatherToStream, {x}, {y});
        gth.remesh_in = {stream_sharding()};
        for (std::string& a : gth.remesh_in[0].dim_axis)
          if (a == "tp") a.clear();
        g_.tensors[y].sharding = stream_sharding();
        add(std::move(gth));
        x = y;
      }
      x = decoder_layer(layer_, x);
      h = norm("final_norm", x);
      layer_ = -1;
      head(h, wout, labels);
    }
    layer_ = -1;
    prefix_.clear();
  }

  // A hybrid model's layer: 'M' Mamba-2, 'S' Mamba-1, '*' attention, '-' MLP, 'E' MoE.
  int hybrid_block(char kind, int x) {
    int h1 = norm("ln1", x);
    switch (kind) {
      case 'M': return pointwise("mamba.residual", ops::kAdd, {x, mamba(h1)}, true);
      case 'S': return pointwise("mamba.residual", ops::kAdd, {x, mamba1(h1)}, true);
      case '*': return pointwise("attn.residual", ops::kAdd, {x, attention(h1)}, true);
      case 'E': return pointwise("mlp.residual", ops::kAdd, {x, moe(h1)}, true);
      default: return pointwise("mlp.residual", ops::kAdd, {x, mlp(h1)}, true);
    }
  }

  // The residual stream between layers: [b, s, h], batch on dp, and with
  // sequence parallelism the sequence on tp (what a stage sends).
  Sharding stream_sharding() const {
    Sharding sh;
    sh.dim_axis.push_back(o_.has_dp ? "dp" : "");
    if (o_.has_cp) sh.dim_axis.push_back("cp");
    sh.dim_axis.push_back(o_.sequence_parallel && o_.has_tp ? "tp" : "");
    sh.dim_axis.push_back("");
    return sh;
  }

  int recv(int64_t boundary) {
    int x = act("pipeline.recv" + std::to_string(boundary), BS({H()}), o_.dtype);
    g_.tensors[x].sharding = stream_sharding();
    Op o = op("pipeline.recv" + std::to_string(boundary), ops::kRecv, {}, {x});
    o.boundary = boundary;
    add(std::move(o));
    return x;
  }

  void send(int x, int64_t boundary) {
    Op o = op("pipeline.send" + std::to_string(boundary), ops::kSend, {x}, {});
    o.boundary = boundary;
    o.send_sharding = stream_sharding();
    add(std::move(o));
  }

  int embedding(int tokens, int wte) {
    int x = act("embedding.word", BS({H()}), o_.dtype);
    Op e = op("embedding.word", ops::kEmbedding, {tokens, wte}, {x});
    e.sp_region = true;
    add(std::move(e));
    if (m_.position == PositionKind::kLearned) {
      int wpe = weight("embedding.position.weight", {{"P", S("P")}, H()}, "", -1);
      int p = act("embedding.position", BS({H()}), o_.dtype);
      Op pe = op("embedding.position", ops::kEmbedding, {tokens, wpe}, {p});
      add(std::move(pe));
      x = pointwise("embedding.add", ops::kAdd, {x, p}, true);
    }
    if (m_.embedding_multiplier != 1) x = pointwise("embedding.scale", ops::kScale, {x}, true);
    return dropout("embedding.dropout", x, true);
  }

  // x: the final norm's output.
  void head(int x, int wout, int labels) {
    int logits = act("output.logits", BS({Dim{"V", S("V")}}), o_.dtype);
    Op lo = op("output.logits", ops::kMatmul, {x, wout}, {logits});
    lo.in_labels = {{}, {"V", "h"}};
    lo.flops = Expr(2) * numel(x) * S("V");
    lo.model_flops = lo.flops;
    add(std::move(lo));
    if (m_.logit_multiplier != 1) logits = pointwise("output.scale", ops::kScale, {logits}, false);
    if (m_.final_softcap > 0) logits = pointwise("output.softcap", ops::kSoftcap, {logits}, false);
    // Vocab-parallel cross entropy (Megatron): three [b,s] statistics are
    // reductions over V; with V sharded each is a partial sum over tp.
    // Fused (training.cross_entropy_loss_fusion, the default) they read the
    // logits as the GEMM wrote them. Unfused (Megatron-LM without
    // --cross-entropy-loss-fusion, megatron/core/tensor_parallel/
    // cross_entropy.py) the logits are copied to fp32 (no copy when they are
    // fp32 already: .float() returns them), the statistics read the copy,
    // and the passes Megatron makes over it in place run too: x - max (after
    // the max's all-reduce), exp (which the sum reads), and the division by
    // the all-reduced sum leaving the softmax the backward reads
    // (cross_entropy's rule reads it; docs/parallelism.md, "The loss").
    // Each pass is a tensor of its own here; the target logit is taken
    // before the passes, so the copy is free once shifted.
    const bool fused = o_.cross_entropy_fusion;
    int ce = logits;
    if (!fused && g_.tensors[logits].dtype != DType::kFP32) {
      ce = act("loss.float", g_.tensors[logits].dims, DType::kFP32);
      Op c = op("loss.float", ops::kCast, {logits}, {ce});
      c.flops = Expr(0);
      add(std::move(c));
    }
    // FLOPs per logit: the fused sum of exponentials subtracts, exponentiates
    // and adds (3); unfused, the shift and exp ops count the first two.
    auto stat = [&](const std::string& name, std::vector<int> in, int64_t per_logit = 1) {
      int t = act(name, BS({}), DType::kFP32);
      Op o = op(name, name == "loss.max" ? ops::kLossMax : ops::kLossSum, std::move(in), {t});
      o.flops = numel(logits) * Expr(per_logit);
      add(std::move(o));
      return t;
    };
    int mx = stat("loss.max", {ce});
    int se = -1, tg = -1;
    if (fused) {
      se = stat("loss.sum_exp", {logits, mx}, 3);
      tg = stat("loss.target_logit", {ce, labels});
    } else {
      tg = stat("loss.target_logit", {ce, labels});
      int ex = pointwise("loss.exp", ops::kLossExp, {pointwise("loss.shift", ops::kLossShift, {ce, mx}, false)}, false);
      se = stat("loss.sum_exp", {ex});
      pointwise("loss.softmax", ops::kLossSoftmax, {ex, se}, false);
    }
    int loss = act("loss", BS({}), DType::kFP32);
    Op lz = op("loss", ops::kCrossEntropy, {mx, se, tg}, {loss});
    lz.flops = rule_flops(g_, lz);
    add(std::move(lz));
  }

  Graph build() {
    std::vector<Chunk> chunks = o_.chunks;
    int64_t num_virtual = o_.num_virtual;
    if (chunks.empty()) {
      chunks.push_back({0, m_.num_layers, 0});
      num_virtual = 1;
    }
    const int64_t last_virtual = num_virtual - 1;
    const bool first = chunks.front().virtual_stage == 0;
    const bool last = chunks.back().virtual_stage == last_virtual;
    const bool pipelined = num_virtual > 1;
    // MTP embeds the tokens again on the last stage (Megatron-Core gives it
    // the input ids there).
    const bool mtp_here = last && !o_.inference && m_.mtp_num_layers > 0;
    int tokens = first || mtp_here ? input("tokens", BS({}), DType::kInt64) : -1;
    int labels = last && !o_.inference ? input("labels", BS({}), DType::kInt64) : -1;
    Dim V{"V", S("V")};
    int wte = first ? weight("embedding.word.weight", {V, H()}, "V", -1) : -1;
    for (size_t c = 0; c < chunks.size(); ++c) {
      chunk_ = static_cast<int>(c);
      layer_ = -1;
      prefix_.clear();
      const Chunk& ch = chunks[c];
      int x = ch.virtual_stage == 0 ? embedding(tokens, wte) : recv(ch.virtual_stage - 1);
      for (int64_t l = ch.first_layer; l < ch.end_layer; ++l) {
        layer_ = static_cast<int>(l);
        prefix_ = "L" + std::to_string(l) + ".";
        x = m_.is_hybrid() ? hybrid_block(m_.block(l), x) : decoder_layer(l, x);  // hybrid: one pre-norm block
      }
      layer_ = -1;
      prefix_.clear();
      if (ch.virtual_stage != last_virtual) {
        send(x, ch.virtual_stage);
        continue;
      }
      x = norm("final_norm", x);
      int wout = wte;
      if (!m_.tied_embeddings) {
        wout = weight("output.weight", {V, H()}, "V", -1);
      } else if (wte < 0) {
        // Megatron keeps a copy of a tied embedding on the last stage and
        // sums the two copies' gradients over the embedding group.
        wout = weight("embedding.word.weight", {V, H()}, "V", -1);
        g_.tensors[wout].tied_copy = true;
      }
      if (o_.inference) {
        serving_head(x, wout);
      } else {
        head(x, wout, labels);
        if (m_.mtp_num_layers > 0) mtp(x, tokens, wte, wout, labels);
      }
    }
    if (pipelined && m_.last_stage_embeds()) {  // (serving refuses MTP: validate_serving)
      for (auto& t : g_.tensors)
        if (t.kind == TensorKind::kWeight && t.name == "embedding.word.weight") t.sync_axis = "embd";
    }
    return std::move(g_);
  }

 private:
  // Inputs: the batch on dp, the sequence on cp (context parallelism).
  void shard_batch(int id) {
    auto& t = g_.tensors[id];
    for (size_t i = 0; i < t.dims.size(); ++i) {
      if (o_.has_dp && t.dims[i].label == "b") t.sharding.dim_axis[i] = "dp";
      if (o_.has_cp && t.dims[i].label == "c") t.sharding.dim_axis[i] = "cp";
    }
  }

  const ModelConfig& m_;
  BuildOptions o_;
  Graph g_;
  int layer_ = -1;
  int chunk_ = 0;
  std::string prefix_;
};

}  // namespace

Graph build_transformer_forward(const ModelConfig& m, const BuildOptions& o) { return Builder(m, o).build(); }

std::vector<Chunk> stage_chunks(int64_t layers, int64_t pp, int64_t v, const std::vector<int64_t>& layout,
                                int64_t stage) {
  const int64_t n = pp * v;
  std::vector<int64_t> first(static_cast<size_t>(n + 1), 0);
  for (int64_t k = 0; k < n; ++k)
    first[k + 1] = first[k] + (layout.empty() ? layers / n : layout[static_cast<size_t>(k)]);
  std::vector<Chunk> out;
  for (int64_t c = 0; c < v; ++c) {
    int64_t k = c * pp + stage;
    out.push_back({first[k], first[k + 1], k});
  }
  return out;
}

Bindings model_bindings(const ModelConfig& m, int64_t micro_batch, int64_t seq_len) {
  Bindings b{{"b", micro_batch}, {"s", seq_len}, {"h", m.hidden}, {"a", m.num_heads},
             {"kv", m.num_kv_heads}, {"d", m.head_dim}, {"f", m.ffn_hidden}, {"V", m.vocab},
             {"P", m.max_positions > 0 ? m.max_positions : 1},
             {"qkv", (m.num_heads + 2 * m.num_kv_heads) * m.head_dim}};
  if (m.sliding_window > 0) {
    // Score columns stored per query, and keys visited over all queries
    // (causal band: sum over i < s of min(i + 1, w); the full s^2 when the
    // window covers the sequence, as for an unwindowed layer).
    const int64_t w = std::min(seq_len, m.sliding_window);
    b["w"] = w;
    b["wk"] = m.sliding_window >= seq_len ? seq_len * seq_len : w * seq_len - w * (w - 1) / 2;
    // Keys a fused causal kernel visits: the band, or half the square when
    // the window covers the sequence (as for an unwindowed layer).
    b["wx"] = m.sliding_window >= seq_len ? seq_len * seq_len / 2 : b["wk"];
  }
  if (m.rope_dim() != m.head_dim) b["dro"] = m.rope_dim();
  if (m.is_moe()) {
    b["E"] = m.num_experts;
    b["k"] = m.experts_per_token;
    b["fe"] = m.moe_ffn_hidden;
    b["fs"] = m.shared_experts * m.moe_ffn_hidden;
  }
  if (m.has_mamba()) {
    b["mh"] = m.mamba_heads;
    b["mp"] = m.mamba_head_dim;
    b["mg"] = m.mamba_groups;
    b["mn"] = m.mamba_state;
    b["mk"] = m.mamba_conv_kernel;
    b["mi"] = m.mamba_inner();
    b["mc"] = m.mamba_conv_dim();
    b["mx"] = m.mamba_in_proj_dim();
  }
  if (m.has_mamba1()) {
    b["mn"] = m.mamba_state;
    b["mk"] = m.mamba_conv_kernel;
    b["si"] = m.mamba1_inner;
    b["sr"] = m.mamba1_dt_rank;
    b["sq"] = m.mamba1_x_proj_dim();
  }
  if (m.is_mla()) {
    b["dq"] = m.qk_head_dim();
    b["dv"] = m.v_head_dim;
    b["dr"] = m.qk_rope_head_dim;
    b["qr"] = m.q_lora_rank;
    b["kvr"] = m.kv_lora_rank;
  }
  return b;
}

int64_t moe_capacity(const ModelConfig& m, int64_t local_tokens) {
  if (!m.is_moe()) return 0;
  // Exact for the uniform case (cf = 1); rounded up otherwise.
  const __int128 units = static_cast<__int128>(local_tokens) * m.experts_per_token;
  const double scaled = m.capacity_factor * static_cast<double>(units) / static_cast<double>(m.num_experts);
  const __int128 exact = (units + m.num_experts - 1) / m.num_experts;
  if (m.capacity_factor == 1.0) return static_cast<int64_t>(exact);
  return static_cast<int64_t>(std::ceil(scaled - 1e-9));
}

}  // namespace sc
