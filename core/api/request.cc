#include "api/request.h"

#include <cmath>
#include <cstdint>
#include <utility>

#include "base/json.h"
#include "base/json_fields.h"
#include "api/plan.h"
#include "api/simulate.h"
#include "model/model_config.h"

namespace sc {
namespace {

using nlohmann::json;

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

Error rank_error(int64_t world) {
  return make_error(ErrorCode::kInvalidArgument, "rank must be an integer in [0, " + std::to_string(world) + ")",
                    "rank");
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
                             "stage must be an integer in [0, " + std::to_string(c.gen->job().parallel.pp) + ")",
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
  if (!rank_arg(c, &rank)) return failed(rank_error(c.gen->world_size()));
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
  if (!rank_arg(c, &rank)) return failed(rank_error(c.gen->world_size()));
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
      opt = json::parse(text.empty() ? "{}" : text, nullptr, /*allow_exceptions=*/false);
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

// args.gpus: the GPU count; args.constraints: docs/plan.md's "plan" block
// (an object or its JSON text). The job is parsed only: building the base
// job's own layout would be wasted (and may be huge).
Response op_plan(const Context& c) {
  int64_t gpus = 0;
  if (!integer_arg(c.args, "gpus", 1, 1 << 24, &gpus))
    return failed(make_error(ErrorCode::kInvalidArgument, "gpus must be an integer in [1, 16777216)", "gpus"));
  json cons = json::object();
  if (auto it = c.args.find("constraints"); it != c.args.end()) {
    if (it->is_string()) {
      const std::string& text = it->get_ref<const std::string&>();
      cons = json::parse(text.empty() ? "{}" : text, nullptr, /*allow_exceptions=*/false);
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
  if (c.request && c.request->progress) o.progress = c.request->progress;
  Result<PlanResult> r = plan(*c.job, o);
  if (!r.ok()) return failed(r.error());
  return ok_raw("plan", plan_json(*r));
}

// What an operation needs: nothing, the parsed job, or the built job.
enum class Needs { kNothing, kJob, kGenerator };

struct RequestOp {
  const char* name;
  Needs needs;
  Response (*run)(const Context&);
};

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
    {"plan", Needs::kJob, op_plan},
};

}  // namespace

std::string error_envelope(const Error& e) { return std::string(R"({"ok":false,"error":)") + error_to_json(e) + "}"; }

std::vector<std::string> RequestHandler::ops() {
  std::vector<std::string> out;
  for (const RequestOp& op : kOps) out.push_back(op.name);
  return out;
}

Response RequestHandler::handle(const Request& request) {
  const RequestOp* op = nullptr;
  for (const RequestOp& o : kOps)
    if (request.op == o.name) op = &o;
  if (!op) {
    std::string known;
    for (const RequestOp& o : kOps) known += (known.empty() ? "" : ", ") + std::string(o.name);
    return failed(make_error(ErrorCode::kInvalidArgument, "unknown op '" + request.op + "' (known: " + known + ")",
                             "op"));
  }
  const json& args = request.args.is_object() ? request.args : json::object();
  if (op->needs == Needs::kNothing) return op->run(Context{nullptr, args});
  if (op->needs == Needs::kJob) {
    if (request.generator) return op->run(Context{nullptr, args, &request.generator->job(), &request});
    if (request.job) return op->run(Context{nullptr, args, &*request.job, &request});
    // A "plan" block in the job (docs/plan.md) is the constraints when
    // args has none; it is not part of the job itself.
    std::string text = request.job_json;
    json merged = args;
    json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object() && parsed.contains("plan")) {
      if (!merged.contains("constraints")) merged["constraints"] = parsed["plan"];
      parsed.erase("plan");
      text = parsed.dump();
    }
    Result<Job> job = parse_job(text);
    if (!job.ok()) return failed(job.error());
    return op->run(Context{nullptr, merged, &job.value(), &request});
  }

  if (request.generator) return op->run(Context{request.generator, args});
  if (request.job) {  // a parsed job: built for this request only
    Result<Generator> gen = Generator::create(*request.job);
    if (!gen.ok()) return failed(gen.error());
    return op->run(Context{&gen.value(), args});
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
  return op->run(Context{&*cached_, args});
}

Response RequestHandler::handle_json(const std::string& request_json) {
  json req = json::parse(request_json, nullptr, /*allow_exceptions=*/false);
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
