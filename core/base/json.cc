#include "base/json.h"

#include <nlohmann/json.hpp>

namespace sc {

std::string json_quote(std::string_view text) {
  // error_handler_t::replace: the default (strict) would throw on invalid
  // UTF-8, and the engine is built with JSON_NOEXCEPTION, where a throw aborts.
  return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace sc
