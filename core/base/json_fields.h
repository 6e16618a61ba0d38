// Checked access to nlohmann::json values for the input parsers (job JSON,
// HF config.json). Internal to the input layer. With JSON_NOEXCEPTION an
// unchecked .at()/.get<T>() aborts the process, so every read goes through
// these helpers: they check the type first and return an Error naming the
// JSON path and the offending value.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace sc::jsonf {

using Json = nlohmann::json;

// Parses text. Malformed input -> kParseError "line L, column C: <detail>"
// (1-based, counted in bytes); duplicate keys and nesting deeper than 64
// are errors too (nlohmann would silently keep the last duplicate).
Result<Json> parse_text(const std::string& text, const std::string& path = "");

// Input echoed in a message is clipped and escaped (echo_text,
// base/status.h): one line, valid UTF-8, at most about max bytes, then
// "...(N bytes)" (a 10 MB key must not make a 10 MB error line).
std::string clip(const std::string& s, size_t max = 64);
// "base.key", the key clipped.
std::string join(const std::string& base, const std::string& key);
const char* type_name(const Json& v);   // "string", "integer", "object", ...
std::string brief(const Json& v);       // compact, at most ~60 chars

// Null when absent; explicit JSON null counts as absent too (HF configs
// write "head_dim": null).
const Json* find(const Json& obj, const char* key);

Status expect_object(const Json& v, const std::string& path);

// kUnknownField "<path>.<key>: unknown key (known: a, b, c)"; `what`
// names the kind of key ("argument" for a request's arguments).
Status check_keys(const Json& obj, std::initializer_list<const char*> known,
                  const std::string& path, const char* what = "key");

Result<std::string> get_string(const Json& v, const std::string& path);
Result<bool> get_bool(const Json& v, const std::string& path);
Result<double> get_number(const Json& v, const std::string& path);  // finite
// Integer in [lo, hi]. Rejects floats ("must be an integer (got 8.5)"),
// values below lo ("must be >= 1 (got -3)") and above hi ("... cap").
Result<int64_t> get_int(const Json& v, const std::string& path, int64_t lo, int64_t hi);
Result<double> get_number_in(const Json& v, const std::string& path, double lo,
                             double hi, bool lo_inclusive = true);

// Message fragment for an over-cap value, shared by the validators.
std::string cap_message(const std::string& what, double value, double cap);

}  // namespace sc::jsonf

// Caps on input sizes (documented in docs/job-format.md). Each is far above
// any real model; together with the per-op work cap in validate_job they
// keep every per-node product (FLOPs, bytes, parameters x 32 bytes) inside
// int64. Iteration totals may exceed int64 and must be summed in double.
namespace sc::limits {
inline constexpr int64_t kMaxDegree = 1048576;        // dp, tp, world size (2^20)
inline constexpr int64_t kMaxSeqLen = 10485760;       // tokens (10 Mi)
inline constexpr int64_t kMaxMicroBatch = 1048576;    // sequences
inline constexpr int64_t kMaxGlobalBatch = 100000000; // sequences
inline constexpr int64_t kMaxLayers = 10000;
inline constexpr int64_t kMaxHidden = 1048576;
inline constexpr int64_t kMaxHeads = 65536;
inline constexpr int64_t kMaxExperts = 65536;  // routed / shared experts, experts per token (DeepSeek-V3: 256)
inline constexpr int64_t kMaxHeadDim = 65536;
inline constexpr int64_t kMaxFfn = 16777216;          // 2^24
inline constexpr int64_t kMaxVocab = 16777216;        // 2^24
inline constexpr int64_t kMaxPositions = kMaxSeqLen;
inline constexpr double kMaxParameters = 1e15;        // 1000x the largest model
inline constexpr double kMaxOpWork = 4.0e18;          // FLOPs or bytes of one op (< 2^62)
inline constexpr double kMaxBucketMb = 1048576;       // MiB (1 TiB)
inline constexpr int64_t kMaxOptimizerBytes = 64;     // bytes per parameter
}  // namespace sc::limits
