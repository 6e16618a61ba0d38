// The Embind bridge: it only marshals. Each JS function becomes one request
// to the native request layer (core/api/request.h), which parses the job,
// keeps the Generator of the last job text, checks arguments and writes the
// JSON envelope; the bridge hands that string back, or for rankTrace a JS
// object holding the trace bytes in a Uint8Array. No core classes cross the
// boundary, so JS never has to free anything; every failure is
// {"ok":false,"error":{code,message,path}}, never an abort. Protocol:
// docs/wasm-bridge.md.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cstdint>
#include <string>

#include "api/request.h"

namespace {

using emscripten::val;

sc::RequestHandler& handler() {
  static sc::RequestHandler h;
  return h;
}

// One request; numbers arrive as JS doubles so that the request layer, not
// Embind's integer conversion, rejects fractions and huge values.
sc::Response call(const char* op, const std::string& job_json, nlohmann::json args = nlohmann::json::object()) {
  sc::Request r;
  r.op = op;
  r.job_json = job_json;
  r.args = std::move(args);
  return handler().handle(r);
}

std::string version() { return call("version", "").body; }
std::string presets() { return call("presets", "").envelope; }
std::string inspect(const std::string& job_json) { return call("summary", job_json).envelope; }
std::string graph(const std::string& job_json) { return call("graph", job_json).envelope; }
std::string groups(const std::string& job_json) { return call("groups", job_json).envelope; }
std::string graph_json(const std::string& job_json) { return call("graph_json", job_json).envelope; }
// simulate(job, options): {"ok":true,"simulation":{...}}; options is JSON text
// {"exhaustive","astra","timeline"} (booleans, optional; timeline defaults to
// true here: the pipeline view draws it). Shape: docs/wasm-bridge.md.
std::string simulate(const std::string& job_json, const std::string& options_json) {
  return call("simulate", job_json, {{"options", options_json}, {"timeline_default", true}}).envelope;
}
std::string graph_json_stage(const std::string& job_json, double stage) {
  return call("graph_json", job_json, {{"stage", stage}}).envelope;
}
std::string rank_info(const std::string& job_json, double rank) {
  return call("rank_info", job_json, {{"rank", rank}}).envelope;
}
// coords_json is passed on as text: malformed text is the core's parse error.
std::string rank_at(const std::string& job_json, const std::string& coords_json) {
  return call("rank_at", job_json, {{"coords", coords_json}}).envelope;
}

// plan(job, args, onProgress): {"ok":true,"plan":{...}} (docs/plan.md). args
// is JSON text {"gpus": N, "constraints": {...}}; text that does not parse
// is a parse_error at path "args" (the request layer checks the rest).
// onProgress(done, total, phase) is called synchronously from inside the
// search (a JS function, or undefined for none); the worker posts it to the
// page while this call runs. Cancelling = terminating the worker.
std::string plan(const std::string& job_json, const std::string& args_json, val on_progress) {
  nlohmann::json args = nlohmann::json::parse(args_json, nullptr, /*allow_exceptions=*/false);
  if (args.is_discarded() || !args.is_object()) {
    return sc::error_envelope({sc::ErrorCode::kParseError, "plan arguments must be a JSON object {\"gpus\", \"constraints\"}", "args"});
  }
  sc::Request r;
  r.op = "plan";
  r.job_json = job_json;
  r.args = std::move(args);
  if (on_progress.typeOf().as<std::string>() == "function") {
    r.progress = [&on_progress](int64_t done, int64_t total, const std::string& phase) {
      // JS numbers: exact up to 2^53, far beyond any candidate count.
      on_progress(static_cast<double>(done), static_cast<double>(total), phase);
    };
  }
  return handler().handle(r).envelope;
}

// {ok:true, bytes:Uint8Array} or {ok:false, error:{code,message,path}}.
val rank_trace(const std::string& job_json, double rank) {
  sc::Response r = call("rank_trace", job_json, {{"rank", rank}});
  val out = val::object();
  out.set("ok", r.ok());
  if (!r.ok()) {
    val error = val::object();
    error.set("code", std::string(sc::error_code_name(r.error->code)));
    error.set("message", r.error->message);
    error.set("path", r.error->path);
    out.set("error", error);
    return out;
  }
  // new Uint8Array(view) copies out of the wasm heap, so the JS array stays
  // valid after the response is freed or the heap grows.
  val view(emscripten::typed_memory_view(r.body.size(), reinterpret_cast<const uint8_t*>(r.body.data())));
  out.set("bytes", val::global("Uint8Array").new_(view));
  return out;
}

}  // namespace

EMSCRIPTEN_BINDINGS(stagecraft) {
  emscripten::function("version", &version);
  emscripten::function("presets", &presets);
  emscripten::function("inspect", &inspect);
  emscripten::function("graph", &graph);
  emscripten::function("groups", &groups);
  emscripten::function("rankTrace", &rank_trace);
  // Overloaded by argument count: graphJson(job) and graphJson(job, stage).
  emscripten::function("graphJson", &graph_json);
  emscripten::function("graphJson", &graph_json_stage);
  emscripten::function("rankInfo", &rank_info);
  emscripten::function("rankAt", &rank_at);
  emscripten::function("simulate", &simulate);
  emscripten::function("plan", &plan);
}
