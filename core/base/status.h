// Recoverable errors as values. The engine never throws (the wasm build has
// exception catching disabled, so a throw would abort the module); every
// fallible function returns Result<T> or Status. An Error carries a stable
// code the UI/CLI can branch on, a human message that names the values, and
// the config path of the offending field ("parallel.tp").
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

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

// Result<T>: either a T or an Error. Deliberately small: value(), error(),
// ok(). Accessing the wrong alternative is a bug (asserted).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT(implicit)
  Result(Error error) : v_(std::move(error)) {}      // NOLINT(implicit)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(v_); }
  const T& value() const& { assert(ok()); return std::get<0>(v_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(v_)); }
  const Error& error() const { assert(!ok()); return std::get<1>(v_); }

  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
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
