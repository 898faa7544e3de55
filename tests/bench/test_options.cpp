// SPDX-License-Identifier: MIT
#include "halo_bench/options.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <string_view>

using namespace halo_bench;

TEST_CASE("GEMM shapes: the kernels' divisibility is checked before any GPU call", "[options]") {
  const auto ok = parse_gemm_shapes("4096x4096x4096,16x11008x4096");
  REQUIRE(ok.size() == 2);
  CHECK(ok[1].m == 16);
  CHECK(ok[1].n == 11008);
  CHECK(ok[1].k == 4096);
  // The case: a shape that breaks M%16 / N%16 / K%32 must be refused (exit 2), not run.
  CHECK_THROWS_WITH(parse_gemm_shapes("4100x4096x4096"), Catch::Contains("M % 16 == 0"));
  CHECK_THROWS_AS(parse_gemm_shapes("4096x4104x4096"), UsageError);
  CHECK_THROWS_AS(parse_gemm_shapes("4096x4096x4112"), UsageError); // K % 32 == 16
  CHECK_NOTHROW(parse_gemm_shapes("16x16x32"));
  CHECK_THROWS_AS(parse_gemm_shapes("0x16x32"), UsageError);
  CHECK_THROWS_AS(parse_gemm_shapes("16x16"), UsageError);
  CHECK_THROWS_AS(parse_gemm_shapes("16x16x32x4"), UsageError);
  CHECK_THROWS_AS(parse_gemm_shapes("-16x16x32"), UsageError);
  CHECK_THROWS_AS(parse_gemm_shapes("16 x16x32"), UsageError);
  CHECK_THROWS_AS(parse_gemm_shapes(""), UsageError);
  CHECK_THROWS_AS(parse_gemm_shapes("99999999999999999999x16x32"), UsageError);
  // Each dimension is bounded, and so is each matrix (2^31 elements).
  CHECK_THROWS_WITH(parse_gemm_shapes("2097152x16x32"), Catch::Contains("from 1 to"));
  CHECK_NOTHROW(parse_gemm_shapes("1048576x2048x32"));
  CHECK_THROWS_WITH(parse_gemm_shapes("1048576x4096x32"), Catch::Contains("2^31"));
}

TEST_CASE("name lists accept only known parts", "[options]") {
  constexpr std::array<std::string_view, 3> known = {"stream", "gemm", "integrity"};
  const auto parts = parse_name_list("gemm,stream,gemm", known, "--only");
  REQUIRE(parts.size() == 2);
  CHECK(parts[0] == "gemm");
  CHECK_THROWS_WITH(parse_name_list("gemm,gemv", known, "--only"),
                    Catch::Contains("unknown name 'gemv'"));
  CHECK_THROWS_AS(parse_name_list(",", known, "--only"), UsageError);
}

TEST_CASE("integer lists: range and multiple", "[options]") {
  const auto m = parse_int_list("1,8,64", 1, 64, 1, "--gemv-m");
  CHECK(m == std::vector<std::int64_t>{1, 8, 64});
  CHECK_THROWS_AS(parse_int_list("65", 1, 64, 1, "--gemv-m"), UsageError);
  CHECK_THROWS_AS(parse_int_list("0", 1, 64, 1, "--gemv-m"), UsageError);
  CHECK_THROWS_AS(parse_int_list("8a", 1, 64, 1, "--gemv-m"), UsageError);
  CHECK_NOTHROW(parse_int_list("96", 32, 4096, 32, "--int4-group"));
  CHECK_THROWS_WITH(parse_int_list("48", 32, 4096, 32, "--int4-group"),
                    Catch::Contains("multiple of 32"));
}

TEST_CASE("byte sizes use binary units and are bounded", "[options]") {
  CHECK(parse_byte_size("4096", "--integrity-sizes") == 4096);
  CHECK(parse_byte_size("4K", "x") == 4096);
  CHECK(parse_byte_size("4KiB", "x") == 4096);
  CHECK(parse_byte_size("64M", "x") == 64ull << 20);
  CHECK(parse_byte_size("1G", "x") == 1ull << 30);
  CHECK(parse_byte_size("3GiB", "x") == 3ull << 30);
  CHECK_THROWS_AS(parse_byte_size("1T", "x"), UsageError);
  CHECK_THROWS_AS(parse_byte_size("G", "x"), UsageError);
  CHECK_THROWS_AS(parse_byte_size("1.5G", "x"), UsageError);
  CHECK_THROWS_AS(parse_byte_size("999999999999999999G", "x"), UsageError);
  const auto sizes = parse_byte_sizes("4K,1M,1G", 4096, 1ull << 34, "x");
  CHECK(sizes == std::vector<std::uint64_t>{4096, 1ull << 20, 1ull << 30});
  CHECK_THROWS_AS(parse_byte_sizes("2K", 4096, 1ull << 34, "x"), UsageError);   // below 4 KiB
  CHECK_THROWS_AS(parse_byte_sizes("4098", 4096, 1ull << 34, "x"), UsageError); // not words
  CHECK_THROWS_AS(parse_byte_sizes("32G", 4096, 1ull << 34, "x"), UsageError);  // above the cap
}

TEST_CASE("model linears: NAME:NxK:COUNT with the kernels' divisibility", "[options]") {
  const auto l =
      parse_model_linears("q_proj:4096x4096:32,lm_head:128256x4096:1", "--model-linears");
  REQUIRE(l.size() == 2);
  CHECK(l[0].name == "q_proj");
  CHECK(l[1].n == 128256);
  CHECK(l[1].count == 1);
  CHECK_THROWS_AS(parse_model_linears("q_proj:4096x4100:32", "x"), UsageError); // K % 32
  CHECK_THROWS_AS(parse_model_linears("q_proj:4090x4096:32", "x"), UsageError); // N % 16
  CHECK_THROWS_AS(parse_model_linears("Q-proj:4096x4096:32", "x"), UsageError); // name charset
  CHECK_THROWS_AS(parse_model_linears("q_proj:4096x4096:0", "x"), UsageError);
  CHECK_THROWS_AS(parse_model_linears("q_proj:4096x4096", "x"), UsageError);
}
