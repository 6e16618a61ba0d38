// The Embind bridge: it only marshals. Each JS function becomes one request
// to the native request layer (core/api/request.h), which parses the job,
// keeps the Generator of the last job text, checks arguments and writes the
// JSON envelope; the bridge hands that string back, or for rankTrace and
// archiveEntry a JS object holding the bytes in a Uint8Array. No core
// classes cross the boundary, so JS never has to free anything; every
// failure is {"ok":false,"error":{code,message,path}}, never an abort.
// Protocol: docs/wasm-bridge.md.
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

// f(a, b, c) called in JS inside try/catch: null when it returned, the
// exception's text when it threw (so no JS exception crosses wasm frames).
val js_try() {
  static const val f = val::global("Function").new_(
      val("f"), val("a"), val("b"), val("c"),
      val("try { f(a, b, c); return null; } catch (e) { try { "
          "return String(e !== null && typeof e === 'object' && 'message' in e ? e.message : e); "
          "} catch (_) { return 'an exception with no text'; } }"));
  return f;
}

// A number or boolean argument as JS gave it (type "number" or
// "boolean"): a value of another type becomes text naming its type, which
// the request layer refuses at the argument's path (Embind would coerce
// null, true or "3" into a number).
nlohmann::json js_arg(const val& v, const char* type) {
  const std::string t = v.typeOf().as<std::string>();
  if (t != type) return "a " + (v.isNull() ? std::string("null") : t);
  return t == "number" ? nlohmann::json(v.as<double>()) : nlohmann::json(v.as<bool>());
}

// One request; numbers arrive as JS doubles (js_arg) so that the request
// layer, not Embind's conversion, rejects fractions, huge values and
// values of other types.
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
// An inference job's phase ("prefill" | "decode" | "mixed"): that
// iteration's own summary (the CLI writes it as <phase>/summary.json).
std::string inspect_phase(const std::string& job_json, const std::string& phase) {
  return call("summary", job_json, {{"phase", phase}}).envelope;
}
std::string graph(const std::string& job_json) { return call("graph", job_json).envelope; }
std::string groups(const std::string& job_json) { return call("groups", job_json).envelope; }
std::string graph_json(const std::string& job_json) { return call("graph_json", job_json).envelope; }
// simulate(job, options): {"ok":true,"simulation":{...}}; options is JSON text
// {"exhaustive","astra","timeline"} (booleans, optional; timeline defaults to
// true here: the pipeline view draws it). Shape: docs/wasm-bridge.md.
std::string simulate(const std::string& job_json, const std::string& options_json) {
  return call("simulate", job_json, {{"options", options_json}, {"timeline_default", true}}).envelope;
}
// Inference jobs (docs/inference.md): the phase ("prefill" | "decode" |
// "mixed", or "kv_transfer" with disaggregated pools) whose trace, groups or
// rank info is wanted; the request layer checks it.
std::string groups_phase(const std::string& job_json, const std::string& phase) {
  return call("groups", job_json, {{"phase", phase}}).envelope;
}
// servingSweep(job, argsJson): {"ok":true,"sweep":[{concurrency, ttft_seconds,
// tpot_seconds, tokens_per_second_per_gpu, tokens_per_second_per_user}]}.
// argsJson is {"concurrency":[1,2,4,...]}; text that is not a JSON object is
// passed on as the value of "concurrency", which the request layer refuses
// with that path.
std::string serving_sweep(const std::string& job_json, const std::string& args_json) {
  nlohmann::json args = sc::parse_argument_text(args_json);
  if (args.is_discarded() || !args.is_object()) args = nlohmann::json{{"concurrency", args_json}};
  return call("serving_sweep", job_json, std::move(args)).envelope;
}
// servingCapacity(job, argsJson): {"ok":true,"capacity":{capacity_requests_per_second,
// ..., curve:[...]}} (docs/inference.md, "Capacity"). argsJson is
// {"ttft_seconds_p99", "tpot_seconds_p99", "requests"} (each optional; the
// job's serving.slo fills the targets left out); text that is not a JSON
// object is a parse_error at path "args". Every simulated run's memory is
// checked against the engine budget before it runs (too_large).
std::string serving_capacity(const std::string& job_json, const std::string& args_json) {
  nlohmann::json args = sc::parse_argument_text(args_json);
  if (args.is_discarded() || !args.is_object())
    return sc::error_envelope({sc::ErrorCode::kParseError,
                               "capacity arguments must be a JSON object {\"ttft_seconds_p99\", \"tpot_seconds_p99\", \"requests\"}",
                               "args"});
  return call("serving_capacity", job_json, std::move(args)).envelope;
}
std::string graph_json_stage(const std::string& job_json, val stage) {
  return call("graph_json", job_json, {{"stage", js_arg(stage, "number")}}).envelope;
}
std::string rank_info(const std::string& job_json, val rank) {
  return call("rank_info", job_json, {{"rank", js_arg(rank, "number")}}).envelope;
}
std::string rank_info_phase(const std::string& job_json, val rank, const std::string& phase) {
  return call("rank_info", job_json, {{"rank", js_arg(rank, "number")}, {"phase", phase}}).envelope;
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
// plan(job, args, onProgress, onPartial): the same, and onPartial(planJson)
// is called, also synchronously, each time the best so far changes (the
// ranked rows a stop at that moment would give: PlanOptions::improved, as
// JSON text of the same shape, complete false), so the page can show them
// while the search goes on. args may also give time_limit_seconds.
std::string plan_partial(const std::string& job_json, const std::string& args_json, val on_progress, val on_partial);
std::string plan(const std::string& job_json, const std::string& args_json, val on_progress) {
  return plan_partial(job_json, args_json, on_progress, val::undefined());
}
std::string plan_partial(const std::string& job_json, const std::string& args_json, val on_progress, val on_partial) {
  nlohmann::json args = sc::parse_argument_text(args_json);
  if (args.is_discarded() || !args.is_object()) {
    return sc::error_envelope({sc::ErrorCode::kParseError, "plan arguments must be a JSON object {\"gpus\", \"constraints\"}", "args"});
  }
  sc::Request r;
  r.op = "plan";
  r.job_json = job_json;
  r.args = std::move(args);
  // A callback that throws must not unwind through the search's wasm
  // frames (their memory would leak and the stack pointer stay where it
  // was: a few hundred such calls killed the module). It is called through
  // js_try, which catches; the search then stops (a cancel) and the call
  // answers an error naming the callback.
  auto guarded = [&r](const char* name, const val& fn, val a, val b, val c) {
    if (r.callback_failure) return;
    const val e = js_try()(fn, a, b, c);
    if (e.isNull()) return;
    sc::fail_callback(r, {sc::ErrorCode::kCancelled,
                          "the plan stopped: its " + std::string(name) + " callback threw: " +
                              sc::echo_text(e.as<std::string>(), 200),
                          name});
  };
  if (on_progress.typeOf().as<std::string>() == "function") {
    r.progress = [&](int64_t done, int64_t total, const std::string& phase) {
      // JS numbers: exact up to 2^53, far beyond any candidate count.
      guarded("onProgress", on_progress, val(static_cast<double>(done)), val(static_cast<double>(total)), val(phase));
    };
  }
  if (on_partial.typeOf().as<std::string>() == "function")
    r.partial = [&](const std::string& plan_json) { guarded("onPartial", on_partial, val(plan_json), val::undefined(), val::undefined()); };
  return handler().handle(r).envelope;
}

// {ok:true, bytes:Uint8Array} or {ok:false, error:{code,message,path}}.
val bytes_response(const sc::Response& r) {
  val out = val::object();
  out.set("ok", r.ok());
  if (!r.ok()) {
    val error = val::object();
    error.set("code", std::string(sc::error_code_name(r.error->code)));
    error.set("message", sc::echo_text(r.error->message, sc::kMaxErrorMessageBytes));
    error.set("path", sc::echo_text(r.error->path, sc::kMaxErrorPathBytes));
    out.set("error", error);
    return out;
  }
  // new Uint8Array(view) copies out of the wasm heap, so the JS array stays
  // valid after the response is freed or the heap grows.
  val view(emscripten::typed_memory_view(r.body.size(), reinterpret_cast<const uint8_t*>(r.body.data())));
  out.set("bytes", val::global("Uint8Array").new_(view));
  return out;
}
val rank_trace(const std::string& job_json, val rank) {
  return bytes_response(call("rank_trace", job_json, {{"rank", js_arg(rank, "number")}}));
}
val rank_trace_phase(const std::string& job_json, val rank, const std::string& phase) {
  return bytes_response(call("rank_trace", job_json, {{"rank", js_arg(rank, "number")}, {"phase", phase}}));
}

// The archive (core/api/export.h): layout "files" (the browser's zip) or
// "bundle" (generate's .zip/.tar.gz), trace prefix. archiveManifest lists the
// entries in order ({"ok":true,"manifest":{...}}; sizes: every trace's size
// too); archiveEntry gives one entry's bytes, as rankTrace does. An
// inference job's list is the whole archive, every part in its folder
// (prefill/..., kv_transfer/...), as `stagecraft generate` writes it.
std::string archive_manifest(const std::string& job_json, const std::string& layout, const std::string& prefix,
                             val sizes) {
  return call("archive_manifest", job_json, {{"layout", layout}, {"prefix", prefix}, {"sizes", js_arg(sizes, "boolean")}}).envelope;
}
val archive_entry(const std::string& job_json, const std::string& layout, const std::string& prefix,
                  const std::string& name) {
  return bytes_response(call("archive_entry", job_json, {{"layout", layout}, {"prefix", prefix}, {"name", name}}));
}
// The same for one part of an inference job (its folder's entries, named
// relative to it): "prefill" | "decode" | "mixed" | "kv_transfer".
std::string archive_manifest_phase(const std::string& job_json, const std::string& layout, const std::string& prefix,
                                   val sizes, const std::string& phase) {
  return call("archive_manifest", job_json,
              {{"layout", layout}, {"prefix", prefix}, {"sizes", js_arg(sizes, "boolean")}, {"phase", phase}})
      .envelope;
}
val archive_entry_phase(const std::string& job_json, const std::string& layout, const std::string& prefix,
                        const std::string& name, const std::string& phase) {
  return bytes_response(
      call("archive_entry", job_json, {{"layout", layout}, {"prefix", prefix}, {"name", name}, {"phase", phase}}));
}

}  // namespace

EMSCRIPTEN_BINDINGS(stagecraft) {
  emscripten::function("version", &version);
  emscripten::function("presets", &presets);
  emscripten::function("inspect", &inspect);
  emscripten::function("inspect", &inspect_phase);
  emscripten::function("graph", &graph);
  emscripten::function("groups", &groups);
  // Overloaded by argument count: (job[, phase]) and (job, rank[, phase]).
  emscripten::function("groups", &groups_phase);
  emscripten::function("rankTrace", &rank_trace);
  emscripten::function("rankTrace", &rank_trace_phase);
  emscripten::function("servingSweep", &serving_sweep);
  emscripten::function("servingCapacity", &serving_capacity);
  // Overloaded by argument count: graphJson(job) and graphJson(job, stage).
  emscripten::function("graphJson", &graph_json);
  emscripten::function("graphJson", &graph_json_stage);
  emscripten::function("rankInfo", &rank_info);
  emscripten::function("rankInfo", &rank_info_phase);
  emscripten::function("rankAt", &rank_at);
  emscripten::function("simulate", &simulate);
  emscripten::function("archiveManifest", &archive_manifest);
  emscripten::function("archiveEntry", &archive_entry);
  // Overloaded by argument count: an inference job's phase last.
  emscripten::function("archiveManifest", &archive_manifest_phase);
  emscripten::function("archiveEntry", &archive_entry_phase);
  // Overloaded by argument count: (job, args, onProgress[, onPartial]).
  emscripten::function("plan", &plan);
  emscripten::function("plan", &plan_partial);
}
