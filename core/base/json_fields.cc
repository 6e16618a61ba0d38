#include "base/json_fields.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <vector>

namespace sc::jsonf {
namespace {

constexpr size_t kMaxDepth = 64;  // job files are 3 levels deep; HF ~4

// SAX pass run before the DOM parse: nlohmann's DOM parser drops the byte
// position of an error and silently merges duplicate keys; this pass keeps
// both. Stops at the first problem.
class Checker {
 public:
  explicit Checker(const std::string& text) : text_(text) {}

  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(Json::number_integer_t) { return value(); }
  bool number_unsigned(Json::number_unsigned_t) { return value(); }
  bool number_float(Json::number_float_t, const std::string&) { return value(); }
  bool string(std::string&) { return value(); }
  bool binary(Json::binary_t&) { return value(); }
  bool start_object(std::size_t) { return open(false); }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(true); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    Frame& f = frames_.back();
    if (!f.keys.insert(k).second) {
      error_ = make_error(ErrorCode::kParseError, "duplicate key \"" + clip(k) + "\"",
                          path_with(k));
      return false;
    }
    f.current = k;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) {
    // position counts characters consumed, the offending one included
    // (end of input counts as one); report that character, 1-based.
    size_t last = position == 0 ? 0 : position - 1;
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < last && i < text_.size(); ++i) {
      if (text_[i] == '\n') { ++line; line_start = i + 1; }
    }
    size_t column = last - line_start + 1;
    std::string what = ex.what();
    // nlohmann prefixes "[json.exception.<kind>.<id>] "; users need the rest.
    if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos)
      what = what.substr(what.find("] ") + 2);
    size_t col = what.find("column ");
    size_t colon = col == std::string::npos ? col : what.find(": ", col);
    std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
    if (ex.id == 406) {  // "number overflow parsing '1e400'"
      size_t q = detail.find('\'');
      std::string num = q == std::string::npos ? "" : detail.substr(q + 1, detail.size() - q - 2);
      detail = "number " + clip(num) + " is out of range (beyond +-1.8e308)";
    }
    detail = clip(detail, 200);
    error_ = make_error(ErrorCode::kParseError, "line " + std::to_string(line) +
                        ", column " + std::to_string(column) + ": " + detail);
    return false;
  }

  const Error* error() const { return error_.code == ErrorCode::kInternal ? nullptr : &error_; }

 private:
  struct Frame {
    bool array = false;
    int64_t index = -1;
    std::string current;
    std::set<std::string> keys;
  };
  bool value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
    return true;
  }
  bool open(bool array) {
    value();
    if (frames_.size() >= kMaxDepth) {
      error_ = make_error(ErrorCode::kParseError,
                          "nesting deeper than " + std::to_string(kMaxDepth) + " levels",
                          path_with(""));
      return false;
    }
    frames_.push_back(Frame{array, -1, {}, {}});
    return true;
  }
  bool close() { frames_.pop_back(); return true; }
  std::string path_with(const std::string& last) const {
    std::string p;
    for (size_t i = 0; i + 1 < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      if (f.array) p += "[" + std::to_string(f.index) + "]";
      else p = join(p, f.current);
    }
    return last.empty() ? p : join(p, last);
  }

  const std::string& text_;
  std::vector<Frame> frames_;
  Error error_{ErrorCode::kInternal, "", ""};
};

// A bound or a value in a message: whole numbers as they are written
// (1048576, not 1.04858e+06: a cap read off a message must be the cap),
// others in 10 significant digits (1048576.4 is not 1.04858e+06 either).
std::string format_double(double v) {
  char buf[64];
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

}  // namespace

Result<Json> parse_text(const std::string& text, const std::string& path) {
  // nlohmann's lexer takes a NUL byte for the end of the input, so
  // '{"model": "x"}\0garbage' would parse: refuse any NUL (issue 24 D11).
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < nul; ++i)
      if (text[i] == '\n') line = line + 1, line_start = i + 1;
    return make_error(ErrorCode::kParseError,
                      "line " + std::to_string(line) + ", column " + std::to_string(nul - line_start + 1) +
                          ": a NUL byte (\\x00), which JSON text cannot contain",
                      path);
  }
  Checker checker(text);
  Json::sax_parse(text, &checker);
  if (const Error* e = checker.error()) {
    Error out = *e;
    if (!path.empty()) out.path = out.path.empty() ? path : join(path, out.path);
    return out;
  }
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return make_error(ErrorCode::kParseError, "malformed JSON", path);
  }
  return j;
}

std::string clip(const std::string& s, size_t max) { return echo_text(s, max); }

std::string join(const std::string& base, const std::string& key) {
  if (base.empty()) return clip(key);
  return base + "." + clip(key);
}

const char* type_name(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  if (v.is_object()) return "object";
  return "value";
}

std::string brief(const Json& v) {
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

const Json* find(const Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Status expect_object(const Json& v, const std::string& path) {
  if (v.is_object()) return ok_status();
  return make_error(ErrorCode::kInvalidArgument,
                    std::string("must be an object (got ") + type_name(v) + " " + brief(v) + ")",
                    path);
}

Status check_keys(const Json& obj, std::initializer_list<const char*> known,
                  const std::string& path, const char* what) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool found = false;
    for (const char* k : known) found = found || it.key() == k;
    if (found) continue;
    std::string list;
    for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    return make_error(ErrorCode::kUnknownField, std::string("unknown ") + what + " (known: " + list + ")",
                      join(path, it.key()));
  }
  return ok_status();
}

Result<std::string> get_string(const Json& v, const std::string& path) {
  if (v.is_string()) return v.get<std::string>();
  return make_error(ErrorCode::kInvalidArgument,
                    std::string("must be a string (got ") + type_name(v) + " " + brief(v) + ")", path);
}

Result<bool> get_bool(const Json& v, const std::string& path) {
  if (v.is_boolean()) return v.get<bool>();
  return make_error(ErrorCode::kInvalidArgument,
                    std::string("must be true or false (got ") + type_name(v) + " " + brief(v) + ")",
                    path);
}

Result<double> get_number(const Json& v, const std::string& path) {
  if (!v.is_number()) {
    return make_error(ErrorCode::kInvalidArgument,
                      std::string("must be a number (got ") + type_name(v) + " " + brief(v) + ")",
                      path);
  }
  double d = v.get<double>();
  if (!std::isfinite(d)) {
    return make_error(ErrorCode::kInvalidArgument, "must be finite (got " + brief(v) + ")", path);
  }
  return d;
}

Result<int64_t> get_int(const Json& v, const std::string& path, int64_t lo, int64_t hi) {
  if (v.is_number_float()) {  // a whole number past int64, or written with a point or an exponent
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d)) {
      if (d > static_cast<double>(hi))
        return make_error(ErrorCode::kInvalidArgument, "must be <= " + std::to_string(hi) + " (got " + brief(v) + ")", path);
      if (d < static_cast<double>(lo))
        return make_error(ErrorCode::kInvalidArgument, "must be >= " + std::to_string(lo) + " (got " + brief(v) + ")", path);
      return make_error(ErrorCode::kInvalidArgument,
                        "must be an integer written without a decimal point or exponent (got " + brief(v) + ")", path);
    }
  }
  if (!v.is_number_integer()) {
    return make_error(ErrorCode::kInvalidArgument, std::string("must be an integer (got ") +
                      type_name(v) + " " + brief(v) + ")", path);
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "must be <= " + std::to_string(hi) + " (got " + brief(v) + ")", path);
  }
  int64_t x = v.get<int64_t>();
  if (x < lo) {
    return make_error(ErrorCode::kInvalidArgument,
                      "must be >= " + std::to_string(lo) + " (got " + std::to_string(x) + ")", path);
  }
  if (x > hi) {
    return make_error(ErrorCode::kInvalidArgument,
                      "must be <= " + std::to_string(hi) + " (got " + std::to_string(x) + ")", path);
  }
  return x;
}

Result<double> get_number_in(const Json& v, const std::string& path, double lo, double hi,
                             bool lo_inclusive) {
  SC_ASSIGN_OR_RETURN(double d, get_number(v, path));
  bool low = lo_inclusive ? d < lo : d <= lo;
  if (low) {
    return make_error(ErrorCode::kInvalidArgument,
                      std::string("must be ") + (lo_inclusive ? ">= " : "> ") + format_double(lo) +
                      " (got " + format_double(d) + ")", path);
  }
  if (d > hi) {
    return make_error(ErrorCode::kInvalidArgument,
                      "must be <= " + format_double(hi) + " (got " + format_double(d) + ")", path);
  }
  return d;
}

std::string cap_message(const std::string& what, double value, double cap) {
  return what + " (" + format_double(value) + ") exceeds the cap of " + format_double(cap);
}

}  // namespace sc::jsonf
