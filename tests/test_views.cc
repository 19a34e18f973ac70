// Pictures and reports, rendered by the programs people view them with: the SVG plots through
// rsvg-convert (librsvg2-bin), the HTML report through headless Chromium. Each test is skipped,
// with a message, where its renderer is not installed (.ci/deps installs both).
#include <doctest/doctest.h>

#include <filesystem>

#include "cli_run.h"
#include "png_check.h"

using cli_run::Run;

namespace {

const std::string kInputs =
    "--model configs/models/gpt3-175b.yaml --cluster hw_profiles/dgx-a100-80gb.yaml";
const std::string kPlan = "tp=8,pp=8,dp=16,mbs=1,gbs=1536,vpp=3,zero=1,recompute=selective,sp=1";

/// Renders `svg` to PNG and checks it is a picture: the expected size, many colours, and a
/// share of the pixels that are not background.
void check_rendered(const std::string& svg, int width, int height) {
  const std::string png = svg + ".png";
  const Run r = cli_run::shell("rsvg-convert --format=png -o " + png + " " + svg);
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  const png_check::Image img = png_check::decode(cli_run::slurp(png));
  REQUIRE_MESSAGE(img.error.empty(), img.error);
  CHECK(img.width == width);
  CHECK(img.height == height);
  const png_check::Stats s = png_check::stats(img);
  CHECK(s.colours > 16);  // text, markers, bars in several colours
  CHECK(s.ink > 0.02);    // not blank
  CHECK(s.ink < 0.9);     // not one flood of colour
}

std::string chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
    if (cli_run::have(name)) return name;
  return "";
}

/// Chromium's headless flags for a container: no sandbox, GPU, network or first-run work.
std::string headless(const std::string& browser, const std::string& dir) {
  return "timeout 120 " + browser +
         " --headless --no-sandbox --disable-gpu --disable-background-networking "
         "--disable-component-update --disable-sync --no-first-run --user-data-dir=" +
         dir + "/profile";
}

/// Opens the report in headless Chromium: the DOM it builds holds the plan table, both kinds of
/// plots and the launch commands, and a screenshot of it is not blank.
void check_report(const std::string& html, const std::string& dir, const std::string& plan_string) {
  const std::string page = cli_run::slurp(html);
  CHECK(page.find("<link") == std::string::npos);  // self-contained: no external resources
  CHECK(page.find("<script") == std::string::npos);
  CHECK(page.find(" src=") == std::string::npos);
  const std::string browser = chromium();
  if (browser.empty()) {
    MESSAGE(
        "chromium is not installed: the report's rendering is not checked (.ci/deps installs it)");
    return;
  }
  const Run dom =
      cli_run::shell(headless(browser, dir) + " --dump-dom file://" + html + " 2>/dev/null");
  REQUIRE(dom.rc == 0);
  CHECK(dom.out.find("<table id=\"plans\">") != std::string::npos);
  CHECK(dom.out.find(plan_string) != std::string::npos);
  CHECK(dom.out.find("<svg") != std::string::npos);
  CHECK(dom.out.find("id=\"diagnostics\"") != std::string::npos);
  CHECK(dom.out.find("planner emit --model configs/models/gpt3-175b.yaml") != std::string::npos);
  const Run shot =
      cli_run::shell(headless(browser, dir) + " --window-size=1200,1600 --screenshot=" + dir +
                     "/shot.png file://" + html + " 2>/dev/null");
  REQUIRE(shot.rc == 0);
  const png_check::Image img = png_check::decode(cli_run::slurp(dir + "/shot.png"));
  REQUIRE_MESSAGE(img.error.empty(), img.error);
  CHECK(img.width == 1200);
  CHECK(png_check::stats(img).colours > 16);
  CHECK(png_check::stats(img).ink > 0.02);
}

}  // namespace

TEST_CASE("suggest --plot and estimate --plot render to pictures") {
  const std::string dir = cli_run::scratch("plots");
  const Run s =
      cli_run::planner("suggest " + kInputs + " --gpus 1024 --global-batch 1536 --top 5 --plot " +
                       dir + "/suggest.svg");
  REQUIRE(s.rc == 0);
  const Run e = cli_run::planner("estimate " + kInputs + " --plan \"" + kPlan + "\" --plot " + dir +
                                 "/estimate.svg");
  REQUIRE(e.rc == 0);
  const std::string svg = cli_run::slurp(dir + "/suggest.svg");
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find("Pareto front") != std::string::npos);
  CHECK(svg.find("memory per GPU (GiB)") != std::string::npos);
  CHECK(svg.find("top plan (rank 1)") != std::string::npos);
  CHECK(cli_run::slurp(dir + "/estimate.svg").find("capacity 80.0 GiB") != std::string::npos);
  CHECK(!std::filesystem::exists(dir + "/suggest.svg.tmp"));  // written atomically
  if (!cli_run::have("rsvg-convert")) {
    MESSAGE(
        "rsvg-convert is not installed: the plots' rendering is not checked (.ci/deps installs "
        "librsvg2-bin)");
    return;
  }
  check_rendered(dir + "/suggest.svg", 820, 540);
  check_rendered(dir + "/estimate.svg", 820, 345);
  std::filesystem::remove_all(dir);
}

TEST_CASE("suggest --report and estimate --report render in a browser") {
  const std::string dir = cli_run::scratch("report");
  const Run s = cli_run::planner("suggest " + kInputs +
                                 " --gpus 1024 --global-batch 1536 --top 5 "
                                 "--train-tokens 300B --report " +
                                 dir + "/suggest.html");
  REQUIRE(s.rc == 0);
  const size_t at = s.out.find("--plan \"tp=");
  REQUIRE(at != std::string::npos);
  const std::string top = s.out.substr(at + 8, s.out.find('"', at + 8) - at - 8);
  const std::string page = cli_run::slurp(dir + "/suggest.html");
  CHECK(page.find("--framework megatron --out launch-megatron") != std::string::npos);
  CHECK(page.find("<h3>deepspeed</h3>") != std::string::npos);
  check_report(dir + "/suggest.html", dir, top);
  const Run e = cli_run::planner("estimate " + kInputs + " --plan \"" + kPlan + "\" --report " +
                                 dir + "/estimate.html");
  REQUIRE(e.rc == 0);
  check_report(dir + "/estimate.html", dir, "tp=8,pp=8,dp=16,cp=1,vpp=3,mbs=1,gbs=1536");
  std::filesystem::remove_all(dir);
}

TEST_CASE("a report that cannot be written is an input error") {
  const Run r = cli_run::planner("estimate " + kInputs + " --plan \"" + kPlan +
                                 "\" --report /no/such/dir/r.html");
  CHECK(r.rc == 2);
  CHECK(
      r.out.find("planner: error: /no/such/dir/r.html: cannot write: No such file or directory") !=
      std::string::npos);
}
