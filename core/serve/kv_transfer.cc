// The KV transfer between disaggregated pools: see kv_transfer.h.
#include "serve/kv_transfer.h"

#include <map>
#include <string>
#include <utility>

#include "model/transformer.h"

namespace sc {
namespace {

// The pipeline stage of every layer of a pool (its pp split of the layers).
std::vector<int64_t> layer_stages(const Job& pool) {
  const int64_t layers = pool.model.num_layers, pp = pool.parallel.pp;
  std::vector<int64_t> out(static_cast<size_t>(layers), 0);
  for (int64_t st = 0; st < pp; ++st)
    for (const Chunk& c : stage_chunks(layers, pp, 1, pool.parallel.pipeline_layout, st))
      for (int64_t l = c.first_layer; l < c.end_layer && l < layers; ++l) out[static_cast<size_t>(l)] = st;
  return out;
}

// The tp ranks of a pool holding KV unit u: GQA's head u on one tp rank
// (tp divides kv_heads), MLA's one unit on every tp rank.
std::vector<int64_t> holders(const ModelConfig& m, int64_t tp, int64_t u) {
  if (m.is_mla()) {
    std::vector<int64_t> all;
    for (int64_t t = 0; t < tp; ++t) all.push_back(t);
    return all;
  }
  return {u / (m.num_kv_heads / tp)};
}

int64_t rank_of(const RankLayout& layout, int64_t tp, int64_t pp, int64_t dp) {
  int64_t r = 0;
  if (layout.degree("tp") > 1) r = layout.with_coord(r, "tp", tp);
  if (layout.degree("pp") > 1) r = layout.with_coord(r, "pp", pp);
  if (layout.degree("dp") > 1) r = layout.with_coord(r, "dp", dp);
  return r;
}

}  // namespace

namespace serve {

KvTransfer kv_transfer_traces(const Job& full, const RankLayout& pl, const RankLayout& dl, const TraceMetadata& meta) {
  const Job pj = serving_pool_job(full, true), dj = serving_pool_job(full, false);
  const int64_t wp = pl.world_size(), wd = dl.world_size();
  const ModelConfig& m = full.model;
  const int64_t elem = dtype_bytes(full.serving.kv_dtype);
  const int64_t units = m.is_mla() ? 1 : m.num_kv_heads;
  const int64_t unit_bytes = m.is_mla() ? (m.kv_lora_rank + m.qk_rope_head_dim) * elem : 2 * m.head_dim * elem;
  const int64_t page = full.serving.page_tokens;
  const int64_t tokens = (full.serving.prompt_tokens + page - 1) / page * page;
  const std::vector<int64_t> pstage = layer_stages(pj), dstage = layer_stages(dj);
  const int64_t tp_p = pj.parallel.tp, tp_d = dj.parallel.tp, dp_p = pj.parallel.dp, dp_d = dj.parallel.dp;

  std::map<std::pair<int64_t, int64_t>, int64_t> bytes;  // (src, dst) in the transfer's world
  for (int64_t j = 0; j < dp_p; ++j) {  // prompt j: prefill dp rank j -> decode dp rank j mod dp_d
    for (int64_t l = 0; l < m.num_layers; ++l) {
      for (int64_t u = 0; u < units; ++u) {
        const std::vector<int64_t> senders = holders(m, tp_p, u), receivers = holders(m, tp_d, u);
        for (size_t i = 0; i < receivers.size(); ++i) {
          const int64_t src = rank_of(pl, senders[i % senders.size()], pstage[static_cast<size_t>(l)], j);
          const int64_t dst = wp + rank_of(dl, receivers[i], dstage[static_cast<size_t>(l)], j % dp_d);
          bytes[{src, dst}] += tokens * unit_bytes;
        }
      }
    }
  }

  KvTransfer out;
  out.prefill_world = wp;
  out.decode_world = wd;
  out.meta = meta;
  out.meta.world_size = wp + wd;
  out.ranks.resize(static_cast<size_t>(wp + wd));
  for (int64_t r = 0; r < wp + wd; ++r) out.ranks[static_cast<size_t>(r)].rank = r;
  for (const auto& [pair, n] : bytes) {
    const int64_t k = static_cast<int64_t>(out.pairs.size());
    out.pairs.push_back({pair.first, pair.second, n});
    out.total_bytes += n;
    for (const bool send : {true, false}) {
      RankTrace& t = out.ranks[static_cast<size_t>(send ? pair.first : pair.second)];
      TraceNode node;
      node.id = t.nodes.size();
      node.kind = send ? TraceNodeKind::kSend : TraceNodeKind::kRecv;
      node.name = std::string("kv_transfer.") + (send ? "send" : "recv") + std::to_string(k);
      node.comm_size = n;
      node.peer = static_cast<int32_t>(send ? pair.second : pair.first);
      node.tag = static_cast<int32_t>(k);
      node.output_bytes = send ? 0 : static_cast<uint64_t>(n);
      t.nodes.push_back(std::move(node));
    }
  }
  // A rank no prompt's cache touches still gets one node: ASTRA-sim stops
  // with "No dependancy free nodes found" on a trace without any. A compute
  // node of no work costs nothing and keeps the folder one workload.
  for (RankTrace& t : out.ranks) {
    if (!t.nodes.empty()) continue;
    TraceNode idle;
    idle.name = "kv_transfer.idle";
    idle.tensor_size = 1;
    t.nodes.push_back(std::move(idle));
  }
  return out;
}

}  // namespace serve
}  // namespace sc
