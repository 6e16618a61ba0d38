#include "base/status.h"
#include "base/utf8.h"

#include <algorithm>
#include <cstdint>
#include <vector>

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
  if (path.empty()) return echo_text(message, kMaxErrorMessageBytes);
  return echo_text(path, kMaxErrorPathBytes) + ": " + echo_text(message, kMaxErrorMessageBytes);
}

namespace {
void append_hex(std::string* out, const char* pre, unsigned v, int digits) {
  static const char* hex = "0123456789abcdef";
  *out += pre;
  for (int i = digits - 1; i >= 0; --i) *out += hex[(v >> (4 * i)) & 0xF];
}
// Length of the valid UTF-8 sequence at s[i] (1..4), or 0 if invalid;
// *cp the code point.
size_t utf8_at(std::string_view s, size_t i, uint32_t* cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned c = b(i);
  size_t n = 0;
  uint32_t v = 0, lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2, v = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, v = c & 0x0F, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, v = c & 0x07, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const unsigned d = b(i + k);
    if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xBF)) return 0;
    v = (v << 6) | (d & 0x3F);
  }
  *cp = v;
  return n;
}
}  // namespace

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    uint32_t cp = 0;
    const size_t n = utf8_at(s, i, &cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string echo_text(std::string_view s, size_t max) {
  // Printable ASCII within the limit comes out as it is (each character is
  // its own piece and nothing is cut): the common case, a field name of a
  // path, without the piece-by-piece copy below (the planner validates
  // hundreds of thousands of jobs and builds their paths).
  if (s.size() <= max &&
      std::all_of(s.begin(), s.end(), [](char ch) { return ch >= 0x20 && ch < 0x7F; }))
    return std::string(s);
  std::string out;
  out.reserve(std::min(s.size(), max) + 16);
  std::vector<size_t> bounds;  // out's size after each piece
  size_t i = 0;
  while (i < s.size()) {
    std::string piece;
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = 1;
    if (c < 0x20 || c == 0x7F) {
      if (c == '\n') piece = "\\n";
      else if (c == '\r') piece = "\\r";
      else if (c == '\t') piece = "\\t";
      else append_hex(&piece, "\\x", c, 2);
    } else if (c < 0x80) {
      piece.assign(1, static_cast<char>(c));
    } else {
      uint32_t cp = 0;
      n = utf8_at(s, i, &cp);
      if (n == 0) {
        n = 1;
        append_hex(&piece, "\\x", c, 2);
      } else if (cp <= 0x9F || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) ||
                 (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF) {
        append_hex(&piece, "\\u", cp, 4);
      } else {
        piece.assign(s.substr(i, n));
      }
    }
    if (out.size() + piece.size() > max) {
      // Cut at the last whole piece (character or escape) that leaves room
      // for the marker.
      const std::string marker = "...(" + std::to_string(s.size()) + " bytes)";
      const size_t keep = max > marker.size() ? max - marker.size() : 0;
      auto it = std::upper_bound(bounds.begin(), bounds.end(), keep);
      out.resize(it == bounds.begin() ? 0 : *(it - 1));
      return out + marker;
    }
    out += piece;
    bounds.push_back(out.size());
    i += n;
  }
  return out;
}

Error make_error(ErrorCode code, std::string message, std::string path) {
  return Error{code, std::move(message), std::move(path)};
}

}  // namespace sc
