#include "check/group_file.h"

#include <cstdint>
#include <limits>
#include <optional>

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

// A SAX pass straight into the table: a DOM of a large group file costs
// ~10x its size (and nlohmann's DOM destructor aborts when it runs out of
// memory), the table about 2x. Shape errors stop the parse at once.
class GroupSax {
 public:
  GroupSax(const std::string& path, GroupTable* t) : path_(path), t_(t) {}
  using Json = nlohmann::json;
  bool null() { return member("a null"); }
  bool boolean(bool) { return member("a boolean"); }
  bool number_integer(Json::number_integer_t v) { return depth_ == 2 ? (members_->push_back(v), true) : member("a number"); }
  bool number_unsigned(Json::number_unsigned_t v) {
    if (depth_ != 2) return member("a number");
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return fail("group " + name_ + " holds a rank too large for int64");
    members_->push_back(static_cast<int64_t>(v));
    return true;
  }
  bool number_float(Json::number_float_t, const std::string&) { return member("a non-integer number"); }
  bool string(std::string&) { return member("a string"); }
  bool binary(Json::binary_t&) { return member("a binary"); }
  bool start_object(std::size_t) {
    if (depth_ != 0) return member("a object");
    depth_ = 1;
    return true;
  }
  bool key(std::string& k) {
    int64_t key = 0;
    if (!parse_key(k, &key)) {
      std::string shown = k.size() > 64 ? k.substr(0, 40) + "...(" + std::to_string(k.size()) + " bytes)" : k;
      return fail("group key \"" + shown + "\" is not a decimal number without sign or leading zeros");
    }
    name_ = k;
    auto [it, fresh] = t_->try_emplace(key);
    if (!fresh) return fail("group key \"" + k + "\" appears twice");
    members_ = &it->second;
    return true;
  }
  bool end_object() {
    depth_ = 0;
    return true;
  }
  bool start_array(std::size_t) {
    if (depth_ != 1) return member("a array");
    depth_ = 2;
    return true;
  }
  bool end_array() {
    depth_ = 1;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    if (!error_) error_ = bad(path_, "not valid JSON");
    return false;
  }
  std::optional<Error> error_;

 private:
  // A value where it does not belong: at the top (not an object), as a
  // group (not a list) or inside a list (not an integer rank).
  bool member(const std::string& what) {
    if (depth_ == 0) return fail("not a JSON object of group key -> member ranks");
    if (depth_ == 1) return fail("group " + name_ + " is not a list of ranks");
    std::string a = what.rfind("a ", 0) == 0 && (what[2] == 'a' || what[2] == 'o') ? "an " + what.substr(2) : what;
    return fail("group " + name_ + " holds " + a + ", not an integer rank");
  }
  bool fail(const std::string& why) {
    error_ = bad(path_, why);
    return false;
  }
  const std::string& path_;
  GroupTable* t_;
  int depth_ = 0;
  std::string name_;
  std::vector<int64_t>* members_ = nullptr;
};

}  // namespace

Result<GroupTable> parse_group_file(const std::string& path, const std::string& text) {
  GroupTable t;
  GroupSax sax(path, &t);
  const bool ok = nlohmann::json::sax_parse(text, &sax);
  if (sax.error_) return *sax.error_;
  if (!ok) return bad(path, "not valid JSON");
  return t;
}

}  // namespace sc
