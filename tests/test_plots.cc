// The plot points a search keeps, and the SVG helpers.
#include <doctest/doctest.h>

#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"
#include "planner/plot_sample.h"
#include "planner/report/svg.h"
#include "planner/search.h"

using namespace planner;

TEST_CASE("PlotSample keeps every point up to its capacity, then every 2nd, 4th, ...") {
  PlotSample s(4);
  for (int i = 0; i < 4; ++i) s.add(i, i);
  CHECK(s.points().size() == 4);
  s.add(4, 4);  // 5 > 4: keep indices 0, 2, 4; the stride is now 2
  REQUIRE(s.points().size() == 3);
  CHECK(s.points()[1] == PlotPoint{2, 2});
  for (int i = 5; i < 9; ++i) s.add(i, i);  // 6 and 8 join (even indices): 0, 2, 4, 6, 8 -> 0, 4, 8
  CHECK(s.points().size() == 3);
  CHECK(s.points()[2] == PlotPoint{8, 8});
  CHECK(s.seen() == 9);
  PlotSample none;
  none.add(1, 1);
  CHECK(!none.enabled());
  CHECK(none.points().empty());
  CHECK(none.front().empty());
}

TEST_CASE("the Pareto front keeps exactly the points no other beats on both memory and speed") {
  PlotSample s(1);  // the front is exact whatever the capacity
  for (PlotPoint p :
       {PlotPoint{10, 5}, {20, 4}, {5, 1}, {30, 9}, {10, 6}, {25, 9}, {40, 9}, {12, 7}})
    s.add(p[0], p[1]);
  // (20,4) is beaten by (10,5); (10,5) by (10,6); (30,9) and (40,9) by (25,9).
  CHECK(s.front() == std::vector<PlotPoint>{{5, 1}, {10, 6}, {12, 7}, {25, 9}});
}

TEST_CASE("a search keeps one point per ranked plan when asked") {
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-1.3b.yaml");
  const ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-a100-80gb.yaml");
  SearchOptions o;
  o.gpus = {8};
  o.global_batch = 64;
  o.plot_points = 1 << 16;
  const SearchResult r = search(m, c, default_knobs(m, c, 8), o);
  CHECK(r.feasible.seen() == r.rejections[int(Rejection::none)]);
  CHECK(r.feasible.points().size() == size_t(r.feasible.seen()));
  REQUIRE(!r.feasible.front().empty());
  CHECK(r.feasible.front().back()[1] >= r.feasible.front().front()[1]);
  o.plot_points = 0;
  CHECK(search(m, c, default_knobs(m, c, 8), o).feasible.seen() == 0);
}

TEST_CASE("svg helpers: nice ticks, labels and escaping") {
  CHECK(svg::nice_ticks(0, 84) == std::vector<double>{0, 20, 40, 60, 80});
  CHECK(svg::nice_ticks(0, 178) == std::vector<double>{0, 50, 100, 150});
  CHECK(svg::nice_ticks(0, 0.9) == std::vector<double>{0, 0.2, 0.4, 0.6, 0.8});
  CHECK(svg::tick_label(0.6000000001) == "0.6");
  CHECK(svg::escape("a<b & \"c\"") == "a&lt;b &amp; &quot;c&quot;");
}
