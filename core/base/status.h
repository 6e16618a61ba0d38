// Recoverable errors as values. The engine never throws (the wasm build has
// exception catching disabled, so a throw would abort the module); every
// fallible function returns Result<T> or Status. An Error carries a stable
// code the UI/CLI can branch on, a human message that names the values, and
// the config path of the offending field ("parallel.tp").
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "base/check.h"

namespace sc {

enum class ErrorCode {
  kInvalidArgument,   // a value is out of range or malformed
  kParseError,        // malformed JSON / text (message has line and column)
  kUnknownField,      // a key we do not understand
  kNotDivisible,      // a dimension does not divide by a parallel degree
  kWorldSizeMismatch, // product of parallel degrees != world size
  kUnsupported,       // valid request for something not implemented
  kIoError,           // filesystem / disk
  kInternal,          // broken invariant (a bug): never the user's fault
  kTooLarge,          // valid job past the work budget (core/api/budget.h)
  kCancelled,         // the caller asked to stop (SIGINT/SIGTERM in the CLI)
};

const char* error_code_name(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  std::string path;  // config path of the field at fault, "" if none

  // "parallel.tp: heads (96) is not divisible by tp (7)" style rendering.
  std::string to_string() const;
};

Error make_error(ErrorCode code, std::string message, std::string path = {});

// The one function for text echoed into a message or a comment (issue 24
// D9, D12): one line, valid UTF-8, nothing a terminal or a YAML/JSON reader
// would act on, at most about max bytes. Control characters become \n, \r,
// \t or \xNN; C1 controls (U+0080-U+009F, NEL included), U+2028, U+2029,
// the bidirectional overrides (U+202A-U+202E, U+2066-U+2069) and U+FEFF
// become \uXXXX; a byte that is not part of valid UTF-8 becomes \xNN.
// Longer than max: cut at a character, then "...(N bytes)" (N: the input's
// size). Backslashes are kept as they are, so echoing twice changes nothing.
std::string echo_text(std::string_view s, size_t max = 64);
// Limits of a whole rendered error (Error::to_string, the wasm envelope).
inline constexpr size_t kMaxErrorMessageBytes = 2000;
inline constexpr size_t kMaxErrorPathBytes = 400;

// Result<T>: either a T or an Error. Deliberately small: value(), error(),
// ok(). Accessing the wrong alternative is a bug: SC_CHECK aborts with a
// message in every build (the caller must test ok() first).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT(implicit)
  Result(Error error) : v_(std::move(error)) {}      // NOLINT(implicit)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { SC_CHECK(ok(), "value() of an error: " + error_text()); return std::get<0>(v_); }
  const T& value() const& { SC_CHECK(ok(), "value() of an error: " + error_text()); return std::get<0>(v_); }
  T&& value() && { SC_CHECK(ok(), "value() of an error: " + error_text()); return std::get<0>(std::move(v_)); }
  const Error& error() const { SC_CHECK(!ok(), "error() of a value"); return std::get<1>(v_); }

  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::string error_text() const { return std::get<1>(v_).to_string(); }
  std::variant<T, Error> v_;
};

struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() { return Ok{}; }

}  // namespace sc

// Propagate an error from an expression returning Result/Status.
#define SC_CONCAT_INNER(a, b) a##b
#define SC_CONCAT(a, b) SC_CONCAT_INNER(a, b)
#define SC_RETURN_IF_ERROR(expr)                                   \
  do {                                                             \
    auto&& sc_status_ = (expr);                                    \
    if (!sc_status_.ok()) return sc_status_.error();               \
  } while (0)
#define SC_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)                   \
  auto tmp = (expr);                                               \
  if (!tmp.ok()) return tmp.error();                               \
  lhs = std::move(tmp).value()
#define SC_ASSIGN_OR_RETURN(lhs, expr) \
  SC_ASSIGN_OR_RETURN_IMPL(SC_CONCAT(sc_result_, __LINE__), lhs, expr)
