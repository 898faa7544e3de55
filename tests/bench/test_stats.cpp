// SPDX-License-Identifier: MIT
#include "halo_bench/stats.hpp"

#include <catch2/catch.hpp>

#include <limits>
#include <stdexcept>
#include <vector>

using namespace halo_bench;

TEST_CASE("summary of an odd number of samples", "[stats]") {
  const std::vector<double> ms = {3.0, 1.0, 2.0, 10.0, 4.0};
  const Summary s = summarize(ms);
  CHECK(s.count == 5);
  CHECK(s.median == 3.0);
  CHECK(s.min == 1.0);
  CHECK(s.max == 10.0);
  CHECK(s.mean == 4.0);
  CHECK(s.stddev == Approx(3.535533905932738)); // sqrt(50 / 4)
  CHECK(s.spread == 3.0);                       // (10 - 1) / 3
}

TEST_CASE("summary of an even number of samples and a single sample", "[stats]") {
  const Summary even = summarize(std::vector<double>{4.0, 1.0, 3.0, 2.0});
  CHECK(even.median == 2.5);
  const Summary one = summarize(std::vector<double>{7.0});
  CHECK(one.median == 7.0);
  CHECK(one.stddev == 0.0);
  CHECK(one.spread == 0.0);
}

TEST_CASE("summary rejects empty input and NaN", "[stats]") {
  CHECK_THROWS_AS(summarize(std::vector<double>{}), std::invalid_argument);
  CHECK_THROWS_AS(summarize(std::vector<double>{1.0, std::numeric_limits<double>::quiet_NaN()}),
                  std::invalid_argument);
}

TEST_CASE("rates from times", "[stats]") {
  // 1 GiB in 4 ms = 268.4 GB/s.
  CHECK(per_second_giga(1073741824.0, 4.0) == Approx(268.435456));
  // 2*4096^3 flop in 2.5 ms = 54975.6 GFLOP/s.
  CHECK(per_second_giga(2.0 * 4096.0 * 4096.0 * 4096.0, 2.5) == Approx(54975.581388));
  CHECK(per_second_giga(1.0, 0.0) == 0.0);
  CHECK(per_second_giga(1.0, -1.0) == 0.0);
}
