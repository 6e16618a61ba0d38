// base/status.h's echo_text (issue 24 D9, D12): every value echoed into a
// message or a comment is one line, valid UTF-8, escaped and clipped.
// Expectations written by hand from the escaping rules.
#include <doctest/doctest.h>

#include <string>

#include "base/json_fields.h"
#include "base/status.h"

using sc::echo_text;

TEST_CASE("echo_text: plain text and valid UTF-8 pass unchanged") {
  CHECK(echo_text("gpt3-1.7b") == "gpt3-1.7b");
  CHECK(echo_text("H100 \xC3\x97 8 \xE2\x80\x9Cq\xE2\x80\x9D") == "H100 \xC3\x97 8 \xE2\x80\x9Cq\xE2\x80\x9D");  // × and smart quotes
  CHECK(echo_text("a\\b") == "a\\b");  // backslashes kept: echoing twice changes nothing
  CHECK(echo_text(echo_text("x\ny\x1b[31m")) == echo_text("x\ny\x1b[31m"));
}

TEST_CASE("echo_text: control characters, line separators and invalid bytes escaped") {
  CHECK(echo_text("a\nb\rc\td") == "a\\nb\\rc\\td");
  CHECK(echo_text("\x1b[2J") == "\\x1b[2J");  // a terminal escape
  CHECK(echo_text(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(echo_text("\x7f") == "\\x7f");
  CHECK(echo_text("x\xC2\x85y") == "x\\u0085y");            // NEL
  CHECK(echo_text("x\xE2\x80\xA8y\xE2\x80\xA9") == "x\\u2028y\\u2029");
  CHECK(echo_text("\xE2\x80\xAE") == "\\u202e");              // right-to-left override
  CHECK(echo_text("\xEF\xBB\xBF") == "\\ufeff");
  CHECK(echo_text("'\xE2\x80") == "'\\xe2\\x80");              // a character cut short
  CHECK(echo_text("\xFF\xC0\xAF") == "\\xff\\xc0\\xaf");       // never valid; an overlong '/'
  CHECK(echo_text("\xED\xA0\x80") == "\\xed\\xa0\\x80");       // a UTF-16 surrogate
  CHECK(echo_text("\xF4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  CHECK(echo_text("\xF0\x9F\x98\x80") == "\xF0\x9F\x98\x80");  // an emoji is fine
}

TEST_CASE("echo_text: clipped at a whole character or escape, with the input's size") {
  const std::string big(1 << 20, 'k');
  const std::string e = echo_text(big);
  CHECK(e.size() <= 64);
  CHECK(e == std::string(64 - 18, 'k') + "...(1048576 bytes)");  // the marker is 18 bytes
  // Multi-byte characters and escapes are never cut in half.
  std::string s;
  for (int i = 0; i < 100; ++i) s += "\xC3\x97\n";
  const std::string c = echo_text(s, 40);
  CHECK(c.size() <= 40);
  CHECK(c.rfind("...(300 bytes)") == c.size() - 14);
  // 40 - 14 = 26 bytes of pieces of 2 bytes each ("×", "\\n"): 13 pieces.
  std::string want;
  for (int i = 0; i < 6; ++i) want += "\xC3\x97\\n";
  want += "\xC3\x97";
  CHECK(c == want + "...(300 bytes)");
  CHECK(sc::jsonf::clip(big) == e);  // the one function behind jsonf::clip
  // Printable ASCII at exactly the limit passes whole; one byte more is
  // clipped like any other text: 64 - 13 bytes kept, then "...(65 bytes)".
  const std::string at(64, '~'), over(65, ' ');
  CHECK(echo_text(at) == at);
  CHECK(echo_text(over) == std::string(64 - 13, ' ') + "...(65 bytes)");
  CHECK(echo_text("", 0).empty());
}

TEST_CASE("echo_text: a rendered error is one line") {
  const sc::Error err = sc::make_error(sc::ErrorCode::kInvalidArgument, "unknown preset \"a\nb\"", "model\xE2\x80\xA8x");
  CHECK(err.to_string() == "model\\u2028x: unknown preset \"a\\nb\"");
}
