// The thin Embind bridge: job JSON string in, JSON string (or a JS object
// holding a Uint8Array) out. No core classes cross the boundary, so JS never
// has to free anything. Every function returns {"ok":false,"error":{code,
// message,path}} for bad input instead of aborting: the core never throws,
// and nothing here can either. Protocol: docs/wasm-bridge.md.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/api.h"
#include "api/simulate.h"
#include "job/job.h"
#include "model/model_config.h"

namespace {

using emscripten::val;

// The UI previews many ranks of one job in a row; the Generator for the last
// job text is kept so that rankTrace(job, 0..N) builds the program once.
struct Cache {
  std::string job_json;
  std::optional<sc::Generator> generator;
};
Cache& cache() {
  static Cache c;
  return c;
}

std::string error_envelope(const sc::Error& e) {
  return std::string(R"({"ok":false,"error":)") + sc::error_to_json(e) + "}";
}

// Returns the cached generator for job_json, building it if needed; on
// failure returns nullptr and sets *error. A failed job clears the cache.
const sc::Generator* generator_for(const std::string& job_json, sc::Error* error) {
  Cache& c = cache();
  if (c.generator && c.job_json == job_json) return &*c.generator;
  c.generator.reset();
  c.job_json.clear();
  sc::Result<sc::Job> job = sc::parse_job(job_json);
  if (!job.ok()) {
    *error = job.error();
    return nullptr;
  }
  sc::Result<sc::Generator> gen = sc::Generator::create(job.value());
  if (!gen.ok()) {
    *error = gen.error();
    return nullptr;
  }
  c.generator.emplace(std::move(gen).value());
  c.job_json = job_json;
  return &*c.generator;
}

// {"ok":true,"<key>":<raw_json>} where raw_json is already valid JSON.
std::string ok_raw(const char* key, const std::string& raw_json) {
  return std::string(R"({"ok":true,")") + key + "\":" + raw_json + "}";
}

// JSON string literal for arbitrary text (graph text has quotes, newlines).
std::string json_quote(const std::string& s) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (ch < 0x20) {
          out += "\\u00";
          out += kHex[ch >> 4];
          out += kHex[ch & 15];
        } else {
          out += static_cast<char>(ch);
        }
    }
  }
  return out + "\"";
}

std::string version() { return sc::stagecraft_version(); }

// {"ok":true,"presets":["gpt3-1.7b",...]}: the model presets, sorted, so
// the UI never carries its own copy of the list.
std::string presets() {
  std::string out = R"({"ok":true,"presets":[)";
  bool first = true;
  for (const std::string& name : sc::preset_names()) {
    out += (first ? "" : ",") + json_quote(name);
    first = false;
  }
  return out + "]}";
}

std::string inspect(const std::string& job_json) {
  sc::Error err;
  const sc::Generator* g = generator_for(job_json, &err);
  if (!g) return error_envelope(err);
  return ok_raw("summary", g->summary_json());
}

// simulate(job, options): stagecraft simulate's JSON (docs/simulate.md) as
// {"ok":true,"simulation":{...}}; options is JSON {"exhaustive","astra",
// "timeline"} (booleans, all optional; timeline defaults to true here: the
// pipeline view draws it). Shape: docs/wasm-bridge.md.
std::string simulate(const std::string& job_json, const std::string& options_json) {
  sc::Error err;
  const sc::Generator* g = generator_for(job_json, &err);
  if (!g) return error_envelope(err);
  sc::SimulateOptions o;
  o.timeline = true;
  nlohmann::json opt = nlohmann::json::parse(options_json.empty() ? "{}" : options_json, nullptr, false);
  if (opt.is_discarded() || !opt.is_object())
    return error_envelope(sc::make_error(sc::ErrorCode::kInvalidArgument, "must be a JSON object", "options"));
  for (auto it = opt.begin(); it != opt.end(); ++it) {
    bool* field = it.key() == "exhaustive" ? &o.exhaustive : it.key() == "astra" ? &o.astra
                  : it.key() == "timeline" ? &o.timeline : nullptr;
    if (!field)
      return error_envelope(sc::make_error(sc::ErrorCode::kUnknownField,
                                                   "unknown key (known: astra, exhaustive, timeline)", "options." + it.key()));
    if (!it->is_boolean())
      return error_envelope(sc::make_error(sc::ErrorCode::kInvalidArgument, "must be true or false", "options." + it.key()));
    *field = it->get<bool>();
  }
  sc::Result<sc::SimulateReport> r = sc::simulate(*g, o);
  if (!r.ok()) return error_envelope(r.error());
  return ok_raw("simulation", sc::simulate_json(*r));
}

std::string graph(const std::string& job_json) {
  sc::Error err;
  const sc::Generator* g = generator_for(job_json, &err);
  if (!g) return error_envelope(err);
  return ok_raw("text", json_quote(g->graph_text()));
}

std::string groups(const std::string& job_json) {
  sc::Error err;
  const sc::Generator* g = generator_for(job_json, &err);
  if (!g) return error_envelope(err);
  // "text" is the exact comm_groups.json file; "worldSize" saves a re-parse.
  return std::string(R"({"ok":true,"worldSize":)") + std::to_string(g->world_size()) +
         R"(,"text":)" + json_quote(g->groups_json()) + "}";
}

// The sharded graph of one pipeline stage for drawing (core/api/explain.cc):
// the stage and its layers, tensors with local symbolic shapes and
// shardings, ops in program order, and a "why" for every inserted
// collective. graphJson(job) is stage 0; graphJson(job, stage) takes the
// stage as a double so a fraction is rejected rather than truncated; the
// core rejects a stage outside [0, pp) (path "stage").
std::string graph_json_stage(const std::string& job_json, double stage) {
  sc::Error err;
  const sc::Generator* g = generator_for(job_json, &err);
  if (!g) return error_envelope(err);
  if (!(stage > -9.0e15 && stage < 9.0e15) || stage != static_cast<double>(static_cast<int64_t>(stage)))
    return error_envelope(sc::make_error(sc::ErrorCode::kInvalidArgument,
                                         "stage must be an integer in [0, " + std::to_string(g->job().parallel.pp) + ")",
                                         "stage"));
  sc::Result<std::string> graph = g->graph_json(static_cast<int64_t>(stage));
  if (!graph.ok()) return error_envelope(graph.error());
  return ok_raw("graph", graph.value());
}

std::string graph_json(const std::string& job_json) { return graph_json_stage(job_json, 0); }

// Same rank check as rankTrace: a double so fractions are rejected.
bool bad_rank(double rank, int64_t world) {
  return !(rank >= 0) || rank != static_cast<double>(static_cast<int64_t>(rank)) ||
         rank >= static_cast<double>(world);
}

sc::Error rank_error(int64_t world) {
  return sc::make_error(sc::ErrorCode::kInvalidArgument,
                        "rank must be an integer in [0, " + std::to_string(world) + ")", "rank");
}

// {"ok":true,"info":{rank, world_size, coords, axes, groups}}
std::string rank_info(const std::string& job_json, double rank) {
  sc::Error err;
  const sc::Generator* g = generator_for(job_json, &err);
  if (!g) return error_envelope(err);
  if (bad_rank(rank, g->world_size())) return error_envelope(rank_error(g->world_size()));
  sc::Result<std::string> info = g->rank_info_json(static_cast<int64_t>(rank));
  if (!info.ok()) return error_envelope(info.error());
  return ok_raw("info", info.value());
}

// coords_json: {"tp":1,"dp":3} -> {"ok":true,"rank":7}
std::string rank_at(const std::string& job_json, const std::string& coords_json) {
  sc::Error err;
  const sc::Generator* g = generator_for(job_json, &err);
  if (!g) return error_envelope(err);
  sc::Result<int64_t> r = g->rank_at(coords_json);
  if (!r.ok()) return error_envelope(r.error());
  return ok_raw("rank", std::to_string(r.value()));
}

val error_object(const sc::Error& e) {
  val out = val::object();
  out.set("ok", false);
  val error = val::object();
  error.set("code", std::string(sc::error_code_name(e.code)));
  error.set("message", e.message);
  error.set("path", e.path);
  out.set("error", error);
  return out;
}

// rank is a double so a fractional or huge JS number is rejected here
// rather than silently truncated by Embind's integer conversion.
val rank_trace(const std::string& job_json, double rank) {
  sc::Error err;
  const sc::Generator* g = generator_for(job_json, &err);
  if (!g) return error_object(err);
  if (bad_rank(rank, g->world_size())) return error_object(rank_error(g->world_size()));
  sc::Result<std::string> bytes = g->rank_trace_bytes(static_cast<int64_t>(rank));
  if (!bytes.ok()) return error_object(bytes.error());
  // new Uint8Array(view) copies out of the wasm heap, so the JS array stays
  // valid after `bytes` is freed or the heap grows.
  const std::string& b = bytes.value();
  val view(emscripten::typed_memory_view(
      b.size(), reinterpret_cast<const uint8_t*>(b.data())));
  val out = val::object();
  out.set("ok", true);
  out.set("bytes", val::global("Uint8Array").new_(view));
  return out;
}

}  // namespace

EMSCRIPTEN_BINDINGS(stagecraft) {
  emscripten::function("version", &version);
  emscripten::function("presets", &presets);
  emscripten::function("inspect", &inspect);
  emscripten::function("graph", &graph);
  emscripten::function("simulate", &simulate);
  emscripten::function("groups", &groups);
  emscripten::function("rankTrace", &rank_trace);
  // Overloaded by argument count: graphJson(job) and graphJson(job, stage).
  emscripten::function("graphJson", &graph_json);
  emscripten::function("graphJson", &graph_json_stage);
  emscripten::function("rankInfo", &rank_info);
  emscripten::function("rankAt", &rank_at);
}
