// Hand-written argument parsing shared by the subcommands, and the job
// input flags (--config/--model + overrides) that generate, inspect and
// graph accept. Exit codes: 0 ok, 1 job/input/io error, 2 usage error.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "api/api.h"
#include "job/job.h"

namespace sc::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

struct FlagSpec {
  const char* name;   // "--dp", "-o"
  const char* alias;  // "--output" or nullptr
  bool takes_value;
  const char* value_name;  // "N", "DIR"; shown in help
  const char* help;
};

struct Args {
  std::map<std::string, std::string> flags;  // canonical name -> value ("" for switches)
  std::vector<std::string> positional;
  bool has(const std::string& name) const { return flags.count(name) != 0; }
  const std::string* get(const std::string& name) const;
};

// Parses args (without the program and command names). "--flag value" and
// "--flag=value"; "--" ends flags. Unknown flag, missing value or a flag
// given twice -> error message in *error.
std::optional<Args> parse_args(const std::vector<std::string>& args,
                               const std::vector<FlagSpec>& specs, std::string* error);

std::string flags_help(const std::vector<FlagSpec>& specs);

// The flags that describe a job (shared by generate, inspect, graph).
const std::vector<FlagSpec>& job_flags();

// Prints "stagecraft <command>: <message>" and a --help hint; returns 2.
int usage_error(const std::string& command, const std::string& message);
// Prints "stagecraft <command>: error: <path>: <message> [<code>]"; returns 1.
int report_error(const std::string& command, const Error& e);
// report_error, unless `e` is the cancellation a caught signal caused:
// then "interrupted by SIG… (<e's message>)<after>" and the exit by the
// signal (exit_if_signalled, cli/export.h).
int report_error_or_signal(const std::string& command, const Error& e, const std::string& after = "");

// Input size caps (docs/cli.md, "Inputs"): a file past its cap is refused
// before it is read.
// A job JSON: room for a serving.workload trace of kMaxWorkloadRequests
// (200,000) requests, about 15 MB as one line and 25 MB indented.
inline constexpr size_t kMaxJobFileBytes = size_t{32} << 20;
inline constexpr size_t kMaxGroupFileBytes = size_t{256} << 20;  // comm_groups.json
inline constexpr size_t kMaxTraceFileBytes = size_t{1} << 30;    // one .et

// Reads a whole regular file (binary) into *out, reusing its storage. A
// FIFO, device or directory is refused without blocking (opened
// O_NONBLOCK, checked with fstat), and so is a file over max_bytes.
// kIoError "PATH: message" names the file and the reason.
Status read_regular_file(const std::string& path, size_t max_bytes, std::string* out);
Result<std::string> read_file(const std::string& path, size_t max_bytes);
// The job flags' integer rule: decimal digits with an optional '-', nothing
// else (no spaces, no "0x8", no "2.0"). Used by plan's flags too.
std::optional<int64_t> parse_int(const std::string& s);
// The usage message for a flag whose value parse_int refused: "expects an
// integer", or, for digits past int64, "is out of range".
std::string int_flag_error(const std::string& flag, const std::string& value);
// Whether a file name is "<prefix>.<something>.et" (a trace of the prefix,
// or an odd one rank_of_file refuses).
bool is_trace_file(const std::string& name, const std::string& prefix);
// The usage message for a --prefix valid_trace_prefix refused (generate,
// validate, replay): what a prefix may be, and the value echoed escaped.
std::string prefix_error(const std::string& prefix);
// The rank of a file already known to be named "<prefix>.*.et":
// canonical decimal only ("01" is not the name the simulator opens for
// rank 1); -1 for another .et file with the prefix (validate, replay).
int64_t rank_of_file(const std::string& name, const std::string& prefix);
// What a Hugging Face import could not read or model (docs/hf-import.md),
// one warning a line on stderr: every command that reads a job says it.
void print_hf_warnings(const std::string& command, const Job& job);
// "1,8,64" -> {1, 8, 64}: 1 to max_count comma-separated decimal integers
// (at most 7 digits each, no sign or spaces) of at least min_value; false
// on anything else. The list flags of simulate and serve-capacity.
bool parse_int_list(const std::string& text, int64_t min_value, size_t max_count, std::vector<int64_t>* out);

// Generator::create with the CLI's guards: SIGINT/SIGTERM cancel the build
// (the process then exits by the signal). Prints the error and sets *rc on
// failure.
// How the CLI builds a job: the pipeline stages on the machine's cores (at
// most 4; Generator::CreateOptions::threads, the same bytes at any count).
Generator::CreateOptions cli_create_options();
std::optional<Generator> build_generator(const std::string& command, const Job& job, int* rc);
// Keeps a Generator alive until the process exits, deliberately never
// destroyed: the CLI builds one job per process, and freeing its programs
// (millions of trace nodes, one heap block or more each) after the output
// is written costs as much as a tenth of inspect's and simulate's time for
// nothing. It stays reachable from a static pointer, so LeakSanitizer does
// not report it. CLI only: the wasm module and the library free theirs.
void keep_until_exit(Generator&& gen);
// Builds the job's Generator (budget, cancellation) and answers one request
// of the request layer (core/api/request.h) for it: the response body in
// *body and kExitOk, or the error reported and its exit code.
int answer_request(const std::string& command, const Job& job, const std::string& op,
                   std::string* body);

// Builds and validates the job from --config and the override flags (flags
// win). --allow-large raises the work budget (core/api/budget.h) to 80% of
// the available memory. Returns kExitOk and fills *job, or prints the error and returns
// the exit code.
// `mode`: the mode of a job made of flags alone, without --config (""
// = the default, training); serve-capacity's --model PRESET is an
// inference job. A --config file says its own.
int load_job(const std::string& command, const Args& args, Job* job, const char* mode = "");

// Common handling of --help / parse errors: returns an exit code when the
// command should stop (help printed, or usage error), nullopt otherwise.
std::optional<int> parse_or_exit(const std::string& command, const std::vector<std::string>& argv,
                                 const std::vector<FlagSpec>& specs, const std::string& usage,
                                 Args* out);

}  // namespace sc::cli
