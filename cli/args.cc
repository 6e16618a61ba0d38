#include "args.h"
#include "base/utf8.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <tuple>

#include "api/budget.h"
#include "api/request.h"
#include "base/json_fields.h"
#include "export.h"

namespace sc::cli {
namespace {

const FlagSpec* find_spec(const std::vector<FlagSpec>& specs, const std::string& name) {
  for (const FlagSpec& s : specs) {
    if (name == s.name || (s.alias && name == s.alias)) return &s;
  }
  return nullptr;
}

// Integer flags are checked here (usage error when not a number); range
// checks happen in parse_job so flag and file values share one message.
struct IntFlag { const char* flag; const char* section; const char* key; };
constexpr IntFlag kIntFlags[] = {
    {"--dp", "parallel", "dp"},
    {"--tp", "parallel", "tp"},
    {"--pp", "parallel", "pp"},
    {"--virtual-stages", "parallel", "virtual_stages"},
    {"--zero", "parallel", "zero"},
    {"--cp", "parallel", "cp"},
    {"--ep", "parallel", "ep"},
    {"--expert-tp", "parallel", "expert_tp"},
    {"--shard-group", "parallel", "shard_group"},
    {"--seq-len", "training", "seq_len"},
    {"--micro-batch-size", "training", "micro_batch_size"},
    {"--global-batch-size", "training", "global_batch_size"},
    {"--layers", "model", "num_layers"},
    {"--mtp-num-layers", "model", "mtp_num_layers"},
};

// String flags copied verbatim into the job JSON (parse_job checks them).
struct StringFlag { const char* flag; const char* section; const char* key; };
constexpr StringFlag kStringFlags[] = {
    {"--dtype", "training", "dtype"},
    {"--schedule", "training", "schedule"},
    {"--recompute", "training", "recompute"},
    {"--fp8-recipe", "training", "fp8_recipe"},
    {"--order", "parallel", "order"},
    {"--cp-algorithm", "parallel", "cp_algorithm"},
    {"--moe-dispatcher", "parallel", "moe_dispatcher"},
};

// Number flags (usage error when not a number; ranges in parse_job).
constexpr StringFlag kNumberFlags[] = {
    {"--moe-imbalance", "parallel", "moe_imbalance"},
};

std::optional<double> parse_number(const std::string& s) {
  double v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end || s.empty() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

std::optional<int64_t> parse_int(const std::string& s) {
  int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end || s.empty()) return std::nullopt;
  return v;
}

std::string int_flag_error(const std::string& flag, const std::string& value) {
  const size_t digits = value.find_first_not_of("0123456789", !value.empty() && value[0] == '-' ? 1 : 0);
  const bool all_digits = !value.empty() && value != "-" && digits == std::string::npos;
  return flag + (all_digits ? " is out of range (got '" : " expects an integer (got '") + value + "')";
}

void print_hf_warnings(const std::string& command, const Job& job) {
  for (const std::string& w : job.model.hf_warnings)
    std::cerr << "stagecraft " << command << ": warning: model.hf_config: " << w << "\n";
}

bool is_trace_file(const std::string& name, const std::string& prefix) {
  return name.size() > prefix.size() + 4 && name.compare(0, prefix.size() + 1, prefix + ".") == 0 &&
         name.compare(name.size() - 3, 3, ".et") == 0;
}

int64_t rank_of_file(const std::string& name, const std::string& prefix) {
  const std::string mid = name.substr(prefix.size() + 1, name.size() - prefix.size() - 4);
  if (mid.empty() || mid.size() > 15 || (mid.size() > 1 && mid[0] == '0')) return -1;
  int64_t r = 0;
  for (char c : mid) {
    if (c < '0' || c > '9') return -1;
    r = r * 10 + (c - '0');
  }
  return r;
}

bool parse_int_list(const std::string& text, int64_t min_value, size_t max_count, std::vector<int64_t>* out) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string part = text.substr(start, comma - start);
    if (part.empty() || part.size() > 7 || part.find_first_not_of("0123456789") != std::string::npos) return false;
    const int64_t v = std::stoll(part);
    if (v < min_value) return false;
    out->push_back(v);
    start = comma + 1;
  }
  return !out->empty() && out->size() <= max_count;
}

namespace {

// The object at j[section], created when absent. Null when the section
// exists but is not an object: parse_job then reports its type.
nlohmann::json* section(nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) {
    j[name] = nlohmann::json::object();
    return &j[name];
  }
  if (std::string(name) == "model" && it->is_string()) {  // preset shorthand
    *it = nlohmann::json{{"preset", *it}};
  }
  return it->is_object() ? &*it : nullptr;
}

// Which flag set a path, for "(from --dp)" in error messages; `message`
// tells a pipeline layout's length (pp, virtual stages) from its sum (layers).
std::string flag_for_path(const Args& args, const std::string& path, const std::string& message) {
  // pp x virtual stages against the layers: each of the three flags given
  // is a cause (naming --pp alone blamed it for --virtual-stages' value).
  if (path == "parallel.pp" && message.find("x virtual_stages (") != std::string::npos) {
    std::vector<std::string> given;
    for (const char* f : {"--pp", "--virtual-stages", "--layers"})
      if (args.has(f)) given.push_back(f);
    std::string out;
    for (size_t i = 0; i < given.size(); ++i)
      out += (i == 0 ? "" : i + 1 == given.size() ? " and " : ", ") + given[i];
    if (!out.empty()) return out;
  }
  for (const IntFlag& f : kIntFlags) {
    if (args.has(f.flag) && path == std::string(f.section) + "." + f.key) return f.flag;
  }
  if (args.has("--model") && path.rfind("model.preset", 0) == 0) return "--model";
  if (args.has("--recompute-modules") && path.rfind("training.recompute_modules", 0) == 0) return "--recompute-modules";
  for (const StringFlag& f : kStringFlags) {
    if (args.has(f.flag) && path.rfind(std::string(f.section) + "." + f.key, 0) == 0) return f.flag;
  }
  for (const StringFlag& f : kNumberFlags) {
    if (args.has(f.flag) && path == std::string(f.section) + "." + f.key) return f.flag;
  }
  if (args.has("--hardware") && path.rfind("hardware", 0) == 0) return "--hardware";
  if (args.has("--sequence-parallel") && (path == "training.seq_len" || path == "parallel.sequence_parallel"))
    return "--sequence-parallel";
  // A pipeline layout checked against what a flag changed: its length
  // against pp x virtual stages, its sum against the layers.
  if (path == "parallel.pipeline_layout") {
    if (message.find("needs pp x virtual_stages") != std::string::npos) {
      const bool pp = args.has("--pp"), v = args.has("--virtual-stages");
      if (pp || v) return pp && v ? "--pp and --virtual-stages" : pp ? "--pp" : "--virtual-stages";
    }
    if (args.has("--layers") && message.find("the model has") != std::string::npos) return "--layers";
  }
  if (args.has("--overlap-param-gather") && path == "training.overlap_param_gather") return "--overlap-param-gather";
  if (args.has("--moe-shared-expert-overlap") && path == "training.moe_shared_expert_overlap")
    return "--moe-shared-expert-overlap";
  if (args.has("--moe-pad-expert-input-to-capacity") && path == "training.moe_pad_expert_input_to_capacity")
    return "--moe-pad-expert-input-to-capacity";
  for (const char* f : {"--overlap-moe-expert-parallel-comm", "--no-overlap-moe-expert-parallel-comm"})
    if (args.has(f) && path == "training.overlap_moe_expert_parallel_comm") return f;
  for (const char* f : {"--delay-wgrad-compute", "--no-delay-wgrad-compute"})
    if (args.has(f) && path == "training.delay_wgrad_compute") return f;
  return "";
}

}  // namespace

const std::string* Args::get(const std::string& name) const {
  auto it = flags.find(name);
  return it == flags.end() ? nullptr : &it->second;
}

std::optional<Args> parse_args(const std::vector<std::string>& args,
                               const std::vector<FlagSpec>& specs, std::string* error) {
  Args out;
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (flags_done || a.size() < 2 || a[0] != '-') {
      out.positional.push_back(a);
      continue;
    }
    if (a == "--") { flags_done = true; continue; }
    size_t eq = a.find('=');
    std::string name = a.substr(0, eq);
    const FlagSpec* spec = find_spec(specs, name);
    if (!spec) { *error = "unknown flag " + name; return std::nullopt; }
    std::string value;
    if (spec->takes_value) {
      if (eq != std::string::npos) {
        value = a.substr(eq + 1);
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        *error = name + " needs a value (" + spec->value_name + ")";
        return std::nullopt;
      }
    } else if (eq != std::string::npos) {
      *error = name + " takes no value";
      return std::nullopt;
    }
    if (out.flags.count(spec->name)) { *error = std::string(spec->name) + " given twice"; return std::nullopt; }
    out.flags[spec->name] = value;
  }
  return out;
}

std::string flags_help(const std::vector<FlagSpec>& specs) {
  std::string s;
  for (const FlagSpec& f : specs) {
    std::string left = std::string("  ") + f.name;
    if (f.alias) left += std::string(", ") + f.alias;
    if (f.takes_value) left += std::string(" ") + f.value_name;
    if (left.size() < 28) left.resize(28, ' '); else left += "  ";
    s += left + f.help + "\n";
  }
  return s;
}

const std::vector<FlagSpec>& job_flags() {
  static const std::vector<FlagSpec> kFlags = {
      {"--config", "-c", true, "FILE", "job JSON file (docs/job-format.md); flags override it"},
      {"--model", nullptr, true, "PRESET", "model preset (sets model.preset), e.g. gpt3-1.7b"},
      {"--layers", nullptr, true, "N", "override model.num_layers"},
      {"--mtp-num-layers", nullptr, true, "N", "multi-token-prediction layers trained on the last stage (model.mtp_num_layers)"},
      {"--dp", nullptr, true, "N", "data-parallel degree"},
      {"--tp", nullptr, true, "N", "tensor-parallel degree"},
      {"--pp", nullptr, true, "N", "pipeline stages"},
      {"--virtual-stages", nullptr, true, "V", "model chunks per pipeline rank (interleaved-1f1b)"},
      {"--cp", nullptr, true, "N", "context-parallel degree (sequence split over N ranks)"},
      {"--cp-algorithm", nullptr, true, "A", "context parallelism: allgather (K/V all-gathered, Llama 3) or ring (Megatron-Core and TE: p2p)"},
      {"--ep", nullptr, true, "N", "expert parallelism (MoE models), folded into tp x cp x dp as Megatron does"},
      {"--expert-tp", nullptr, true, "N", "tensor parallelism inside the experts (default: tp)"},
      {"--moe-dispatcher", nullptr, true, "D", "MoE token dispatcher: alltoall (default), allgather, deepep"},
      {"--moe-imbalance", nullptr, true, "X", "router imbalance: busiest expert rank's tokens over the mean (>= 1)"},
      {"--zero", nullptr, true, "Z", "ZeRO stage over dp: 0, 1 (optimizer), 2 (+gradients), 3 (+parameters, FSDP)"},
      {"--shard-group", nullptr, true, "N", "HSDP: shard ZeRO state over N data-parallel ranks, replicate across the rest"},
      {"--schedule", nullptr, true, "S", "pipeline schedule: 1f1b, gpipe, interleaved-1f1b, zero-bubble"},
      {"--recompute", nullptr, true, "R", "activation recomputation: none, selective, full"},
      {"--recompute-modules", nullptr, true, "LIST", "with --recompute selective, Megatron's modules: core_attn (default), moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts"},
      {"--order", nullptr, true, "O", "rank layout, innermost first: megatron, llama3 or e.g. tp,cp,pp,dp"},
      {"--sequence-parallel", nullptr, false, "", "Megatron sequence parallelism"},
      {"--tp-comm-overlap", nullptr, false, "", "Transformer Engine tp communication/GEMM overlap (tp > 1 with SP)"},
      {"--overlap-grad-reduce", nullptr, false, "", "reduce gradient buckets during backward (Megatron-LM --overlap-grad-reduce)"},
      {"--no-overlap-grad-reduce", nullptr, false, "", "reduce gradients once after backward (the default, Megatron-LM's)"},
      {"--overlap-param-gather", nullptr, false, "", "ZeRO 1/2: gather parameters during the next forward"},
      {"--overlap-p2p-comm", nullptr, false, "", "interleaved pipelines: async send/recv beside the next chunk (the default, Megatron-LM's)"},
      {"--no-overlap-p2p-comm", nullptr, false, "", "interleaved pipelines: blocking send/recv (Megatron-LM --no-overlap-p2p-communication)"},
      {"--no-overlap-p2p-communication", nullptr, false, "", "the same, as Megatron-LM spells it"},
      {"--moe-shared-expert-overlap", nullptr, false, "", "MoE: shared experts beside the dispatch/combine all-to-all"},
      {"--moe-pad-expert-input-to-capacity", nullptr, false, "", "MoE: expert buffers padded to capacity (token drop): no host sync in the dispatcher"},
      {"--overlap-moe-expert-parallel-comm", nullptr, false, "", "MoE, ep > 1: one micro-batch's forward and another's backward combined, EP all-to-alls beside compute"},
      {"--no-overlap-moe-expert-parallel-comm", nullptr, false, "", "no EP all-to-all overlap (the default)"},
      {"--delay-wgrad-compute", nullptr, false, "", "with --overlap-moe-expert-parallel-comm: weight gradients after the all-to-alls they would delay"},
      {"--no-delay-wgrad-compute", nullptr, false, "", "weight gradients with their backward (the default)"},
      {"--cross-entropy-loss-fusion", nullptr, false, "", "the loss as one fused kernel over the bf16 logits (the default, Megatron-Bridge's)"},
      {"--no-cross-entropy-loss-fusion", nullptr, false, "", "Megatron-LM's unfused loss: fp32 logits, a pass per step (its default)"},
      {"--seq-len", nullptr, true, "N", "sequence length in tokens"},
      {"--micro-batch-size", nullptr, true, "N", "sequences per micro-batch"},
      {"--global-batch-size", nullptr, true, "N", "sequences per iteration (default dp x micro-batch)"},
      {"--dtype", nullptr, true, "D", "compute dtype: bf16, fp16, fp32, tf32 (FP8 training: --fp8-recipe)"},
      {"--fp8-recipe", nullptr, true, "R", "FP8 linear-layer GEMMs as Transformer Engine runs them: delayed, tensorwise, blockwise, mxfp8 (none: off)"},
      {"--hardware", nullptr, true, "H", "hardware preset: a100, h100, h200, h800, b200"},
      {"--allow-large", nullptr, false, "", "build a job past the work budget if free memory allows (docs/promises.md)"},
      {"--help", "-h", false, "", "show this help"},
  };
  return kFlags;
}

std::string prefix_error(const std::string& prefix) {
  return "--prefix must be a file name of letters, digits, '.', '_' or '-', other than '.' and '..', of at most " +
         std::to_string(kMaxTracePrefix) + " characters (got '" + echo_text(prefix) + "')";
}

int usage_error(const std::string& command, const std::string& message) {
  std::cerr << "stagecraft " << command << ": " << jsonf::clip(message, 2000) << "\n"
            << "(see 'stagecraft " << command << " --help')\n";
  return kExitUsage;
}

int report_error(const std::string& command, const Error& e) {
  // One bounded line whatever the input echoed (messages clip at the source;
  // this is the backstop).
  std::cerr << "stagecraft " << command << ": error: " << jsonf::clip(e.to_string(), 2000) << " ["
            << error_code_name(e.code) << "]\n";
  return kExitError;
}

int report_error_or_signal(const std::string& command, const Error& e, const std::string& after) {
  if (e.code == ErrorCode::kCancelled) exit_if_signalled(command, " (" + e.message + ")" + after);
  return report_error(command, e);
}

Status read_regular_file(const std::string& path, size_t max_bytes, std::string* out) {
  auto fail = [&](const std::string& why) { return make_error(ErrorCode::kIoError, path + ": " + why); };
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return make_error(ErrorCode::kIoError, "cannot read " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return fail(std::string("cannot read: ") + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(S_ISDIR(st.st_mode) ? "is a directory, not a file" : "is not a regular file (a FIFO, socket or device); give a file");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return fail("is " + std::to_string(st.st_size) + " bytes; the limit for this input is " + std::to_string(max_bytes));
  }
  out->clear();
  out->reserve(static_cast<size_t>(st.st_size));
  char chunk[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return fail(std::string("error reading: ") + std::strerror(err));
    }
    if (n == 0) break;
    if (out->size() + static_cast<size_t>(n) > max_bytes) {  // grew while we read
      ::close(fd);
      out->clear();
      return fail("grew past the limit for this input (" + std::to_string(max_bytes) + " bytes) while being read");
    }
    out->append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  return ok_status();
}

Result<std::string> read_file(const std::string& path, size_t max_bytes) {
  std::string text;
  SC_RETURN_IF_ERROR(read_regular_file(path, max_bytes, &text));
  return text;
}

namespace {
// MemAvailable from /proc/meminfo, bytes; 0 when unknown.
int64_t available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}
}  // namespace

int load_job(const std::string& command, const Args& args, Job* job, const char* mode) {
  nlohmann::json j = nlohmann::json::object();
  if (*mode != '\0' && !args.has("--config")) j["mode"] = mode;  // a job of flags alone
  if (const std::string* config = args.get("--config")) {
    Result<std::string> text = read_file(*config, kMaxJobFileBytes);
    if (!text.ok()) return report_error(command, text.error());
    Result<nlohmann::json> parsed = jsonf::parse_text(*text);
    if (!parsed.ok()) {
      Error e = parsed.error();
      e.message = *config + ": " + e.message;
      return report_error(command, e);
    }
    j = std::move(parsed).value();
  } else if (!args.has("--model")) {
    return usage_error(command, "give --model PRESET or --config FILE");
  }
  if (j.is_object()) {  // else parse_job reports the type
    if (const std::string* model = args.get("--model")) {
      if (nlohmann::json* m = section(j, "model")) {
        m->erase("hf_config");
        (*m)["preset"] = *model;
      }
    }
    for (const IntFlag& f : kIntFlags) {
      const std::string* v = args.get(f.flag);
      if (!v) continue;
      std::optional<int64_t> n = parse_int(*v);
      if (!n) return usage_error(command, int_flag_error(f.flag, *v));
      if (nlohmann::json* s = section(j, f.section)) (*s)[f.key] = *n;
    }
    if (args.has("--sequence-parallel")) {
      if (nlohmann::json* s = section(j, "parallel")) (*s)["sequence_parallel"] = true;
    }
    // Megatron-LM's overlap and loss-fusion flags (training.<key> booleans).
    std::map<std::string, std::string> set_by;  // key -> the flag that set it
    for (const auto& [flag, key, value] : {std::tuple{"--tp-comm-overlap", "tp_comm_overlap", true},
                                          std::tuple{"--overlap-grad-reduce", "overlap_grad_reduce", true},
                                          std::tuple{"--no-overlap-grad-reduce", "overlap_grad_reduce", false},
                                          std::tuple{"--overlap-param-gather", "overlap_param_gather", true},
                                          std::tuple{"--overlap-p2p-comm", "overlap_p2p_comm", true},
                                          std::tuple{"--no-overlap-p2p-comm", "overlap_p2p_comm", false},
                                          std::tuple{"--no-overlap-p2p-communication", "overlap_p2p_comm", false},
                                          std::tuple{"--moe-shared-expert-overlap", "moe_shared_expert_overlap", true},
                                          std::tuple{"--moe-pad-expert-input-to-capacity", "moe_pad_expert_input_to_capacity", true},
                                          std::tuple{"--overlap-moe-expert-parallel-comm", "overlap_moe_expert_parallel_comm", true},
                                          std::tuple{"--no-overlap-moe-expert-parallel-comm", "overlap_moe_expert_parallel_comm", false},
                                          std::tuple{"--delay-wgrad-compute", "delay_wgrad_compute", true},
                                          std::tuple{"--no-delay-wgrad-compute", "delay_wgrad_compute", false},
                                          std::tuple{"--cross-entropy-loss-fusion", "cross_entropy_loss_fusion", true},
                                          std::tuple{"--no-cross-entropy-loss-fusion", "cross_entropy_loss_fusion", false}}) {
      if (!args.has(flag)) continue;
      nlohmann::json* s = section(j, "training");
      if (!s) continue;
      // A flag and its negation together: say so rather than let the
      // table's order decide.
      if (std::string* other = set_by.count(key) ? &set_by[key] : nullptr; other && (*s)[key] != value)
        return usage_error(command, std::string(flag) + " contradicts " + *other + " (training." + key + ")");
      // Two spellings of one flag are the flag given twice.
      if (set_by.count(key))
        return usage_error(command, std::string(flag) + " and " + set_by[key] + " are the same flag (training." + key +
                                        "), given twice");
      set_by[key] = flag;
      (*s)[key] = value;
    }
    for (const StringFlag& f : kStringFlags) {
      const std::string* v = args.get(f.flag);
      if (!v) continue;
      if (nlohmann::json* s = section(j, f.section)) (*s)[f.key] = *v;
    }
    if (const std::string* v = args.get("--recompute-modules")) {  // a comma-separated list -> a JSON list
      nlohmann::json mods = nlohmann::json::array();
      size_t start = 0;
      for (;;) {
        const size_t comma = v->find(',', start);
        std::string m = v->substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        m.erase(0, m.find_first_not_of(" \t"));
        m.erase(m.find_last_not_of(" \t") + 1);
        mods.push_back(m);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      if (nlohmann::json* s = section(j, "training")) (*s)["recompute_modules"] = mods;
    }
    for (const StringFlag& f : kNumberFlags) {
      const std::string* v = args.get(f.flag);
      if (!v) continue;
      std::optional<double> x = parse_number(*v);
      if (!x) return usage_error(command, std::string(f.flag) + " expects a number (got '" + *v + "')");
      if (nlohmann::json* s = section(j, f.section)) (*s)[f.key] = *x;
    }
    if (const std::string* h = args.get("--hardware")) {
      auto it = j.find("hardware");
      if (it != j.end() && it->is_object()) (*it)["preset"] = *h;
      else j["hardware"] = *h;
    }
  }
  Result<Job> parsed = parse_job(j.dump());
  if (!parsed.ok()) {
    Error e = parsed.error();
    std::string flag = flag_for_path(args, e.path, e.message);
    if (!flag.empty()) e.message += " (from " + flag + ")";
    return report_error(command, e);
  }
  *job = std::move(parsed).value();
  // inspect --json carries them too, as hf_import.warnings.
  print_hf_warnings(command, *job);
  {
    // The native CLI's default budget is 8 GiB of estimated engine memory
    // (wasm keeps the core's 2 GiB, bounded by its 4 GiB heap): published
    // runs such as Korthikanti et al.'s 1T job (~3 GiB) build by default,
    // runaway jobs (10^7 nodes and more) are still refused at once.
    Budget b = engine_budget();
    b.max_engine_bytes = std::max(b.max_engine_bytes, kCliEngineBudgetBytes);
    set_engine_budget(b);
  }
  if (args.has("--allow-large")) {
    // Up to 80% of the memory free now; a job that needs more is refused
    // with the same message (the estimate and what to change).
    Budget b = engine_budget();
    b.max_engine_bytes = std::max(b.max_engine_bytes, available_memory() / 10 * 8);
    set_engine_budget(b);
  }
  return kExitOk;
}

Generator::CreateOptions cli_create_options() {
  Generator::CreateOptions options;
  options.threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
  return options;
}

std::optional<Generator> build_generator(const std::string& command, const Job& job, int* rc) {
  install_signal_cleanup();
  test_pause("build");  // tests: a signal here must stop the build below
  Result<Generator> gen = Generator::create(job, cli_create_options());
  if (!gen.ok()) {
    *rc = report_error_or_signal(command, gen.error());
    return std::nullopt;
  }
  return std::move(gen).value();
}

std::optional<int> parse_or_exit(const std::string& command, const std::vector<std::string>& argv,
                                 const std::vector<FlagSpec>& specs, const std::string& usage,
                                 Args* out) {
  std::string error;
  std::optional<Args> a = parse_args(argv, specs, &error);
  if (!a) return usage_error(command, error);
  // A value that goes into the job (every flag but the paths: FILE, OUT,
  // DIR) must be valid UTF-8, as a JSON string is: the job built from the
  // flags used to abort on a strict dump of e.g. --model $'gpt\xff'.
  for (const FlagSpec& s : specs) {
    if (!s.takes_value || !a->has(s.name)) continue;
    const std::string kind = s.value_name ? s.value_name : "";
    if (kind == "FILE" || kind == "OUT" || kind == "DIR") continue;
    if (const std::string* v = a->get(s.name); v && !valid_utf8(*v))
      return usage_error(command, std::string(s.name) + " is not valid UTF-8 (got '" + echo_text(*v) + "')");
  }
  if (a->has("--help")) {
    std::cout << usage << "\n\nOptions:\n" << flags_help(specs);
    return kExitOk;
  }
  *out = std::move(*a);
  return std::nullopt;
}

void keep_until_exit(Generator&& gen) {
  static std::vector<Generator>* kept = new std::vector<Generator>();
  kept->push_back(std::move(gen));
}

int answer_request(const std::string& command, const Job& job, const std::string& op,
                   std::string* body) {
  int rc = kExitOk;
  std::optional<Generator> gen = build_generator(command, job, &rc);
  if (!gen) return rc;
  Request req;
  req.op = op;
  req.generator = &*gen;
  // Only the answer and its printing remain, nothing to clean up: a
  // signal from now on ends the process at once (docs/promises.md).
  release_signals(command);
  Response res = RequestHandler().handle(req);
  keep_until_exit(std::move(*gen));
  if (!res.ok()) return report_error(command, *res.error);
  *body = std::move(res.body);
  return kExitOk;
}

}  // namespace sc::cli
