// Issue 24 D4 and D9 at the request layer, which the wasm engine runs: a
// syntax error beside a multi-byte character (smart quotes) used to make
// the error envelope's strict JSON dump throw, which aborts under
// JSON_NOEXCEPTION (natively too). Now every envelope is JSON, its message
// one line of valid UTF-8, and a 1 MB value is clipped.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "api/request.h"

using namespace sc;
using nlohmann::json;

namespace {

json inspect_error(const std::string& job) {
  RequestHandler h;
  Request r;
  r.op = "summary";
  r.job_json = job;
  r.args = json::object();
  const Response resp = h.handle(r);
  REQUIRE_FALSE(resp.ok());
  const json j = json::parse(resp.envelope, nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), resp.envelope.substr(0, 300));
  return j["error"];
}

bool one_clean_line(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  // valid UTF-8: the strict dump would throw otherwise (and abort here).
  json probe = s;
  return probe.dump(-1, ' ', false, json::error_handler_t::strict).size() >= 2;
}

}  // namespace

TEST_CASE("request: a syntax error beside smart quotes is an error envelope, not an abort") {
  const json e = inspect_error("{\"model\": \xE2\x80\x9Cgpt3-1.7b\xE2\x80\x9D}");
  CHECK(e["code"] == "parse_error");
  const std::string m = e["message"].get<std::string>();
  CHECK(m.rfind("line 1, column 11: syntax error", 0) == 0);
  CHECK(m.find("\\xe2") != std::string::npos);  // the cut character, escaped
  CHECK(one_clean_line(m));
}

TEST_CASE("request: echoed values are one line and clipped") {
  const json e = inspect_error(R"({"model": "gpt3-1.7b", "training": {"dtype": "a\nb\u001b[2J\u2028"}})");
  CHECK(e["message"] == "unknown dtype \"a\\nb\\x1b[2J\\u2028\" (known: fp32, tf32, bf16, fp16, fp8)");
  CHECK(e["path"] == "training.dtype");
  const json big = inspect_error("{\"model\": \"" + std::string(1 << 20, 'q') + "\"}");
  const std::string m = big["message"].get<std::string>();
  CHECK(m.size() < 1000);
  CHECK(m.find("...(1048576 bytes)") != std::string::npos);
  CHECK(one_clean_line(m));
}
