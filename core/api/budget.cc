#include "api/budget.h"

#include <algorithm>
#include <cstdio>

#include "api/api.h"
#include "api/state.h"
#include "emit/chakra_writer.h"

namespace sc {
namespace {

constexpr int64_t kCap = INT64_MAX / 4;

int64_t sat_mul(int64_t a, int64_t b) {
  if (a <= 0 || b <= 0) return 0;
  if (a > kCap / b) return kCap;
  return a * b;
}
int64_t sat_add(int64_t a, int64_t b) { return std::min(kCap, a + b); }

// Calibration (docs/promises.md, "Budgets"). Trace nodes per layer per
// micro-batch (forward + backward + their collectives and pipeline
// transfers): the richest dense mix counted (tp 2 + SP + cp 2 + full
// recompute) has 84-92, the richest MoE one (DeepSeek-V3 layers, ep, SP,
// full recompute) 111; tests/unit/api/budget_test.cc checks on built jobs
// of every feature that the estimate is never below the built count and
// within 4x of it.
constexpr int64_t kNodesPerLayerMicroBatch = 100;
constexpr int64_t kMoeExtraPerLayerMicroBatch = 40;  // router, dispatch/combine all-to-alls, expert GEMMs
constexpr int64_t kNodesPerLayerOptimizer = 40;      // gradient buckets, ZeRO gathers, optimizer steps
constexpr int64_t kNodesFixed = 200;                 // embedding, head, loss
// An MTP module (model.mtp_num_layers) on the last stage counts as this
// many layers: its decoder layer, and its embedding, norms, projection,
// output layer and loss (less than kNodesFixed / 4 more per micro-batch).
constexpr int64_t kLayersPerMtpModule = 2;
// Engine memory per program node: the TraceNode and its attributes, the
// lowering's per-(micro-batch, tensor) maps and liveness arrays. Measured:
// inspect of gpt3-1.7b, 24 layers, tp 2 + SP, 256 micro-batches (~400K
// nodes) peaks at 242 MB RSS, ~600 bytes per node.
constexpr int64_t kEngineBytesPerNode = 640;
constexpr int64_t kEngineBytesFixed = int64_t{64} << 20;  // graphs, tables, code
// The counted estimate's (estimate_job_counted) engine memory: exact node
// counts, so tighter constants, fitted as upper bounds to the peak RSS of
// `stagecraft inspect` (the build and summary.json) in docs/promises.md,
// "Calibration": 10.5-11 MB for a one-node job, ~310-350 B per program
// node beyond that (81 to 351,415 nodes), the symbolic graphs, ~120 kB per
// layer (Llama-3-70B's 80 layers at 45,068 nodes: 34.7 MB), and the
// communicator-group tables, ~200 B per rank (32,768 ranks: 28.6 MB for
// 6,344 nodes and 80 layers).
constexpr int64_t kCountedBytesPerNode = 400;
constexpr int64_t kCountedBytesPerRank = 300;
constexpr int64_t kCountedBytesPerLayer = 160 * 1000;
constexpr int64_t kCountedBytesFixed = int64_t{14} << 20;

Budget g_budget;

}  // namespace

JobEstimate estimate_job(const Job& job) {
  const auto& p = job.parallel;
  const auto& t = job.training;
  JobEstimate e;
  const int64_t chunks = std::max<int64_t>(1, p.pp * p.virtual_stages);
  e.micro_batches = std::max<int64_t>(1, t.num_micro_batches(p));
  int64_t max_layers = 0;
  // The last stage's MTP modules, as layers.
  const int64_t mtp = sat_mul(std::max<int64_t>(0, job.model.mtp_num_layers), kLayersPerMtpModule);
  if (!p.pipeline_layout.empty() && static_cast<int64_t>(p.pipeline_layout.size()) == chunks) {
    // chunk c belongs to stage c % pp
    const int64_t stages = std::max<int64_t>(1, p.pp);
    for (int64_t s = 0; s < stages; ++s) {
      int64_t n = s == stages - 1 ? mtp : 0;
      for (int64_t c = s; c < chunks; c += stages) n = sat_add(n, std::max<int64_t>(0, p.pipeline_layout[c]));
      max_layers = std::max(max_layers, n);
    }
  } else {
    max_layers = sat_add((std::max<int64_t>(0, job.model.num_layers) + chunks - 1) / chunks *
                             std::max<int64_t>(1, p.virtual_stages),
                         mtp);
  }
  e.max_stage_layers = std::max<int64_t>(1, max_layers);
  const int64_t per_layer_mb = kNodesPerLayerMicroBatch + (job.model.is_moe() ? kMoeExtraPerLayerMicroBatch : 0);
  e.nodes_per_rank = sat_add(sat_add(sat_mul(sat_mul(e.micro_batches, e.max_stage_layers), per_layer_mb),
                                     sat_mul(e.max_stage_layers, kNodesPerLayerOptimizer)),
                             sat_mul(e.micro_batches, kNodesFixed / 4) + kNodesFixed);
  // Every pipeline stage is one program; all are held at once.
  const int64_t total_layers = sat_add(std::max<int64_t>(1, job.model.num_layers), mtp);
  e.program_nodes = sat_add(sat_add(sat_mul(sat_mul(e.micro_batches, total_layers), per_layer_mb),
                                    sat_mul(total_layers, kNodesPerLayerOptimizer)),
                            sat_mul(std::max<int64_t>(1, p.pp), sat_mul(e.micro_batches, kNodesFixed / 4) + kNodesFixed));
  e.engine_bytes = sat_add(sat_add(sat_mul(e.program_nodes, kEngineBytesPerNode), kEngineBytesFixed),
                           sat_add(sat_mul(std::max<int64_t>(1, p.world_size()), kCountedBytesPerRank),
                                   sat_mul(std::max<int64_t>(1, job.model.num_layers), kCountedBytesPerLayer)));
  e.trace_bytes_per_rank = sat_mul(e.nodes_per_rank, kTraceBytesPerNode);
  e.trace_bytes_total = sat_mul(e.trace_bytes_per_rank, std::max<int64_t>(1, p.world_size()));
  e.stage_trace_bytes = sat_mul(e.trace_bytes_per_rank, std::max<int64_t>(1, p.pp));
  return e;
}

namespace {

int varint_len(uint64_t v) {
  int n = 1;
  while (v >= 128) {
    v >>= 7;
    ++n;
  }
  return n;
}
int decimal_len(uint64_t v) {
  int n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

}  // namespace

StageCount count_stage_trace(const RankTrace& t, const TraceMetadata& meta, Status* status) {
  StageCount c;
  std::string bytes;
  *status = write_chakra_trace(t, meta, &bytes);
  c.nodes = static_cast<int64_t>(t.nodes.size());
  for (const TraceNode& n : t.nodes) c.deps += static_cast<int64_t>(n.deps.size());
  c.bytes = static_cast<int64_t>(bytes.size());
  return c;
}

int64_t stage_highest_rank(const RankLayout& layout, int64_t stage) {
  int64_t rank = layout.with_coord(0, "pp", stage);
  for (const char* axis : {"tp", "dp", "cp"}) rank = layout.with_coord(rank, axis, layout.degree(axis) - 1);
  return rank;
}

namespace {

// Each stage of `job`, built (without its summary) as a job of its own.
Result<std::vector<StageCount>> count_stages(const Job& job) {
  Generator::CreateOptions o;
  o.summary = false;
  o.check_budget = false;  // the caller checked this job's quick bound
  SC_ASSIGN_OR_RETURN(Generator g, Generator::create(job, o));
  const auto& p = job.parallel;
  std::vector<StageCount> out;
  for (int64_t s = 0; s < p.pp; ++s) {
    SC_RETURN_IF_ERROR(check_cancelled("the budget estimate"));
    SC_ASSIGN_OR_RETURN(RankTrace t, g.rank_trace(stage_highest_rank(GeneratorAccess::state(g).layout, s)));
    Status st = ok_status();
    out.push_back(count_stage_trace(t, g.metadata(), &st));
    SC_RETURN_IF_ERROR(st);
  }
  return out;
}

// a1 at m1, a2 at m2 (affine in m), at m: rounded up.
int64_t extrapolate(int64_t a1, int64_t a2, int64_t m1, int64_t m2, int64_t m) {
  const int64_t slope = (std::max<int64_t>(0, a2 - a1) + (m2 - m1) - 1) / (m2 - m1);
  return sat_add(a2, sat_mul(slope, m - m2));
}

// `job` with mb micro-batches per iteration per dp rank.
Job with_micro_batches(const Job& job, int64_t mb) {
  Job j = job;
  j.training.global_batch_size = mb * job.parallel.dp * job.training.micro_batch_size;
  return j;
}

// count(mb): every stage's counts at mb micro-batches.
Result<JobEstimate> counted(const Job& job, const std::function<Result<std::vector<StageCount>>(int64_t)>& count) {
  JobEstimate e = estimate_job(job);
  if (job.inference()) return e;
  const auto& p = job.parallel;
  const int64_t m = e.micro_batches;
  const bool interleaved = job.training.schedule == Schedule::kInterleaved;
  const int64_t m1 = interleaved ? p.pp : 1, m2 = 2 * m1;
  const auto& mini = count;
  std::vector<StageCount> full;
  if (m <= m2) {
    SC_ASSIGN_OR_RETURN(full, mini(m));  // the job itself: exact counts
  } else {
    SC_ASSIGN_OR_RETURN(std::vector<StageCount> a, mini(m1));
    SC_ASSIGN_OR_RETURN(std::vector<StageCount> b, mini(m2));
    // What grows with m besides the node count, per node (upper bounds):
    // ids as varints (the node's, each dependency's) and as decimal "t<id>"
    // tensor names (its output, each dependency's input), the micro-batch
    // number in the name, a pipeline tag (micro-batch, direction, chunk),
    // and up to 4 nested length prefixes (node, inputs, outputs, names).
    const int64_t chunks = p.pp * std::max<int64_t>(1, p.virtual_stages);
    const int tag_growth = varint_len(static_cast<uint64_t>(4 * m * chunks)) - varint_len(static_cast<uint64_t>(m2));
    const int name_growth = decimal_len(static_cast<uint64_t>(m - 1)) - decimal_len(static_cast<uint64_t>(m2 - 1));
    for (size_t s = 0; s < a.size(); ++s) {
      StageCount c;
      c.nodes = extrapolate(a[s].nodes, b[s].nodes, m1, m2, m);
      c.deps = extrapolate(a[s].deps, b[s].deps, m1, m2, m);
      c.bytes = extrapolate(a[s].bytes, b[s].bytes, m1, m2, m);
      const int id_growth = varint_len(static_cast<uint64_t>(c.nodes)) - varint_len(static_cast<uint64_t>(b[s].nodes)) +
                            decimal_len(static_cast<uint64_t>(c.nodes)) - decimal_len(static_cast<uint64_t>(b[s].nodes));
      c.bytes = sat_add(c.bytes, sat_add(sat_mul(sat_add(c.nodes, c.deps), id_growth),
                                         sat_mul(c.nodes, std::max(0, name_growth) + std::max(0, tag_growth) + 4)));
      full.push_back(c);
    }
  }
  const int64_t per_stage_ranks = std::max<int64_t>(1, p.world_size() / std::max<int64_t>(1, p.pp));
  e.nodes_per_rank = e.program_nodes = e.trace_bytes_per_rank = e.trace_bytes_total = e.stage_trace_bytes = 0;
  for (const StageCount& c : full) {
    e.stage_trace_bytes = sat_add(e.stage_trace_bytes, c.bytes);
    e.nodes_per_rank = std::max(e.nodes_per_rank, c.nodes);
    e.program_nodes = sat_add(e.program_nodes, c.nodes);
    e.trace_bytes_per_rank = std::max(e.trace_bytes_per_rank, c.bytes);
    e.trace_bytes_total = sat_add(e.trace_bytes_total, sat_mul(c.bytes, per_stage_ranks));
  }
  e.engine_bytes = sat_add(sat_add(sat_mul(e.program_nodes, kCountedBytesPerNode), kCountedBytesFixed),
                           sat_add(sat_mul(std::max<int64_t>(1, p.world_size()), kCountedBytesPerRank),
                                   sat_mul(std::max<int64_t>(1, job.model.num_layers), kCountedBytesPerLayer)));
  e.counted = true;
  return e;
}

}  // namespace

Result<JobEstimate> estimate_job_counted(const Job& job, const Budget& budget) {
  const int64_t layers = estimate_job(job).max_stage_layers;
  return counted(job, [&](int64_t mb) -> Result<std::vector<StageCount>> {
    const Job j = with_micro_batches(job, mb);
    const JobEstimate q = estimate_job(j);
    if (q.engine_bytes > budget.max_engine_bytes) {
      // Even the small build's quick bound is over: not attempted.
      return make_error(ErrorCode::kTooLarge,
                        "this job's layers alone (" + std::to_string(layers) +
                            " per pipeline stage) need about " + human_bytes(q.engine_bytes) +
                            " of memory to build at " + std::to_string(mb) + " micro-batches, over the budget of " +
                            human_bytes(budget.max_engine_bytes) + "; use fewer model.num_layers or a larger parallel.pp",
                        "model.num_layers");
    }
    return count_stages(j);
  });
}

Result<JobEstimate> estimate_job_counted(const Job& job, const StageCounter& count) {
  return counted(job, [&](int64_t mb) { return count(with_micro_batches(job, mb)); });
}

int64_t generate_bytes(const JobEstimate& e, int threads, int64_t ranks, bool archive) {
  const int64_t max_rank = e.trace_bytes_per_rank;
  // Making and self-checking the templates (RankEncoder::create).
  // (2.5 x the largest rank's bytes, up to 64 MiB of them: the multiple
  // falls from ~6 to ~3.5 as ranks grow, docs/promises.md.)
  const int64_t setup =
      sat_add(sat_add(e.stage_trace_bytes, sat_mul(max_rank, 5) / 2),
              sat_add(sat_mul(std::min(max_rank, int64_t{64} << 20), 5) / 2, int64_t{3} << 19));
  const int64_t t = std::max<int64_t>(1, threads);
  int64_t exporter = 0;
  if (archive) {
    const int64_t workers = std::max<int64_t>(1, std::min(t, ranks));
    const int64_t per_worker = std::min<int64_t>(4, (ranks + workers - 1) / workers) + 1;
    exporter = sat_add(setup, sat_mul(sat_mul(workers, per_worker), max_rank));
  } else {
    const int64_t workers = std::max<int64_t>(1, std::min(t, (ranks + 15) / 16));
    exporter = sat_add(setup, sat_mul(workers - 1, max_rank) * 3 / 2);
  }
  return sat_add(e.engine_bytes, exporter);
}

Budget engine_budget() { return g_budget; }
void set_engine_budget(const Budget& b) { g_budget = b; }

Status check_budget(const Job& job, const Budget& b) {
  JobEstimate e = estimate_job(job);
  if (e.engine_bytes <= b.max_engine_bytes) return ok_status();
  if (e.engine_bytes / 4 <= b.max_engine_bytes && !job.inference()) {
    // Maybe over: the counted estimate decides (two small builds).
    Result<JobEstimate> c = estimate_job_counted(job, b);
    if (!c.ok()) return c.error();
    e = c.value();
    if (e.engine_bytes <= b.max_engine_bytes) return ok_status();
  }
  const auto& p = job.parallel;
  const auto& t = job.training;
  std::string msg = "this job needs about " + std::to_string(e.program_nodes) + " trace nodes (" +
                    std::to_string(e.micro_batches) + " micro-batches x " + std::to_string(job.model.num_layers) +
                    " layers) and " + human_bytes(e.engine_bytes) + " of memory to build, over the budget of " +
                    human_bytes(b.max_engine_bytes) + ". Use fewer micro-batches: a smaller training.global_batch_size (" +
                    std::to_string(t.global_batch_size) + "), a larger training.micro_batch_size (" +
                    std::to_string(t.micro_batch_size) + ") or a larger parallel.dp (" + std::to_string(p.dp) +
                    "); or fewer model.num_layers";
  msg += "; the CLI's --allow-large raises the budget to the free memory";
  return make_error(ErrorCode::kTooLarge, msg, "training.global_batch_size");
}

}  // namespace sc
