#include <doctest/doctest.h>

#include "planner/cost/pipeline.h"

using namespace planner;

TEST_CASE("bubble fraction is (p-1)/m, divided by v when interleaved") {
  CHECK(bubble_fraction(Schedule::one_f_one_b, 8, 64, 1) == doctest::Approx(7.0 / 64));
  CHECK(bubble_fraction(Schedule::gpipe, 4, 4, 1) == doctest::Approx(0.75));
  CHECK(bubble_fraction(Schedule::interleaved, 8, 64, 4) == doctest::Approx(7.0 / 256));
  CHECK(bubble_fraction(Schedule::one_f_one_b, 1, 16, 1) == 0.0);
}

TEST_CASE("uniform stages take (m + p - 1) t, interleaved m t + (p-1) t / v") {
  const std::vector<double> four(4, 2.0);  // p = 4 stages, 2 s per micro-batch each
  // (m + p - 1) t = (8 + 3) x 2 = 22 s; the bubble 6 s over the ideal 16 s is (p-1)/m = 3/8.
  CHECK(pipeline_time_s(Schedule::one_f_one_b, 8, 1, four) == doctest::Approx(22.0));
  CHECK((22.0 - 16.0) / 16.0 == doctest::Approx(bubble_fraction(Schedule::one_f_one_b, 4, 8, 1)));
  // Interleaved with v = 2: 8 x 2 + 3 x 2 / 2 = 19 s.
  CHECK(pipeline_time_s(Schedule::interleaved, 8, 2, four) == doctest::Approx(19.0));
}

TEST_CASE("uneven stages: the slowest sets the pace, the others fill and drain") {
  // t = {3, 2, 2, 4}: (m - 1) t_max + sum = 7 x 4 + 11 = 39 s for m = 8.
  CHECK(pipeline_time_s(Schedule::one_f_one_b, 8, 1, {3, 2, 2, 4}) == doctest::Approx(39.0));
  CHECK(pipeline_time_from(Schedule::one_f_one_b, 8, 1, 4, 11) == doctest::Approx(39.0));
}
