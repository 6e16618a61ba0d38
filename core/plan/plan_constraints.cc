// The plan's constraints: the job JSON's "plan" block, the request's
// args.constraints and the CLI's flags (mapped onto the same JSON).
#include <string>

#include "base/json_fields.h"
#include "plan/plan.h"

namespace sc {

Result<PlanConstraints> parse_plan_constraints(const nlohmann::json& j, const std::string& path) {
  PlanConstraints c;
  if (j.is_null()) return c;
  SC_RETURN_IF_ERROR(jsonf::expect_object(j, path));
  std::vector<std::string> known;
  for (int d = 0; d < kPlanDegrees; ++d) {
    const std::string n = kPlanDegreeNames[d];
    known.push_back(n);
    known.push_back("min_" + n);
    known.push_back("max_" + n);
  }
  for (const char* k : {"schedules", "recompute", "zero", "orders", "memory_reserve_gib", "memory_reserve_fraction",
                        "objective", "top"})
    known.push_back(k);
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    for (const std::string& k : known) ok = ok || k == it.key();
    if (!ok) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      return make_error(ErrorCode::kUnknownField, "unknown key (known: " + list + ")", jsonf::join(path, it.key()));
    }
  }
  for (int d = 0; d < kPlanDegrees; ++d) {
    const std::string n = kPlanDegreeNames[d];
    const std::pair<std::string, std::optional<int64_t>*> slots[] = {
        {n, &c.fixed[d]}, {"min_" + n, &c.min[d]}, {"max_" + n, &c.max[d]}};
    for (const auto& [key, slot] : slots)
      if (const nlohmann::json* v = jsonf::find(j, key.c_str())) {
        SC_ASSIGN_OR_RETURN(int64_t x, jsonf::get_int(*v, path + "." + key, 1, int64_t{1} << 40));
        *slot = x;
      }
  }
  auto string_list = [&](const char* key, std::initializer_list<const char*> allowed,
                         std::vector<std::string>* out) -> Status {
    const nlohmann::json* v = jsonf::find(j, key);
    if (!v) return ok_status();
    const std::string p = path + "." + key;
    if (!v->is_array() || v->empty())
      return make_error(ErrorCode::kInvalidArgument, "must be a non-empty list (got " + jsonf::brief(*v) + ")", p);
    for (size_t i = 0; i < v->size(); ++i) {
      const std::string pi = p + "[" + std::to_string(i) + "]";
      SC_ASSIGN_OR_RETURN(std::string s, jsonf::get_string((*v)[i], pi));
      bool ok = false;
      std::string list;
      for (const char* a : allowed) {
        ok = ok || s == a;
        list += (list.empty() ? "" : ", ") + std::string(a);
      }
      if (!ok)
        return make_error(ErrorCode::kInvalidArgument, "unknown value '" + jsonf::clip(s) + "' (known: " + list + ")", pi);
      out->push_back(s);
    }
    return ok_status();
  };
  SC_RETURN_IF_ERROR(string_list("schedules", {"1f1b", "gpipe", "interleaved-1f1b", "zero-bubble"}, &c.schedules));
  SC_RETURN_IF_ERROR(string_list("recompute", {"none", "selective", "full"}, &c.recompute));
  SC_RETURN_IF_ERROR(string_list("orders", {"megatron", "llama3"}, &c.orders));
  if (const nlohmann::json* v = jsonf::find(j, "zero")) {
    if (!v->is_array() || v->empty())
      return make_error(ErrorCode::kInvalidArgument, "must be a non-empty list of 0..3 (got " + jsonf::brief(*v) + ")",
                        path + ".zero");
    for (size_t i = 0; i < v->size(); ++i) {
      SC_ASSIGN_OR_RETURN(int64_t z, jsonf::get_int((*v)[i], path + ".zero[" + std::to_string(i) + "]", 0, 3));
      c.zero.push_back(z);
    }
  }
  if (const nlohmann::json* v = jsonf::find(j, "memory_reserve_gib")) {
    SC_ASSIGN_OR_RETURN(double x, jsonf::get_number_in(*v, path + ".memory_reserve_gib", 0, 1e6));
    c.memory_reserve_gib = x;
  }
  if (const nlohmann::json* v = jsonf::find(j, "memory_reserve_fraction")) {
    SC_ASSIGN_OR_RETURN(double x, jsonf::get_number_in(*v, path + ".memory_reserve_fraction", 0, 1, true));
    c.memory_reserve_fraction = x;
  }
  if (c.memory_reserve_gib && c.memory_reserve_fraction)
    return make_error(ErrorCode::kInvalidArgument,
                      "memory_reserve_gib and memory_reserve_fraction both given: give one",
                      path + ".memory_reserve_fraction");
  if (const nlohmann::json* v = jsonf::find(j, "objective")) {
    SC_ASSIGN_OR_RETURN(std::string s, jsonf::get_string(*v, path + ".objective"));
    if (s != "step_time" && s != "tokens_per_gpu")
      return make_error(ErrorCode::kInvalidArgument,
                        "unknown objective '" + jsonf::clip(s) + "' (known: step_time, tokens_per_gpu)",
                        path + ".objective");
    c.objective = s;
  }
  if (const nlohmann::json* v = jsonf::find(j, "top")) {
    SC_ASSIGN_OR_RETURN(int64_t t, jsonf::get_int(*v, path + ".top", 1, 1000));
    c.top = t;
  }
  return c;
}

}  // namespace sc
