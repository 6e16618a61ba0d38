#include "base/status.h"

namespace sc {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kParseError: return "parse_error";
    case ErrorCode::kUnknownField: return "unknown_field";
    case ErrorCode::kNotDivisible: return "not_divisible";
    case ErrorCode::kWorldSizeMismatch: return "world_size_mismatch";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kIoError: return "io_error";
    case ErrorCode::kInternal: return "internal";
    case ErrorCode::kTooLarge: return "too_large";
    case ErrorCode::kCancelled: return "cancelled";
  }
  return "internal";
}

std::string Error::to_string() const {
  if (path.empty()) return message;
  return path + ": " + message;
}

Error make_error(ErrorCode code, std::string message, std::string path) {
  return Error{code, std::move(message), std::move(path)};
}

}  // namespace sc
