// The native request layer: the one entry point behind every front end.
// A request names an operation and carries a job (JSON text, or a job the
// CLI already parsed from its flags) and the operation's arguments; the
// response is the JSON envelope the wasm bridge hands to JS and the bare
// payload (summary.json, graph text, trace bytes, ...) the CLI prints. The
// CLI's read-only commands (inspect, graph) and wasm/bridge.cc call
// RequestHandler::handle; the bridge only converts strings and bytes.
// What an archive holds is core/api/export.h's archive_entries; the CLI
// writes those entries (cli/export.cc does the file-system work), and
// archive_manifest / archive_entry give the same list and bytes to any
// other front end (the browser's zip).
//
// Operations (args in parentheses; docs/wasm-bridge.md lists the envelopes):
//   version, presets                       no job
//   summary        {"ok":true,"summary":<summary.json>}
//   graph          {"ok":true,"text":"<canonical graph text>"}
//   groups         {"ok":true,"worldSize":N,"text":"<comm_groups.json>"}
//   graph_json     (stage: number, default 0) {"ok":true,"graph":{...}}
//   rank_info      (rank: number)  {"ok":true,"info":{...}}
//   rank_at        (coords: object or its JSON text) {"ok":true,"rank":N}
//   rank_trace     (rank: number)  {"ok":true,"bytes":<size>}, body = the .et bytes
//   simulate       (options, timeline_default) {"ok":true,"simulation":{...}}
//   archive_manifest (layout: "files"|"bundle", prefix, sizes: bool)
//                  {"ok":true,"manifest":{"layout","prefix","worldSize","entries":[...]}}
//   archive_entry  (name, layout, prefix) {"ok":true,"name":"...","bytes":<size>}, body = the bytes
//   plan           (gpus: number, constraints: object, time_limit_seconds: number > 0)
//                  {"ok":true,"plan":<stagecraft plan --json>}; the job is the
//                  base job (its parallel block is ignored), parsed, not built,
//                  and must give training.seq_len and training.global_batch_size
//                  (docs/plan.md); progress and partial are called
//   serving_sweep  (concurrency: [numbers]) {"ok":true,"sweep":[...]} (inference jobs)
//   serving_capacity (ttft_seconds_p99, tpot_seconds_p99, requests)
//                  {"ok":true,"capacity":{...}} (inference jobs; docs/inference.md)
// Inference jobs: every job operation takes phase: "prefill" | "decode"
// (the default) | "mixed" (docs/inference.md).
// Every failure is {"ok":false,"error":{"code","message","path"}} with the
// error in Response::error; a bad job is reported before bad arguments.
// Adding an operation is one entry in the table in request.cc.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/api.h"
#include "base/status.h"
#include "job/job.h"

namespace sc {

struct Request {
  std::string op;
  std::string job_json;    // the job as JSON text (parse_job) ...
  std::optional<Job> job;  // ... or already parsed ...
  // ... or already built (the CLI builds its own Generator, handling
  // signals while it does); not owned, used for this request only. The
  // first of generator, job, job_json that is set is used.
  const Generator* generator = nullptr;
  // Per-operation arguments: {"rank": 3}, {"stage": 1}, {"coords": {...}}.
  nlohmann::json args = nlohmann::json::object();
  // Progress of long operations (plan): (done, total, phase), called on
  // the calling thread; may be empty.
  std::function<void(int64_t done, int64_t total, const std::string& phase)> progress;
  // plan only: the best so far as plan JSON (PlanOptions::improved), each
  // time the ranked rows change while the search runs; may be empty.
  std::function<void(const std::string& plan_json)> partial;
  // Set through fail_callback (a front end's callback failed: the bridge's
  // JS callback threw): the operation stops at its next check and handle()
  // answers this error instead of its result.
  mutable std::optional<Error> callback_failure;
};

// A callback of `r` failed (it must not throw through the engine): the
// operation in progress stops (a cancel, base/cancel.h) and handle()
// answers `e`. Only the first failure counts.
void fail_callback(const Request& r, Error e);

// Argument text given as JSON (the bridge's argument objects; options,
// constraints, coordinates and a job's own text read by the request
// layer), parsed with the job parser's limits (64 levels of nesting, no
// NUL: a deeper value is never built, so no recursive copy of it can
// exhaust the stack); a discarded value when the text is not such JSON.
nlohmann::json parse_argument_text(const std::string& text);

struct Response {
  std::string envelope;        // {"ok":true,...} or {"ok":false,"error":{...}}
  std::string body;            // the payload alone (JSON, text or bytes); "" on error
  std::optional<Error> error;  // set exactly when the request failed
  bool ok() const { return !error.has_value(); }
};

class RequestHandler {
 public:
  // Never aborts on bad input: unknown op (path "op"), bad job (the job's
  // field path), bad arguments (path "rank", "stage", "coords...").
  Response handle(const Request& request);

  // The same over one JSON text: {"op": "...", "job": {...} or "<json>",
  // <args>...}; every key besides op and job is an argument.
  Response handle_json(const std::string& request_json);

  // The operation names, in table order.
  static std::vector<std::string> ops();

 private:
  // The Generator of the last job_json handled (exact text match): a
  // front end previewing many ranks of one job builds its graph once. A
  // failing job clears it; results never depend on it.
  std::string cached_job_json_;
  std::optional<Generator> cached_;
  Response handle_op(const Request& request);
};

// {"ok":false,"error":{"code":"...","message":"...","path":"..."}}
std::string error_envelope(const Error& e);

}  // namespace sc
