#include "check/group_file.h"

#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

namespace sc {
namespace {

Error bad(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::kParseError, path + ": " + what);
}

// "0" is accepted here (R6 reports it: the simulator reads it as "all
// ranks"); "00", "01", "", "-1", "+1" and values beyond int64 are not.
bool parse_key(const std::string& s, int64_t* key) {
  if (s.empty() || s.size() > 18) return false;  // 18 digits always fit int64
  if (s.size() > 1 && s[0] == '0') return false;
  int64_t k = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    k = k * 10 + (c - '0');
  }
  *key = k;
  return true;
}

}  // namespace

Result<GroupTable> parse_group_file(const std::string& path, const std::string& text) {
  // parse(text, nullptr, false): no exceptions (JSON_NOEXCEPTION); a syntax
  // error gives a discarded value instead.
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return bad(path, "not valid JSON");
  if (!j.is_object()) return bad(path, "not a JSON object of group key -> member ranks");
  GroupTable t;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    int64_t key = 0;
    if (!parse_key(name, &key)) {
      return bad(path, "group key \"" + name + "\" is not a decimal number without sign or leading zeros");
    }
    if (!it.value().is_array()) return bad(path, "group " + name + " is not a list of ranks");
    std::vector<int64_t>& members = t[key];
    for (const auto& r : it.value()) {
      // Check the type before get<>: a float or string member must be an
      // error, and an unsigned value above INT64_MAX must not wrap.
      if (r.is_number_unsigned()) {
        if (r.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return bad(path, "group " + name + " holds a rank too large for int64");
        }
        members.push_back(static_cast<int64_t>(r.get<uint64_t>()));
      } else if (r.is_number_integer()) {
        members.push_back(r.get<int64_t>());
      } else {
        return bad(path, "group " + name + " holds " + (r.is_number_float() ? std::string("a non-integer number") : "a " + std::string(r.type_name())) +
                            ", not an integer rank");
      }
    }
  }
  return t;
}

}  // namespace sc
