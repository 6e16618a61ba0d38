// Always-on checks (base/check.h) and JSON strings (base/json.h). The
// suite runs in Release (NDEBUG), where the asserts these checks replaced
// compiled to nothing.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "base/check.h"
#include "base/json.h"
#include "base/status.h"
#include "death.h"

using sc::testing::run_in_child;

TEST_CASE("SC_CHECK: holds in this (Release) build and aborts with the condition and the message") {
#ifdef NDEBUG
  MESSAGE("NDEBUG is defined: assert() would be compiled out here");
#endif
  auto end = run_in_child([] { SC_CHECK(1 + 1 == 3, "arithmetic is " + std::string("broken")); });
  CHECK(end.aborted);
  CHECK(end.err.find("stagecraft: internal error at ") != std::string::npos);
  CHECK(end.err.find("1 + 1 == 3: arithmetic is broken") != std::string::npos);
  auto fine = run_in_child([] { SC_CHECK(2 + 2 == 4, "not evaluated"); });
  CHECK_FALSE(fine.aborted);
  CHECK(fine.err.empty());
}

TEST_CASE("Result: value() of an error stops with the error's text instead of undefined behaviour") {
  auto end = run_in_child([] {
    sc::Result<int> r = sc::make_error(sc::ErrorCode::kInvalidArgument, "tp (3) does not divide 8", "parallel.tp");
    volatile int v = r.value();
    (void)v;
  });
  CHECK(end.aborted);
  CHECK(end.err.find("value() of an error: parallel.tp: tp (3) does not divide 8") != std::string::npos);
  auto err = run_in_child([] {
    sc::Result<int> r = 7;
    (void)r.error();
  });
  CHECK(err.aborted);
  CHECK(err.err.find("error() of a value") != std::string::npos);
}

TEST_CASE("json_quote: JSON's escapes, the text round-trips") {
  CHECK(sc::json_quote("") == "\"\"");
  CHECK(sc::json_quote("a \"b\" \\c") == R"("a \"b\" \\c")");
  CHECK(sc::json_quote("line\nnext\ttab\r") == R"("line\nnext\ttab\r")");
  CHECK(sc::json_quote(std::string("\x01\x1f", 2)) == R"("\u0001\u001f")");
  CHECK(sc::json_quote(std::string("nul\0x", 5)) == R"("nul\u0000x")");
  CHECK(sc::json_quote("π ≈ 3.14") == "\"π ≈ 3.14\"");  // UTF-8 kept as is
  const std::string text = "# graph\n  %1 = \"matmul\"(%0) {b:dp}\\\n\x02";
  CHECK(nlohmann::json::parse(sc::json_quote(text)).get<std::string>() == text);
}

TEST_CASE("json_quote: invalid UTF-8 becomes U+FFFD instead of aborting (JSON_NOEXCEPTION)") {
  auto end = run_in_child([] {
    const std::string q = sc::json_quote(std::string("a\xff" "b", 3));
    if (q != "\"a\xef\xbf\xbd" "b\"") _exit(3);
  });
  CHECK_FALSE(end.aborted);
  CHECK(end.err.empty());
}
