// SPDX-License-Identifier: MIT
// Escaping of untrusted text per output format (issue 12, include/halo/sanitize.hpp).
#include <halo/sanitize.hpp>

#include <catch2/catch.hpp>

using halo::dump_json;
using halo::escape_invalid_utf8;
using halo::terminal_safe;
using halo::xml_safe;

TEST_CASE("bytes that are not UTF-8 become \\xNN text, valid UTF-8 stays", "[sanitize]") {
  CHECK(escape_invalid_utf8("plain") == "plain");
  CHECK(escape_invalid_utf8("gr\xC3\xBC\xC3\x9F") == "gr\xC3\xBC\xC3\x9F"); // grüß
  CHECK(escape_invalid_utf8("a\xFF\xA0z") == "a\\xFF\\xA0z");
  CHECK(escape_invalid_utf8("\xC0\xAF") == "\\xC0\\xAF");                   // overlong '/'
  CHECK(escape_invalid_utf8("\xED\xA0\x80") == "\\xED\\xA0\\x80");          // a surrogate
  CHECK(escape_invalid_utf8("\xF4\x90\x80\x80") == "\\xF4\\x90\\x80\\x80"); // above U+10FFFF
  CHECK(escape_invalid_utf8("\xE2\x82") == "\\xE2\\x82");                   // truncated
}

TEST_CASE("the terminal never sees an escape sequence from a fact", "[sanitize]") {
  CHECK(terminal_safe("title \x1B]0;pwned\x07 clear \x1B[2J\r") ==
        "title \\x1B]0;pwned\\x07 clear \\x1B[2J\\x0D");
  CHECK(terminal_safe("csi \xC2\x9B"
                      "31m") == "csi \\xC2\\x9B31m"); // C1 CSI
  CHECK(terminal_safe("keep\ttab\nand newline") == "keep\ttab\nand newline");
  // Only the reporter's own colours stay (fmt/color.h writes one parameter per sequence).
  CHECK(terminal_safe("\x1B[1m\x1B[31mFAIL\x1B[0m \x1B[2J", true) ==
        "\x1B[1m\x1B[31mFAIL\x1B[0m \\x1B[2J");
  CHECK(terminal_safe("\x1B[31;1mFAIL", true) == "\\x1B[31;1mFAIL");
  CHECK(terminal_safe("\x1B[31;1mFAIL", false) == "\\x1B[31;1mFAIL");
}

TEST_CASE("every ESC is escaped on its own, after an OSC ended by BEL too (issue 44)",
          "[sanitize]") {
  const std::string pretty = "Ubuntu \x1B]0;T\x07\x1B[31m";
  CHECK(terminal_safe(pretty) == "Ubuntu \\x1B]0;T\\x07\\x1B[31m");
  // With the reporter's colours kept, a fact's SGR that hides text (8: conceal) or paints it
  // black (30) is still escaped; only 0, 1, 2, 31, 32, 33 stay.
  CHECK(terminal_safe("a\x1B[8mb\x1B[30mc\x1B]0;T\x07\x1B[7m", true) ==
        "a\\x1B[8mb\\x1B[30mc\\x1B]0;T\\x07\\x1B[7m");
  CHECK(terminal_safe("\x1B[\x1B[31m", true) == "\\x1B[\x1B[31m");
  CHECK(terminal_safe("\x1B[0031m", true) == "\\x1B[0031m");
}

TEST_CASE("XML text holds only XML 1.0 characters", "[sanitize]") {
  CHECK(xml_safe("a\x01"
                 "b\x0B\tc\n\r") == "a\\x01b\\x0B\tc\n\r");
  CHECK(xml_safe("\xEF\xBF\xBF") == "\\xEF\\xBF\\xBF"); // U+FFFF
  CHECK(xml_safe("\xFF") == "\\xFF");
}

TEST_CASE("JSON with bytes that are not UTF-8 dumps instead of throwing", "[sanitize]") {
  nlohmann::json j = {{"cmdline", std::string("a=\xFF\xA0")},
                      {std::string("key\xFE"), {std::string("x\x80")}}};
  CHECK_THROWS(j.dump()); // nlohmann::json type_error 316, what main crashed with
  const std::string out = dump_json(j);
  CHECK(out == R"({"cmdline":"a=\\xFF\\xA0","key\\xFE":["x\\x80"]})");
  CHECK(nlohmann::json::parse(out)["cmdline"] == "a=\\xFF\\xA0");
}

TEST_CASE("dump_json writes nlohmann's text, with DEL and C1 controls as \\u escapes",
          "[sanitize]") {
  // dump_json writes plain strings itself and the rest through nlohmann's serializer (issue 33):
  // the text must stay nlohmann's, byte for byte, compact and indented.
  const nlohmann::json j = {
      {"b", {1, -2, 3.25, 1e300, nullptr, true, "x"}},
      {"a", {{"empty", nlohmann::json::object()}, {"list", nlohmann::json::array()}}},
      {"quote \"\\\n\t\x01", "gr\xC3\xBC\xC3\x9F \xE2\x80\x94"},
      {"u", 18446744073709551615ULL}};
  for (const int indent : {-1, 0, 2, 4})
    CHECK(dump_json(j, indent) == j.dump(indent));
  const nlohmann::json c1 = {{"csi", "a\xC2\x9B"
                                     "31m\x7F \xC2\xA0"}};
  CHECK(dump_json(c1, 2) == "{\n  \"csi\": \"a\\u009b31m\\u007f \xC2\xA0\"\n}");
}
