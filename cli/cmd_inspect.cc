// stagecraft inspect: what a job resolves to, without writing anything.
// --json prints Generator::summary_json() byte for byte (same bytes as
// the summary.json that generate writes).
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "api/request.h"
#include "args.h"
#include "commands.h"

namespace sc::cli {
namespace {

// A serving pool's layout: "tp 4 pp 2 dp 1 ep 1 x 2 replicas" (pp and
// replicas only when above 1).
std::string pool_text(const PoolLayout& l, bool moe) {
  std::string t = "tp " + std::to_string(l.tp);
  if (l.pp > 1) t += " pp " + std::to_string(l.pp);
  t += " dp " + std::to_string(l.dp) + " ep " + std::to_string(l.ep);
  if (moe && l.expert_tp > 1) t += " expert tp " + std::to_string(l.expert_tp);
  if (l.replicas > 1) t += " x " + std::to_string(l.replicas) + " replicas";
  return t;
}

const char* kCmd = "inspect";
const char* kUsage =
    "usage: stagecraft inspect (--model PRESET | --config job.json) [overrides] [--json]\n"
    "\n"
    "Prints the resolved job and the generator's summary (parameters, FLOPs,\n"
    "memory and communication per rank). Writes nothing.";

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// 1234567 -> "1,234,567"
std::string grouped(int64_t v) {
  std::string digits = std::to_string(v);
  size_t start = v < 0 ? 1 : 0;
  std::string out = digits.substr(0, start);
  for (size_t i = start; i < digits.size(); ++i) {
    if (i > start && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

const char* on_off(bool b) { return b ? "on" : "off"; }

int64_t moe_layer_count(const ModelConfig& m) {
  int64_t n = 0;
  for (int64_t l = 0; l < m.num_layers; ++l) n += m.moe_layer(l) ? 1 : 0;
  return n;
}

void print_job(const Job& job) {
  const ModelConfig& m = job.model;
  const TrainingConfig& t = job.training;
  const HardwareProfile& hw = job.hardware;
  std::cout << "model       " << echo_text(m.name, 200) << ": " << m.num_layers << " layers, hidden " << m.hidden
            << ", " << m.num_heads << " heads (kv " << m.num_kv_heads << ", head_dim " << m.head_dim
            << "), ffn " << m.ffn_hidden << ", vocab " << m.vocab << "\n"
            << "            " << (m.norm == NormKind::kRMSNorm ? "RMSNorm" : "LayerNorm") << ", "
            << (m.mlp == MlpKind::kSwiGLU ? "SwiGLU" : m.mlp == MlpKind::kReLU2 ? "squared-ReLU" : m.mlp == MlpKind::kGeGLU ? "GeGLU" : "GeLU") << " MLP, "
            << (m.position == PositionKind::kRope   ? "RoPE"
                : m.position == PositionKind::kNone ? "no positions"
                                                    : "learned positions")
            << ", "
            << (m.tied_embeddings ? "tied" : "untied") << " embeddings, bias " << on_off(m.linear_bias)
            << ", dropout " << on_off(m.dropout) << "\n"
            << "parameters  " << grouped(closed_form_parameters(m)) << " (closed form)";
  if (m.is_moe()) std::cout << ", " << grouped(closed_form_active_parameters(m)) << " active per token";
  std::cout << "\n";
  if (m.is_moe())
    std::cout << "experts     " << m.num_experts << " routed (top-" << m.experts_per_token << ", width "
              << m.moe_ffn_hidden << ")" << (m.shared_experts ? " + " + std::to_string(m.shared_experts) + " shared" : "")
              << (m.is_hybrid() ? std::string(", MoE in the pattern's E layers")
                  : m.moe_layer_step >= 2 || !m.dense_layers.empty()
                      ? ", MoE on " + std::to_string(moe_layer_count(m)) + " of " + std::to_string(m.num_layers) + " layers"
                      : ", MoE from layer " + std::to_string(m.first_dense_layers))
              << ", capacity factor " << m.capacity_factor << "\n";
  if (m.is_hybrid())
    std::cout << "hybrid      " << m.hybrid_pattern << (m.has_mamba() ? "" : "\n");
  if (m.has_mamba())
    std::cout << " (M Mamba-2: " << m.mamba_heads << " heads x " << m.mamba_head_dim << ", " << m.mamba_groups
              << " groups, state " << m.mamba_state << ", conv " << m.mamba_conv_kernel << ")\n";
  if (m.mtp_num_layers > 0)
    std::cout << "mtp         " << m.mtp_num_layers << " multi-token-prediction module"
              << (m.mtp_num_layers > 1 ? "s" : "") << " on the last stage (" << (m.mtp_layer_moe() ? "MoE" : "dense")
              << " layer" << (m.mtp_num_layers > 1 ? "s" : "") << ")\n";
  if (m.is_mla())
    std::cout << "attention   MLA: q latent " << m.q_lora_rank << ", kv latent " << m.kv_lora_rank << ", rope "
              << m.qk_rope_head_dim << ", v head " << m.v_head_dim << "\n";
  const ParallelConfig& p = job.parallel;
  if (job.inference() && job.serving.disaggregated) {  // the pools are the layout (the serving line below)
    const PoolLayout &pf = job.serving.prefill, &dc = job.serving.decode;
    const int64_t pg = pf.tp * pf.pp * pf.dp * pf.replicas, dg = dc.tp * dc.pp * dc.dp * dc.replicas;
    std::cout << "parallel    disaggregated: prefill pool " << pg << " GPUs + decode pool " << dg << " GPUs = " << pg + dg
              << " GPUs (the pools' layouts: serving line)\n";
  } else {
    std::cout << "parallel    dp " << p.dp << " x tp " << p.tp << " x pp " << p.pp << " x cp " << p.cp << " = "
              << p.world_size() << " ranks, sequence parallel " << on_off(p.sequence_parallel)
              << ", ZeRO " << p.zero << (p.zero > 0 ? " over " + std::to_string(p.shard_degree()) + " ranks" : "")
              << "\n";
  }
  if (m.is_moe() && !(job.inference() && job.serving.disaggregated))  // the pools' ep: serving line
    std::cout << "            experts: ep " << p.ep << " x expert tp " << p.expert_tp_degree() << " x expert dp "
              << p.expert_dp() << " (the same ranks, re-divided)\n";
  if (!job.inference())
  std::cout
            << "training    seq " << t.seq_len << ", micro-batch " << t.micro_batch_size
            << ", global batch " << t.global_batch_size << " (" << t.num_micro_batches(job.parallel)
            << " micro-batches per rank), " << dtype_name(t.dtype) << ", grads "
            << dtype_name(t.grad_reduce_dtype) << "\n";
  std::cout << "hardware    " << echo_text(hw.name, 200) << ": " << fmt("%.1f", hw.peak_for(t.dtype) / 1e12)
            << " TFLOP/s " << dtype_name(t.dtype) << ", " << fmt("%.2f", hw.mem_bandwidth / 1e12)
            << " TB/s HBM, " << fmt("%.0f", hw.memory_bytes / 1e9) << " GB, efficiency "
            << fmt("%.2f", hw.compute_efficiency) << " compute / " << fmt("%.2f", hw.memory_efficiency)
            << " memory\n";
}

// Flattens the summary (whose schema the generator owns) into
// "  a.b.c: value" lines so inspect needs no change when it grows.
void print_flat(const nlohmann::json& v, const std::string& path) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (path.empty() && it.key() == "job") continue;  // printed above
      print_flat(*it, path.empty() ? it.key() : path + "." + it.key());
    }
    return;
  }
  std::string text = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (v.is_array() && text.size() > 100) {
    text = "[";
    text.append(std::to_string(v.size())).append(" items]");
  }
  if (v.is_number_integer()) text = grouped(v.get<int64_t>());
  std::cout << "  " << path << ": " << text << "\n";
}

std::string gib(double bytes) { return fmt("%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0)); }
std::string ms(const nlohmann::json& v) { return v.is_number() ? fmt("%.1f ms", v.get<double>() * 1e3) : "?"; }

// An inference job's serving figures (summary.json's "inference", docs/inference.md).
void print_serving(const Job& job, const nlohmann::json& inf) {
  const ServingConfig& s = job.serving;
  const int64_t seq = s.prompt_tokens + s.output_tokens;
  const int64_t paged = (seq + s.page_tokens - 1) / s.page_tokens * s.page_tokens;
  const nlohmann::json& mem = inf["memory_bytes_per_rank"];
  auto num = [](const nlohmann::json& v) { return v.is_number() ? v.get<double>() : 0.0; };
  std::string seq_text = std::to_string(seq) + " tokens (" + std::to_string(paged) + " paged)";
  std::string fit_text = std::to_string(seq) + " tokens";
  if (!s.requests.empty()) {  // a mix (docs/inference.md, "Request mixes"): the mean sequence of its classes
    std::cout << "requests    a mix of " << s.requests.size() << " classes:";
    for (const auto& c : inf["requests"])
      std::cout << " " << c["prompt_tokens"].get<int64_t>() << " + " << c["output_tokens"].get<int64_t>() << " ("
                << fmt("%.0f", 100 * num(c["share"])) << "%, ttft " << ms(c["ttft_seconds"]) << ")";
    std::cout << "; prefill traced at the longest prompt\n";
    seq_text = "the mix (mean of the classes, paged)";
    fit_text = "the mix";
  }
  std::cout << "serving     prompt " << s.prompt_tokens << " + output " << s.output_tokens << " tokens, weights "
            << dtype_name(s.weights_dtype) << ", KV cache " << dtype_name(s.kv_dtype) << " in pages of "
            << s.page_tokens << ", prefill "
            << (s.chunk_tokens > 0 ? "in chunks of " + std::to_string(s.chunk_tokens) : std::string("whole"))
            << (s.disaggregated ? ", disaggregated pools (prefill " + pool_text(s.prefill, job.model.is_moe()) +
                                      ", decode " + pool_text(s.decode, job.model.is_moe()) + ")"
                                : std::string())
            << (s.two_batch_overlap ? ", two-batch overlap (two micro-batches of half the tokens)" : "")
            << "\n"
            << "kv cache    " << grouped(inf["kv_cache_bytes_per_token"].get<int64_t>())
            << " bytes per token (whole model), " << grouped(inf["kv_cache_bytes_per_token_per_rank"].get<int64_t>())
            << " per rank; " << gib(num(inf["kv_cache_bytes_per_sequence"])) << " per sequence of " << seq_text
            << "\n"
            << (inf.contains("state_cache_bytes_per_sequence")  // hybrid models (docs/inference.md, "Hybrid models")
                    ? "mamba state " + grouped(inf["state_cache_bytes_per_sequence"].get<int64_t>()) +
                          " bytes per sequence (whole model), " +
                          grouped(inf["state_cache_bytes_per_sequence_per_rank"].get<int64_t>()) +
                          " per rank, whatever its length\n"
                    : std::string())
            << "fit         " << grouped(inf["max_concurrent_sequences"].get<int64_t>()) << " sequences of " << fit_text
            << " fit per instance; per rank: weights " << gib(num(mem["weights"])) << " + activations "
            << gib(num(mem["activations"])) << " + KV " << gib(num(mem["kv_cache"])) << " of "
            << gib(num(mem["capacity"])) << "\n"
            << "concurrency " << grouped(inf["concurrency"].get<int64_t>())
            << (s.concurrency == 0 ? " (as many as fit)" : "") << "\n"
            << "ttft        " << ms(inf["ttft_seconds"]) << "\n"
            << "tpot        " << ms(inf["tpot_seconds"]) << " ("
            << fmt("%.1f", num(inf["tokens_per_second_per_user"])) << " tokens/s per user)\n"
            << "itl         " << ms(inf["itl_seconds"]) << " (between a request's tokens: TPOT + other requests' prefills)\n"
            << "throughput  " << fmt("%.1f", num(inf["tokens_per_second_per_gpu"])) << " output tokens/s per GPU ("
            << grouped(inf["gpus"].get<int64_t>()) << " GPUs)\n";
  if (inf.contains("workload") && inf["workload"]["requests"].get<int64_t>() == 0) {
    std::cout << "workload    no request arrived (rate x duration_seconds drew none): no latencies to report\n";
  } else if (inf.contains("workload")) {  // serving.workload (docs/inference.md, "Workload")
    const nlohmann::json& w = inf["workload"];
    // TPOT and ITL are gaps between a request's tokens: none when every
    // request has one output token (as simulate prints them: "-").
    const bool gaps = w["output_tokens"].get<int64_t>() > w["requests"].get<int64_t>();
    std::cout << "workload    " << grouped(w["requests"].get<int64_t>()) << " requests over "
              << fmt("%.1f s", num(w["makespan_seconds"])) << ", " << grouped(w["iterations"].get<int64_t>())
              << " iterations, " << grouped(w["preemptions"].get<int64_t>()) << " preemptions; "
              << fmt("%.2f", num(w["requests_per_second"])) << " requests/s, "
              << fmt("%.1f", num(w["output_tokens_per_second_per_gpu"])) << " output tokens/s per GPU; KV cache "
              << fmt("%.0f%%", 100 * num(w["kv_cache_utilization_mean"])) << " used on average, "
              << fmt("%.0f%%", 100 * num(w["kv_cache_utilization_max"])) << " at most\n";
    for (const char* k : {"ttft", "tpot", "itl", "e2e", "queue"}) {
      const std::string b = std::string(k) + "_seconds";
      std::cout << "  " << k << std::string(10 - std::string(k).size(), ' ');
      if (!gaps && (std::string(k) == "tpot" || std::string(k) == "itl")) {
        std::cout << "- (every request has one output token)\n";
        continue;
      }
      std::cout << "p50 " << ms(inf[b + "_p50"]) << ", p90 " << ms(inf[b + "_p90"])
                << ", p99 " << ms(inf[b + "_p99"]) << ", mean " << ms(inf[b + "_mean"]) << "\n";
    }
    if (w.contains("goodput_requests_per_second"))
      std::cout << "  goodput   " << fmt("%.2f", num(w["goodput_requests_per_second"]))
                << " requests/s within serving.slo\n";
  }
}

// A training job's memory per stage (summary.json's stages[].memory_bytes):
// what a rank holds at its peak, against the device, and whether it fits.
void print_memory(const nlohmann::json& stages) {
  if (!stages.is_array() || stages.empty()) return;
  auto num = [](const nlohmann::json& v) { return v.is_number() ? v.get<double>() : 0.0; };
  std::cout << "memory      per GPU at the peak (summary.json's stages[].memory_bytes.peak_live):\n";
  for (const nlohmann::json& st : stages) {
    if (!st.is_object() || !st.contains("memory_bytes")) continue;
    const nlohmann::json& m = st["memory_bytes"];
    const double live = num(m["peak_live"]), cap = num(m["capacity"]);
    std::cout << "  stage " << st["index"].get<int64_t>() << " (" << st["layers"].get<int64_t>() << " layers): weights "
              << gib(num(m["weights"])) << " + gradients " << gib(num(m["gradients"])) << " + optimizer "
              << gib(num(m["optimizer"]))
              << (m.contains("fp8_weight_copies") ? " + FP8 weight copies " + gib(num(m["fp8_weight_copies"])) : std::string())
              << " + activations " << gib(num(m["activations_live_peak"])) << " = "
              << gib(live) << " of " << gib(cap) << (live > cap ? ": does not fit" : "") << "\n";
  }
}

}  // namespace

int cmd_inspect(const std::vector<std::string>& argv) {
  std::vector<FlagSpec> specs = job_flags();
  specs.push_back({"--json", nullptr, false, "", "print summary.json instead of text"});
  Args args;
  if (std::optional<int> rc = parse_or_exit(kCmd, argv, specs, kUsage, &args)) return *rc;
  if (!args.positional.empty()) return usage_error(kCmd, "unexpected argument '" + args.positional[0] + "'");
  Job job;
  if (int rc = load_job(kCmd, args, &job); rc != kExitOk) return rc;
  std::string summary;
  if (int rc = answer_request(kCmd, job, "summary", &summary); rc != kExitOk) return rc;
  if (args.has("--json")) {
    std::cout << summary;
    return kExitOk;
  }
  print_job(job);
  nlohmann::json parsed = nlohmann::json::parse(summary, nullptr, false);
  if (!parsed.is_discarded() && job.inference() && parsed.contains("inference"))
    print_serving(job, parsed["inference"]);
  if (!parsed.is_discarded() && !job.inference() && parsed.contains("stages")) print_memory(parsed["stages"]);
  if (!parsed.is_discarded()) {
    std::cout << "summary\n";
    print_flat(parsed, "");
  }
  return kExitOk;
}

}  // namespace sc::cli
