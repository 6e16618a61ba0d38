#include "api/request.h"

#include <cmath>
#include <cstdint>
#include <utility>

#include "base/json.h"
#include "base/json_fields.h"
#include "base/sha256.h"
#include "api/budget.h"
#include "api/export.h"
#include "api/state.h"
#include "base/bytes.h"
#include "base/cancel.h"
#include "emit/chakra_writer.h"
#include "api/plan.h"
#include "api/serving.h"
#include "api/simulate.h"
#include "model/model_config.h"

namespace sc {
namespace {

using nlohmann::json;

// Whether a value nests deeper than the job parser allows (an argument
// built by a native caller, not parsed here); walked without recursion.
bool nests_deeper_than(const json& v, size_t max) {
  std::vector<std::pair<const json*, size_t>> todo{{&v, 1}};
  while (!todo.empty()) {
    auto [x, d] = todo.back();
    todo.pop_back();
    if (!x->is_structured()) continue;
    if (d > max) return true;
    for (const json& c : *x) todo.push_back({&c, d + 1});
  }
  return false;
}

// {"ok":true,"<key>":<raw>}, raw already JSON; the payload is raw itself.
Response ok_raw(const char* key, std::string raw) {
  Response r;
  r.envelope = std::string(R"({"ok":true,")") + key + "\":" + raw + "}";
  r.body = std::move(raw);
  return r;
}

// {"ok":true,"<key>":"<text, escaped>"}; the payload is the text.
Response ok_text(const char* key, std::string text) {
  Response r;
  r.envelope = std::string(R"({"ok":true,")") + key + "\":" + json_quote(text) + "}";
  r.body = std::move(text);
  return r;
}

Response failed(Error e) {
  Response r;
  r.envelope = error_envelope(e);
  r.error = std::move(e);
  return r;
}

// A JS number (or JSON number) that must be an integer in [lo, hi): false
// for a missing value, a non-number, NaN, a fraction or one out of range.
// Range first, so no out-of-range double is ever converted to an integer.
bool integer_arg(const json& args, const char* name, double lo, double hi, int64_t* out) {
  auto it = args.find(name);
  if (it == args.end() || !it->is_number()) return false;
  const double v = it->get<double>();
  if (!(v >= lo && v < hi) || v != std::floor(v)) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

// " (got <value>)" for a message about args[name], clipped and escaped.
std::string got(const json& args, const char* name) {
  auto it = args.find(name);
  if (it == args.end()) return " (not given)";
  return " (got " + jsonf::clip(it->dump(), 64) + ")";
}

Error rank_error(int64_t world, const json& args) {
  return make_error(ErrorCode::kInvalidArgument,
                    "rank must be an integer in [0, " + std::to_string(world) + ")" + got(args, "rank"), "rank");
}

struct Context {
  const Generator* gen = nullptr;  // null for operations without a job
  const json& args;
  const Job* job = nullptr;          // job-only operations (plan)
  const Request* request = nullptr;  // its progress callback
};

Response op_version(const Context&) { return ok_text("version", stagecraft_version()); }

// The model presets, sorted, so no front end carries its own copy.
Response op_presets(const Context&) {
  std::string list = "[";
  for (const std::string& name : preset_names()) list += (list.size() > 1 ? "," : "") + json_quote(name);
  return ok_raw("presets", list + "]");
}

Response op_summary(const Context& c) { return ok_raw("summary", c.gen->summary_json()); }

Response op_graph(const Context& c) { return ok_text("text", c.gen->graph_text()); }

// "text" is the exact comm_groups.json file; "worldSize" saves a re-parse.
Response op_groups(const Context& c) {
  Response r;
  r.body = c.gen->groups_json();
  r.envelope = R"({"ok":true,"worldSize":)" + std::to_string(c.gen->world_size()) + R"(,"text":)" +
               json_quote(r.body) + "}";
  return r;
}

// A stage that is not an integer is rejected here; an integer outside
// [0, pp) by Generator::graph_json (same path, the range in the message).
Response op_graph_json(const Context& c) {
  int64_t stage = 0;
  if (c.args.contains("stage") && !integer_arg(c.args, "stage", -9.0e15, 9.0e15, &stage))
    return failed(make_error(ErrorCode::kInvalidArgument,
                             "stage must be an integer in [0, " + std::to_string(c.gen->job().parallel.pp) +
                                 ") (the job's pipeline stages, pp = " + std::to_string(c.gen->job().parallel.pp) + ")" +
                                 got(c.args, "stage"),
                             "stage"));
  Result<std::string> graph = c.gen->graph_json(stage);
  if (!graph.ok()) return failed(graph.error());
  return ok_raw("graph", std::move(graph).value());
}

// args.rank: an integer in [0, world size) of the request's job.
bool rank_arg(const Context& c, int64_t* rank) {
  return integer_arg(c.args, "rank", 0, static_cast<double>(c.gen->world_size()), rank);
}

Response op_rank_info(const Context& c) {
  int64_t rank = 0;
  if (!rank_arg(c, &rank)) return failed(rank_error(c.gen->world_size(), c.args));
  Result<std::string> info = c.gen->rank_info_json(rank);
  if (!info.ok()) return failed(info.error());
  return ok_raw("info", std::move(info).value());
}

// coords: {"tp":1,"dp":3} or that object's JSON text (passed on verbatim,
// so the core reports malformed text as a parse error at "coords").
Response op_rank_at(const Context& c) {
  auto it = c.args.find("coords");
  const std::string coords = it == c.args.end() ? std::string("{}") : it->is_string() ? it->get<std::string>() : it->dump();
  Result<int64_t> rank = c.gen->rank_at(coords);
  if (!rank.ok()) return failed(rank.error());
  return ok_raw("rank", std::to_string(rank.value()));
}

// Binary payload: the complete prefix.<rank>.et bytes in body; the
// envelope (for JSON-only callers) gives their size.
Response op_rank_trace(const Context& c) {
  int64_t rank = 0;
  if (!rank_arg(c, &rank)) return failed(rank_error(c.gen->world_size(), c.args));
  Result<std::string> bytes = c.gen->rank_trace_bytes(rank);
  if (!bytes.ok()) return failed(bytes.error());
  Response r;
  r.body = std::move(bytes).value();
  r.envelope = R"({"ok":true,"bytes":)" + std::to_string(r.body.size()) + "}";
  return r;
}

// options: {"exhaustive","astra","timeline"} booleans, as a JSON object or
// its text; timeline_default (boolean) is what an absent "timeline" means.
Response op_simulate(const Context& c) {
  SimulateOptions o;
  if (auto d = c.args.find("timeline_default"); d != c.args.end() && d->is_boolean()) o.timeline = d->get<bool>();
  json opt = json::object();
  if (auto it = c.args.find("options"); it != c.args.end()) {
    if (it->is_string()) {
      const std::string& text = it->get_ref<const std::string&>();
      opt = parse_argument_text(text.empty() ? "{}" : text);
    } else {
      opt = *it;
    }
  }
  if (opt.is_discarded() || !opt.is_object())
    return failed(make_error(ErrorCode::kInvalidArgument, "must be a JSON object", "options"));
  for (auto it = opt.begin(); it != opt.end(); ++it) {
    bool* field = it.key() == "exhaustive" ? &o.exhaustive
                  : it.key() == "astra"    ? &o.astra
                  : it.key() == "timeline" ? &o.timeline
                                           : nullptr;
    if (!field)
      return failed(make_error(ErrorCode::kUnknownField, "unknown key (known: astra, exhaustive, timeline)",
                               "options." + jsonf::clip(it.key())));
    if (!it->is_boolean())
      return failed(make_error(ErrorCode::kInvalidArgument, "must be true or false", "options." + jsonf::clip(it.key())));
    *field = it->get<bool>();
  }
  Result<SimulateReport> r = simulate(*c.gen, o);
  if (!r.ok()) return failed(r.error());
  return ok_raw("simulation", simulate_json(*r));
}

// ---- the archive (api/export.h): what generate writes and the browser zips.
// args: layout "files" (default: a directory, the browser's zip) or
// "bundle" (a .zip/.tar.gz of generate: + astra-sim/, manifest.json);
// prefix (default "trace"); phase (inference jobs: one part's folder alone,
// "prefill" | "decode" | "mixed" | "kv_transfer"; without it the whole
// archive, every part in its folder). Every rank is selected.
Result<ArchiveSpec> archive_spec(const Context& c) {
  ArchiveSpec spec;
  spec.ranks = all_ranks(archive_world_size(*c.gen));
  if (auto it = c.args.find("layout"); it != c.args.end()) {
    const std::string layout = it->is_string() ? it->get<std::string>() : std::string();
    if (layout == "bundle") {
      spec.layout = ArchiveLayout::kBundle;
    } else if (layout != "files") {
      return make_error(ErrorCode::kInvalidArgument, "must be \"files\" or \"bundle\"", "layout");
    }
  }
  if (auto it = c.args.find("prefix"); it != c.args.end()) {
    if (!it->is_string()) return make_error(ErrorCode::kInvalidArgument, "must be a string", "prefix");
    spec.prefix = it->get<std::string>();
  }
  if (auto it = c.args.find("phase"); it != c.args.end()) {
    // archive_entries names the parts an unknown one could have been.
    spec.part = it->is_string() ? it->get<std::string>() : std::string("?");
  }
  return spec;
}

// The world of the archive's traces: one part's, or the whole archive's.
int64_t archive_world(const Generator& g, const ArchiveSpec& spec) {
  if (spec.part.empty()) return archive_world_size(g);
  if (const Generator* pg = g.phase(spec.part)) return pg->world_size();
  return archive_world_size(g);  // kv_transfer: both pools
}

const char* entry_kind_name(ArchiveEntry::Kind k) {
  switch (k) {
    case ArchiveEntry::Kind::kTrace: return "trace";
    case ArchiveEntry::Kind::kFile: return "file";
    case ArchiveEntry::Kind::kManifest: return "manifest";
  }
  return "file";
}

// Encoding traces for an archive (every rank's size, a bundle's
// manifest.json, one trace entry) holds the exporter's templates and one
// encoded rank beside the build: generate_bytes at one thread, against the
// engine budget before any of it is made (the wasm module must not run out
// of memory: docs/promises.md, "Budgets"). Every rank's size also encodes
// every trace: past generate's 8 GiB output cap that is refused too (a
// million ranks took minutes, with no way to stop the call).
constexpr int64_t kMaxEncodedBytes = int64_t{8} << 30;
Status check_encode_budget(const Generator& g, bool every_rank) {
  const GeneratorState& s = GeneratorAccess::state(g);
  if (s.job.inference() || s.estimate.engine_bytes <= 0) return ok_status();  // no training estimate to check
  const int64_t budget = engine_budget().max_engine_bytes;
  const int64_t need = generate_bytes(s.estimate, 1, every_rank ? s.layout.world_size() : 1, false);
  if (need > budget)
    return make_error(ErrorCode::kTooLarge,
                      "encoding this job's traces needs about " + human_bytes(need) +
                          " of memory (the build and the exporter's templates and buffers), over the budget of " +
                          human_bytes(budget) + "; use fewer micro-batches (training.global_batch_size) or more pipeline stages",
                      "training.global_batch_size");
  if (every_rank && s.estimate.trace_bytes_total > kMaxEncodedBytes)
    return make_error(ErrorCode::kTooLarge,
                      "listing every trace's size encodes all " + std::to_string(s.layout.world_size()) +
                          " ranks, about " + human_bytes(s.estimate.trace_bytes_total) + ", over the cap of " +
                          human_bytes(kMaxEncodedBytes) + "; list the archive without sizes",
                      "sizes");
  return ok_status();
}

// {"ok":true,"manifest":{"layout","prefix","worldSize","entries":[{name,
// kind, rank (traces), bytes (files), mode (archive member mode, octal
// text)}]}}. args.sizes true: every entry has bytes (encodes every trace,
// and for a bundle hashes them for manifest.json).
Response op_archive_manifest(const Context& c) {
  Result<ArchiveSpec> spec = archive_spec(c);
  if (!spec.ok()) return failed(spec.error());
  bool sizes = false;
  if (auto it = c.args.find("sizes"); it != c.args.end()) {
    if (!it->is_boolean()) return failed(make_error(ErrorCode::kInvalidArgument, "must be true or false", "sizes"));
    sizes = it->get<bool>();
  }
  Result<std::vector<ArchiveEntry>> entries = archive_entries(*c.gen, *spec);
  if (!entries.ok()) return failed(entries.error());
  std::optional<ArchiveEncoder> enc;
  if (sizes) {
    if (Status st = check_encode_budget(*c.gen, /*every_rank=*/true); !st.ok()) return failed(st.error());
    Result<ArchiveEncoder> e = ArchiveEncoder::create(*c.gen);
    if (!e.ok()) return failed(e.error());
    enc.emplace(std::move(e).value());
  }
  RankEncoder::Scratch scratch;
  std::vector<ArchiveMember> members;  // sizes of a bundle: what manifest.json lists
  std::string list;
  for (const ArchiveEntry& e : *entries) {
    std::string item = "{\"name\":" + json_quote(e.name) + ",\"kind\":\"" + entry_kind_name(e.kind) + "\"";
    if (e.kind == ArchiveEntry::Kind::kTrace) item += ",\"rank\":" + std::to_string(e.rank);
    if (!e.part.empty()) item += ",\"part\":" + json_quote(e.part);
    int64_t bytes = -1;
    if (e.kind == ArchiveEntry::Kind::kFile) {
      bytes = static_cast<int64_t>(e.bytes.size());
      if (sizes && spec->layout == ArchiveLayout::kBundle) members.push_back({e.name, e.bytes.size(), sha256_hex(e.bytes)});
    } else if (sizes && e.kind == ArchiveEntry::Kind::kTrace) {
      Result<std::string_view> b = enc->encode(e, &scratch);
      if (!b.ok()) return failed(b.error());
      bytes = static_cast<int64_t>(b->size());
      if (spec->layout == ArchiveLayout::kBundle) members.push_back({e.name, b->size(), sha256_hex(*b)});
    } else if (sizes) {
      const std::string m = archive_manifest_json(*c.gen, *spec, e, members);
      bytes = static_cast<int64_t>(m.size());
      members.push_back({e.name, m.size(), sha256_hex(m)});
    }
    if (bytes >= 0) item += ",\"bytes\":" + std::to_string(bytes);
    item += std::string(",\"mode\":\"") + (e.mode == 0755 ? "0755" : "0644") + "\"}";
    list += (list.empty() ? "" : ",") + item;
  }
  return ok_raw("manifest", "{\"layout\":" + json_quote(spec->layout == ArchiveLayout::kBundle ? "bundle" : "files") +
                                ",\"prefix\":" + json_quote(spec->prefix) +
                                ",\"worldSize\":" + std::to_string(archive_world(*c.gen, *spec)) + ",\"entries\":[" + list + "]}");
}

// args.name: one entry of archive_manifest's list (same layout and
// prefix). Binary payload as rank_trace: the bytes in body, the envelope
// {"ok":true,"name":"...","bytes":<size>}.
Response op_archive_entry(const Context& c) {
  Result<ArchiveSpec> spec = archive_spec(c);
  if (!spec.ok()) return failed(spec.error());
  auto it = c.args.find("name");
  if (it == c.args.end() || !it->is_string())
    return failed(make_error(ErrorCode::kInvalidArgument, "must be the name of an archive entry (a string)", "name"));
  Result<ArchiveEntry> entry = find_archive_entry(*c.gen, *spec, it->get<std::string>());
  if (!entry.ok()) return failed(entry.error());
  // A trace is encoded alone; a bundle's manifest.json lists every trace's size.
  if (entry->kind != ArchiveEntry::Kind::kFile)
    if (Status st = check_encode_budget(*c.gen, entry->kind == ArchiveEntry::Kind::kManifest); !st.ok())
      return failed(st.error());
  Result<std::string> bytes = archive_entry_bytes(*c.gen, *spec, *entry);
  if (!bytes.ok()) return failed(bytes.error());
  Response r;
  r.body = std::move(bytes).value();
  r.envelope = R"({"ok":true,"name":)" + json_quote(entry->name) + R"(,"bytes":)" + std::to_string(r.body.size()) + "}";
  return r;
}
// args.gpus: the GPU count; args.constraints: docs/plan.md's "plan" block
// (an object or its JSON text). The job is parsed only: building the base
// job's own layout would be wasted (and may be huge).
Response op_plan(const Context& c) {
  // An argument the operation does not know is unknown_field at its name
  // (a misspelt "timelimit" would otherwise be ignored).
  if (Status st = jsonf::check_keys(c.args, {"gpus", "constraints", "time_limit_seconds"}, "", "argument"); !st.ok()) return failed(st.error());
  int64_t gpus = 0;
  if (!integer_arg(c.args, "gpus", 1, limits::kMaxDegree + 1.0, &gpus))  // [lo, hi): the cap itself is allowed
    return failed(make_error(ErrorCode::kInvalidArgument,
                             "gpus must be an integer in [1, " + std::to_string(limits::kMaxDegree) + "] (a job's world size)",
                             "gpus"));
  json cons = json::object();
  if (auto it = c.args.find("constraints"); it != c.args.end()) {
    if (it->is_string()) {
      const std::string& text = it->get_ref<const std::string&>();
      cons = parse_argument_text(text.empty() ? "{}" : text);
    } else {
      cons = *it;
    }
  }
  if (cons.is_discarded() || !cons.is_object())
    return failed(make_error(ErrorCode::kInvalidArgument, "must be a JSON object", "constraints"));
  Result<PlanConstraints> pc = parse_plan_constraints(cons, "constraints");
  if (!pc.ok()) return failed(pc.error());
  PlanOptions o;
  o.gpus = gpus;
  o.constraints = std::move(pc).value();
  // As `stagecraft plan --time-limit S`: the whole search stops after S
  // seconds and answers the best so far (complete = false).
  if (auto it = c.args.find("time_limit_seconds"); it != c.args.end()) {
    const double v = it->is_number() ? it->get<double>() : -1;
    if (!(v > 0 && v <= 1e6))
      return failed(make_error(ErrorCode::kInvalidArgument,
                               "time_limit_seconds must be a number of seconds in (0, 1000000]", "time_limit_seconds"));
    o.time_limit_seconds = v;
  }
  // As the CLI: the parser's defaults (seq 2048, a batch of one
  // micro-batch) would plan a job nobody asked for. Checked on the job's
  // text (a parsed Job cannot tell a default from a given value).
  if (c.request && !c.request->generator && !c.request->job) {
    const json j = parse_argument_text(c.request->job_json);
    const bool inference = j.is_object() && j.contains("mode") && j["mode"] == "inference";
    for (const char* key : {"seq_len", "global_batch_size"}) {
      const bool given = j.is_object() && j.contains("training") && j["training"].is_object() && j["training"].contains(key);
      if (!given && !inference)
        return failed(make_error(ErrorCode::kInvalidArgument,
                                 std::string("required by plan: give the job's training.") + key +
                                     " (the defaults would plan a job nobody asked for)",
                                 std::string("training.") + key));
    }
  }
  if (c.request && c.request->progress) o.progress = c.request->progress;
  if (c.request && c.request->partial)
    o.improved = [req = c.request](const PlanResult& so_far) { req->partial(plan_json(so_far)); };
  Result<PlanResult> r = plan(*c.job, o);
  if (!r.ok()) return failed(r.error());
  return ok_raw("plan", plan_json(*r));
}

// What an operation needs: nothing, the parsed job, or the built job.
enum class Needs { kNothing, kJob, kGenerator };

// {"concurrency": [1, 8, 64]}: the latency-throughput curve of an
// inference job (api/serving.h, docs/inference.md).
Response op_serving_sweep(const Context& c) {
  if (Status st = jsonf::check_keys(c.args, {"concurrency"}, "", "argument"); !st.ok()) return failed(st.error());
  auto it = c.args.find("concurrency");
  if (it == c.args.end() || !it->is_array() || it->empty() || it->size() > 64)
    return failed(make_error(ErrorCode::kInvalidArgument, "must be a list of 1 to 64 integers", "concurrency"));
  std::vector<int64_t> values;
  for (size_t i = 0; i < it->size(); ++i) {
    int64_t v = 0;
    json one = {{"v", (*it)[i]}};
    if (!integer_arg(one, "v", 1, 1048577.0, &v))
      return failed(make_error(ErrorCode::kInvalidArgument, "must be an integer in [1, 1048576]",
                               "concurrency[" + std::to_string(i) + "]"));
    values.push_back(v);
  }
  Result<std::vector<ServingPoint>> r = serving_sweep(*c.gen, values);
  if (!r.ok()) return failed(r.error());
  return ok_raw("sweep", serving_sweep_json(*r));
}

// {"ttft_seconds_p99": 1, "tpot_seconds_p99": 0.05, "requests": 1000}:
// the capacity search of an inference job (api/serving.h, docs/inference.md).
Response op_serving_capacity(const Context& c) {
  if (Status st = jsonf::check_keys(c.args, {"ttft_seconds_p99", "tpot_seconds_p99", "requests"}, "", "argument"); !st.ok()) return failed(st.error());
  double slo[2] = {0, 0};
  const char* names[2] = {"ttft_seconds_p99", "tpot_seconds_p99"};
  for (int i = 0; i < 2; ++i) {
    auto it = c.args.find(names[i]);
    if (it == c.args.end()) continue;
    if (!it->is_number() || !(it->get<double>() > 0) || !(it->get<double>() <= 1e6))
      return failed(make_error(ErrorCode::kInvalidArgument, "must be a number of seconds in (0, 1e6]", names[i]));
    slo[i] = it->get<double>();
  }
  int64_t requests = 0;
  if (c.args.contains("requests") && !integer_arg(c.args, "requests", 1, 200001.0, &requests))
    return failed(make_error(ErrorCode::kInvalidArgument, "must be an integer in [1, 200000]", "requests"));
  Result<CapacityResult> r = serving_capacity(*c.gen, slo[0], slo[1], requests);
  if (!r.ok()) return failed(r.error());
  return ok_raw("capacity", serving_capacity_json(*r));
}

struct RequestOp {
  const char* name;
  Needs needs;
  Response (*run)(const Context&);
  bool own_phase = false;  // reads args.phase itself (the archive's parts include kv_transfer)
};

// phase "kv_transfer" (disaggregated pools, serve/kv_transfer.h) for the rank
// preview: rank_trace (the rank's sends or receives), groups (none) and
// rank_info (which pool the rank is in); it has no graph or summary of its own.
Response kv_transfer_op(const std::string& op, const Generator& gen, const json& args) {
  Result<KvTransfer> kv = kv_transfer_traces(gen);
  if (!kv.ok()) return failed(kv.error());
  const int64_t world = static_cast<int64_t>(kv->ranks.size());
  if (op == "groups") {
    Response r;
    r.body = group_table_json(kv->groups);
    r.envelope = R"({"ok":true,"worldSize":)" + std::to_string(world) + R"(,"text":)" + json_quote(r.body) + "}";
    return r;
  }
  int64_t rank = 0;
  if (!integer_arg(args, "rank", 0, static_cast<double>(world), &rank)) return failed(rank_error(world, args));
  const RankTrace& t = kv->ranks[static_cast<size_t>(rank)];
  if (op == "rank_trace") {
    Response r;
    if (Status st = write_chakra_trace(t, kv->meta, &r.body); !st.ok()) return failed(st.error());
    r.envelope = R"({"ok":true,"bytes":)" + std::to_string(r.body.size()) + "}";
    return r;
  }
  const bool prefill = rank < kv->prefill_world;
  json info = {{"rank", rank},
               {"world_size", world},
               {"coords", json::object()},
               {"axes", json::array()},
               {"groups", json::array()},
               {"pool", prefill ? "prefill" : "decode"},
               {"pool_rank", prefill ? rank : rank - kv->prefill_world}};
  return ok_raw("info", info.dump());
}

// args.phase ("prefill" | "decode" | "mixed"): the operation on that
// iteration kind of an inference job (docs/inference.md, "Requests").
Response run_op(const RequestOp& op, const Generator* gen, const json& args) {
  if (auto it = args.find("phase"); it != args.end() && !op.own_phase) {
    const std::string name(op.name);
    const bool disaggregated = !gen->phase_names().empty() && gen->phase("mixed") == nullptr;
    if (disaggregated && it->is_string() && it->get<std::string>() == "kv_transfer" &&
        (name == "rank_trace" || name == "rank_info" || name == "groups"))
      return kv_transfer_op(name, *gen, args);
    const std::vector<std::string> names = gen->phase_names();
    if (names.empty())
      return failed(make_error(ErrorCode::kInvalidArgument,
                               "phase is for inference jobs (\"mode\": \"inference\")", "phase"));
    const Generator* g = it->is_string() ? gen->phase(it->get<std::string>()) : nullptr;
    if (!g) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      return failed(make_error(ErrorCode::kInvalidArgument, "must be one of " + known, "phase"));
    }
    gen = g;
  }
  return op.run(Context{gen, args});
}

// The operations. Adding one is one line here (and its function above).
constexpr RequestOp kOps[] = {
    {"version", Needs::kNothing, op_version},
    {"presets", Needs::kNothing, op_presets},
    {"summary", Needs::kGenerator, op_summary},
    {"graph", Needs::kGenerator, op_graph},
    {"groups", Needs::kGenerator, op_groups},
    {"graph_json", Needs::kGenerator, op_graph_json},
    {"rank_info", Needs::kGenerator, op_rank_info},
    {"rank_at", Needs::kGenerator, op_rank_at},
    {"rank_trace", Needs::kGenerator, op_rank_trace},
    {"simulate", Needs::kGenerator, op_simulate},
    {"archive_manifest", Needs::kGenerator, op_archive_manifest, true},
    {"archive_entry", Needs::kGenerator, op_archive_entry, true},
    {"plan", Needs::kJob, op_plan},
    {"serving_sweep", Needs::kGenerator, op_serving_sweep},
    {"serving_capacity", Needs::kGenerator, op_serving_capacity},
};

}  // namespace

void fail_callback(const Request& r, Error e) {
  if (r.callback_failure) return;
  r.callback_failure = std::move(e);
  request_cancel();
}

json parse_argument_text(const std::string& text) {
  Result<json> r = jsonf::parse_text(text);
  return r.ok() ? std::move(r).value() : json(json::value_t::discarded);
}

std::string error_envelope(const Error& e) { return std::string(R"({"ok":false,"error":)") + error_to_json(e) + "}"; }

std::vector<std::string> RequestHandler::ops() {
  std::vector<std::string> out;
  for (const RequestOp& op : kOps) out.push_back(op.name);
  return out;
}

Response RequestHandler::handle(const Request& request) {
  Response r = handle_op(request);
  if (!request.callback_failure) return r;
  clear_cancel();  // the cancel fail_callback asked for, not the caller's
  return failed(*request.callback_failure);
}

Response RequestHandler::handle_op(const Request& request) {
  const RequestOp* op = nullptr;
  for (const RequestOp& o : kOps)
    if (request.op == o.name) op = &o;
  if (!op) {
    std::string known;
    for (const RequestOp& o : kOps) known += (known.empty() ? "" : ", ") + std::string(o.name);
    return failed(make_error(ErrorCode::kInvalidArgument, "unknown op '" + echo_text(request.op) + "' (known: " + known + ")",
                             "op"));
  }
  if (nests_deeper_than(request.args, 64))
    return failed(make_error(ErrorCode::kParseError, "arguments nest deeper than 64 levels", "args"));
  static const json kNoArgs = json::object();
  const json& args = request.args.is_object() ? request.args : kNoArgs;
  if (op->needs == Needs::kNothing) return op->run(Context{nullptr, args});
  if (op->needs == Needs::kJob) {
    if (request.generator) return op->run(Context{nullptr, args, &request.generator->job(), &request});
    if (request.job) return op->run(Context{nullptr, args, &*request.job, &request});
    // A "plan" block in the job (docs/plan.md) is the constraints when
    // args has none; it is not part of the job itself.
    std::string text = request.job_json;
    json merged = args;
    json parsed = parse_argument_text(text);  // too deep: parse_job below says so
    if (parsed.is_object() && parsed.contains("plan")) {
      if (!merged.contains("constraints")) merged["constraints"] = parsed["plan"];
      parsed.erase("plan");
      text = parsed.dump();
    }
    Result<Job> job = parse_job(text);
    if (!job.ok()) return failed(job.error());
    return op->run(Context{nullptr, merged, &job.value(), &request});
  }

  if (request.generator) return run_op(*op, request.generator, args);
  if (request.job) {  // a parsed job: built for this request only
    Result<Generator> gen = Generator::create(*request.job);
    if (!gen.ok()) return failed(gen.error());
    return run_op(*op, &gen.value(), args);
  }
  if (!cached_ || cached_job_json_ != request.job_json) {
    cached_.reset();
    cached_job_json_.clear();
    Result<Job> job = parse_job(request.job_json);
    if (!job.ok()) return failed(job.error());
    Result<Generator> gen = Generator::create(job.value());
    if (!gen.ok()) return failed(gen.error());
    cached_.emplace(std::move(gen).value());
    cached_job_json_ = request.job_json;
  }
  return run_op(*op, &*cached_, args);
}

Response RequestHandler::handle_json(const std::string& request_json) {
  json req = parse_argument_text(request_json);
  if (req.is_discarded() || !req.is_object())
    return failed(make_error(ErrorCode::kParseError,
                             "a request is a JSON object such as {\"op\": \"summary\", \"job\": {...}}", ""));
  Request r;
  auto op = req.find("op");
  if (op == req.end() || !op->is_string())
    return failed(make_error(ErrorCode::kInvalidArgument, "op must be a string", "op"));
  r.op = op->get<std::string>();
  if (auto job = req.find("job"); job != req.end()) r.job_json = job->is_string() ? job->get<std::string>() : job->dump();
  for (auto it = req.begin(); it != req.end(); ++it)
    if (it.key() != "op" && it.key() != "job") r.args[it.key()] = *it;
  return handle(r);
}

}  // namespace sc
