#pragma once
/// Pictures as SVG, written directly: a small canvas, axes with "nice" ticks, and the two plots.
#include <string>
#include <vector>

#include "planner/report/report.h"

namespace planner {

namespace svg {

/// Escapes &, <, >, " and ' for XML text and attributes.
std::string escape(const std::string& text);

/// Round tick values (1, 2 or 5 x 10^k apart) covering [lo, hi], about `target` of them.
std::vector<double> nice_ticks(double lo, double hi, int target = 6);

/// "12", "2.5", "0.05": a tick label without trailing zeros.
std::string tick_label(double v);

/// An SVG document being drawn; coordinates in pixels, y down.
class Canvas {
 public:
  Canvas(double width, double height);
  void rect(double x, double y, double w, double h, const std::string& fill,
            const std::string& extra = "");
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1,
            const std::string& extra = "");
  void circle(double cx, double cy, double r, const std::string& fill,
              const std::string& extra = "");
  void polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke,
                double width, const std::string& extra = "");
  /// `anchor`: start, middle or end; `extra`: further attributes (e.g. transform).
  void text(double x, double y, const std::string& s, double size = 12,
            const std::string& anchor = "start", const std::string& extra = "");
  /// Markup the helpers lack (e.g. a <title> tooltip group); the caller escapes its text.
  void raw(const std::string& markup);
  /// The whole document: <svg xmlns=... width height viewBox> with a white background.
  std::string str() const;

 private:
  double width_, height_;
  std::string body_;
};

/// A linear mapping of a data rectangle onto a pixel rectangle, with its axes.
struct Axes {
  double left, top, right, bottom;    ///< pixel box of the plot area
  double x_min, x_max, y_min, y_max;  ///< data range
  double px(double x) const { return left + (x - x_min) / (x_max - x_min) * (right - left); }
  double py(double y) const { return bottom - (y - y_min) / (y_max - y_min) * (bottom - top); }
  /// Frame, grid lines, ticks with labels and the two axis titles.
  void draw(Canvas& c, const std::string& x_title, const std::string& y_title) const;
};

/// Sequential colours used for breakdown segments and series, colour-blind safe (Okabe-Ito).
const std::vector<std::string>& palette();

}  // namespace svg

/// `suggest --plot`: model TFLOP/s per GPU against memory per GPU for every feasible plan the
/// search ranked (r.feasible, the closed form), its Pareto front, the memory limit, the listed
/// plans (simulated) and the top plan marked.
std::string suggest_plot_svg(const RunContext& ctx, const SearchResult& r);

/// `estimate --plot`: a stacked bar of the time breakdown and a stacked bar of memory per GPU
/// by kind against the GPU's capacity.
std::string estimate_plot_svg(const RunContext& ctx, const Estimate& e);

}  // namespace planner
