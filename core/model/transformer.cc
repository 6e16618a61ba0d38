#include "model/transformer.h"

namespace sc {
namespace {

Expr S(const char* n) { return Expr::sym(n); }

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
  int weight(const std::string& name, std::vector<Dim> dims, const std::string& tp_label, int layer) {
    Tensor t = make_tensor(name, std::move(dims), o_.dtype, TensorKind::kWeight);
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

  Op op(const std::string& name, OpKind kind, const std::string& fn, std::vector<int> in, std::vector<int> out) {
    Op o;
    o.name = prefix_ + name;
    o.kind = kind;
    o.fn = fn;
    o.layer = layer_;
    o.chunk = chunk_;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    return o;
  }
  int add(Op o) { return g_.add_op(std::move(o)); }

  // Common dims. Batch is global (b*dp) so the dp shard reads "b".
  Dim B() const { return {"b", o_.has_dp ? S("b") * S("dp") : S("b")}; }
  Dim Sq() const { return {"s", S("s")}; }
  Dim H() const { return {"h", S("h")}; }

  Expr numel(int t) const { return g_.tensors[t].global_numel(); }

  // Pointwise op over x (and optional extra inputs) producing a same-shape tensor.
  int pointwise(const std::string& name, const std::string& fn, std::vector<int> in, int64_t flops_per_elem,
                bool sp_region, bool linear = false) {
    int y = act(name, g_.tensors[in[0]].dims, g_.tensors[in[0]].dtype);
    Op o = op(name, OpKind::kElementwise, fn, std::move(in), {y});
    o.flops = numel(y) * Expr(flops_per_elem);
    o.sp_region = sp_region;
    o.linear = linear;
    add(std::move(o));
    return y;
  }

  int dropout(const std::string& name, int x, bool sp_region, bool attn_core = false) {
    if (!m_.dropout) return x;
    const std::vector<Dim> dims = g_.tensors[x].dims;  // act() grows g_.tensors
    int y = act(name, dims, g_.tensors[x].dtype);
    int mask = act(name + ".mask", dims, DType::kUInt8, TensorKind::kMask);
    Op o = op(name, OpKind::kDropout, "dropout", {x}, {y, mask});
    o.flops = numel(y) * Expr(2);
    o.sp_region = sp_region;
    o.attn_core = attn_core;
    add(std::move(o));
    return y;
  }

  int norm(const std::string& name, int x) {
    bool ln = m_.norm == NormKind::kLayerNorm;
    std::vector<int> in{x, weight(prefix_ + name + ".weight", {H()}, "", layer_)};
    if (ln) in.push_back(weight(prefix_ + name + ".bias", {H()}, "", layer_));
    int y = act(name, g_.tensors[x].dims, o_.dtype);
    Op o = op(name, OpKind::kNorm, ln ? "layernorm" : "rmsnorm", std::move(in), {y});
    o.flops = numel(y) * Expr(ln ? 8 : 5);
    o.unshardable = {"h"};
    o.sp_region = true;
    add(std::move(o));
    return y;
  }

  // y[b,s,out] = x[b,s,in] . W[in,out] (+ bias), W sharded on tp along tp_label.
  int linear(const std::string& name, int x, Dim in_dim, std::vector<Dim> out_dims, const std::string& tp_label,
             bool bias_in_sp_region) {
    std::vector<Dim> wdims{in_dim};
    wdims.insert(wdims.end(), out_dims.begin(), out_dims.end());
    int w = weight(prefix_ + name + ".weight", wdims, tp_label, layer_);
    std::vector<Dim> ydims{B(), Sq()};
    ydims.insert(ydims.end(), out_dims.begin(), out_dims.end());
    int y = act(name, ydims, o_.dtype);
    Op o = op(name, OpKind::kMatmul, "matmul", {x, w}, {y});
    o.flops = Expr(2) * numel(x) * numel(w) / in_dim.size;
    o.model_flops = o.flops;
    add(std::move(o));
    if (!m_.linear_bias) return y;
    std::vector<Dim> bdims(out_dims);
    int bias = weight(prefix_ + name + ".bias", bdims, tp_label, layer_);
    return pointwise(name + ".bias_add", "bias_add", {y, bias}, 1, bias_in_sp_region);
  }

  int attention(int x) {
    Dim qkv{"qkv", S("qkv")};
    int q_k_v = linear("attn.qkv", x, H(), {qkv}, "qkv", false);
    Dim a{"a", S("a")}, kvh{"kv", S("kv")}, d{"d", S("d")};
    int q = act("attn.q", {B(), Sq(), a, d}, o_.dtype);
    int k = act("attn.k", {B(), Sq(), kvh, d}, o_.dtype);
    int v = act("attn.v", {B(), Sq(), kvh, d}, o_.dtype);
    Op split = op("attn.split", OpKind::kView, "split", {q_k_v}, {q, k, v});
    split.out_labels = {{"b", "s", "qkv", "d"}, {"b", "s", "qkv", "d"}, {"b", "s", "qkv", "d"}};
    add(std::move(split));
    if (m_.position == PositionKind::kRope) {
      q = pointwise("attn.rope_q", "rope", {q}, 3, false);
      k = pointwise("attn.rope_k", "rope", {k}, 3, false);
    }
    // K and V heads are labelled "a" inside attention: a kv head serves
    // a/kv query heads, and both split over tp together.
    const std::vector<std::string> q_lab{"b", "s", "a", "d"}, kv_lab{"b", "t", "a", "d"};
    Expr bmm = Expr(2) * B().size * S("a") * S("s") * S("s") * S("d");
    int ctx = act("attn.ctx", {B(), Sq(), a, d}, o_.dtype);
    if (o_.cp_ring) {
      // Ring attention (flash-style blocks): K/V keep their sequence shard;
      // the key axis is the query's "s", so nothing is gathered.
      int lse = act("attn.lse", {B(), a, Sq()}, DType::kFP32);
      Op o = op("attn.ring", OpKind::kAttention, "ring_attention", {q, k, v}, {ctx, lse});
      const std::vector<std::string> ring_kv{"b", "s", "a", "d"};
      o.in_labels = {q_lab, ring_kv, ring_kv};
      o.flops = bmm * Expr(2);
      o.model_flops = o.flops;
      o.ring_axis = "cp";
      add(std::move(o));
    } else if (m_.flash_attention) {
      int lse = act("attn.lse", {B(), a, Sq()}, DType::kFP32);
      Op o = op("attn.flash", OpKind::kAttention, "flash_attention", {q, k, v}, {ctx, lse});
      o.in_labels = {q_lab, kv_lab, kv_lab};
      o.unshardable = {"t"};
      o.flops = bmm * Expr(2);
      o.model_flops = o.flops;
      add(std::move(o));
    } else {
      Dim t{"t", S("s")};
      int scores = act("attn.scores", {B(), a, Sq(), t}, o_.dtype);
      Op qk = op("attn.qk", OpKind::kMatmul, "matmul", {q, k}, {scores});
      qk.in_labels = {q_lab, kv_lab};
      qk.flops = bmm;
      qk.model_flops = bmm;
      qk.attn_core = true;
      add(std::move(qk));
      int probs = act("attn.softmax", {B(), a, Sq(), t}, o_.dtype);
      Op sm = op("attn.softmax", OpKind::kSoftmax, "softmax", {scores}, {probs});
      sm.flops = numel(probs) * Expr(5);
      sm.unshardable = {"t"};
      sm.attn_core = true;
      add(std::move(sm));
      probs = dropout("attn.softmax_dropout", probs, false, true);
      Op av = op("attn.av", OpKind::kMatmul, "matmul", {probs, v}, {ctx});
      av.in_labels = {{}, kv_lab};
      av.flops = bmm;
      av.model_flops = bmm;
      av.attn_core = true;
      add(std::move(av));
    }
    Dim ad{"ad", S("a") * S("d")};
    int merged = act("attn.ctx_merged", {B(), Sq(), ad}, o_.dtype);
    Op view = op("attn.merge_heads", OpKind::kView, "merge", {ctx}, {merged});
    view.out_labels = {{"b", "s", "a"}};
    add(std::move(view));
    int out = linear("attn.proj", merged, ad, {H()}, "ad", true);
    return dropout("attn.dropout", out, true);
  }

  int mlp(int x) {
    Dim f{"f", S("f")};
    int y;
    if (m_.mlp == MlpKind::kSwiGLU) {
      int gu = linear("mlp.fc1", x, H(), {Dim{"g2", Expr(2)}, f}, "f", false);
      y = act("mlp.swiglu", {B(), Sq(), f}, o_.dtype);
      Op o = op("mlp.swiglu", OpKind::kElementwise, "swiglu", {gu}, {y});
      o.flops = numel(y) * Expr(5);
      o.unshardable = {"g2"};
      add(std::move(o));
    } else {
      int h1 = linear("mlp.fc1", x, H(), {f}, "f", false);
      y = pointwise("mlp.gelu", "gelu", {h1}, 8, false);
    }
    int out = linear("mlp.fc2", y, f, {H()}, "f", true);
    return dropout("mlp.dropout", out, true);
  }

  // The residual stream between layers: [b, s, h], batch on dp, and with
  // sequence parallelism the sequence on tp (what a stage sends).
  Sharding stream_sharding() const {
    Sharding sh;
    sh.dim_axis = {o_.has_dp ? "dp" : "",
                   o_.has_cp ? "cp" : o_.sequence_parallel && o_.has_tp ? "tp" : "", ""};
    return sh;
  }

  int recv(int64_t boundary) {
    int x = act("pipeline.recv" + std::to_string(boundary), {B(), Sq(), H()}, o_.dtype);
    g_.tensors[x].sharding = stream_sharding();
    Op o = op("pipeline.recv" + std::to_string(boundary), OpKind::kRecv, "recv", {}, {x});
    o.boundary = boundary;
    add(std::move(o));
    return x;
  }

  void send(int x, int64_t boundary) {
    Op o = op("pipeline.send" + std::to_string(boundary), OpKind::kSend, "send", {x}, {});
    o.boundary = boundary;
    o.send_sharding = stream_sharding();
    add(std::move(o));
  }

  int embedding(int tokens, int wte) {
    int x = act("embedding.word", {B(), Sq(), H()}, o_.dtype);
    Op e = op("embedding.word", OpKind::kEmbedding, "embedding", {tokens, wte}, {x});
    e.sp_region = true;
    add(std::move(e));
    if (m_.position == PositionKind::kLearned) {
      int wpe = weight("embedding.position.weight", {{"P", S("P")}, H()}, "", -1);
      int p = act("embedding.position", {B(), Sq(), H()}, o_.dtype);
      Op pe = op("embedding.position", OpKind::kEmbedding, "embedding", {tokens, wpe}, {p});
      add(std::move(pe));
      x = pointwise("embedding.add", "add", {x, p}, 1, true);
    }
    return dropout("embedding.dropout", x, true);
  }

  // x: the final norm's output.
  void head(int x, int wout, int labels) {
    int logits = act("output.logits", {B(), Sq(), Dim{"V", S("V")}}, o_.dtype);
    Op lo = op("output.logits", OpKind::kMatmul, "matmul", {x, wout}, {logits});
    lo.in_labels = {{}, {"V", "h"}};
    lo.flops = Expr(2) * numel(x) * S("V");
    lo.model_flops = lo.flops;
    add(std::move(lo));
    // Vocab-parallel cross entropy (Megatron): three [b,s] statistics are
    // reductions over V; with V sharded each is a partial sum over tp.
    auto stat = [&](const std::string& name, std::vector<int> in) {
      int t = act(name, {B(), Sq()}, DType::kFP32);
      Op o = op(name, OpKind::kReduce, name == "loss.max" ? "max" : "sum", std::move(in), {t});
      o.flops = numel(logits) * Expr(name == "loss.sum_exp" ? 3 : 1);
      add(std::move(o));
      return t;
    };
    int mx = stat("loss.max", {logits});
    int se = stat("loss.sum_exp", {logits, mx});
    int tg = stat("loss.target_logit", {logits, labels});
    int loss = act("loss", {B(), Sq()}, DType::kFP32);
    Op lz = op("loss", OpKind::kLoss, "cross_entropy", {mx, se, tg}, {loss});
    lz.flops = numel(loss) * Expr(3);
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
    int tokens = first ? input("tokens", {B(), Sq()}, DType::kInt64) : -1;
    int labels = last ? input("labels", {B(), Sq()}, DType::kInt64) : -1;
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
        int h1 = norm("ln1", x);
        x = pointwise("attn.residual", "add", {x, attention(h1)}, 1, true);
        int h2 = norm("ln2", x);
        x = pointwise("mlp.residual", "add", {x, mlp(h2)}, 1, true);
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
      head(x, wout, labels);
    }
    if (pipelined && m_.tied_embeddings) {
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
      if (o_.has_cp && t.dims[i].label == "s") t.sharding.dim_axis[i] = "cp";
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
  return {{"b", micro_batch}, {"s", seq_len}, {"h", m.hidden}, {"a", m.num_heads},
          {"kv", m.num_kv_heads}, {"d", m.head_dim}, {"f", m.ffn_hidden}, {"V", m.vocab},
          {"P", m.max_positions > 0 ? m.max_positions : 1},
          {"qkv", (m.num_heads + 2 * m.num_kv_heads) * m.head_dim}};
}

}  // namespace sc
