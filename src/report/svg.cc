#include "planner/report/svg.h"

#include <cmath>

#include "planner/format.h"

namespace planner::svg {
namespace {

std::string num(double v) { return fmt("{:.1f}", v); }

}  // namespace

std::string escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, target);
  int exponent = static_cast<int>(std::floor(std::log10(raw)));
  double mantissa = 10;  // step = mantissa x 10^exponent, mantissa 1, 2 or 5
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * std::pow(10.0, exponent) * (1 + 1e-9)) {
      mantissa = m;
      break;
    }
  // k x mantissa / 10^-exponent rather than a running sum: 3 x 2 / 10 is 0.6, 0.2 + 0.2 + 0.2 not.
  const double scale = std::pow(10.0, std::abs(exponent));
  auto tick = [&](long k) { return exponent < 0 ? k * mantissa / scale : k * mantissa * scale; };
  const double step = tick(1);
  std::vector<double> ticks;
  for (long k = static_cast<long>(std::ceil(lo / step - 1e-9)); tick(k) <= hi + step * 1e-9; ++k)
    ticks.push_back(tick(k));
  return ticks;
}

std::string tick_label(double v) { return fmt("{:.6g}", v); }

Canvas::Canvas(double width, double height) : width_(width), height_(height) {}

void Canvas::rect(double x, double y, double w, double h, const std::string& fill,
                  const std::string& extra) {
  body_ += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(std::max(0.0, w)) +
           "\" height=\"" + num(std::max(0.0, h)) + "\" fill=\"" + fill + "\"" +
           (extra.empty() ? "" : " " + extra) + "/>\n";
}

void Canvas::line(double x1, double y1, double x2, double y2, const std::string& stroke,
                  double width, const std::string& extra) {
  body_ += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" +
           num(y2) + "\" stroke=\"" + stroke + "\" stroke-width=\"" + num(width) + "\"" +
           (extra.empty() ? "" : " " + extra) + "/>\n";
}

void Canvas::circle(double cx, double cy, double r, const std::string& fill,
                    const std::string& extra) {
  body_ += "<circle cx=\"" + num(cx) + "\" cy=\"" + num(cy) + "\" r=\"" + num(r) + "\" fill=\"" +
           fill + "\"" + (extra.empty() ? "" : " " + extra) + "/>\n";
}

void Canvas::polyline(const std::vector<std::pair<double, double>>& points,
                      const std::string& stroke, double width, const std::string& extra) {
  std::string pts;
  for (const auto& [x, y] : points) {
    if (!pts.empty()) pts += ' ';
    pts += num(x);
    pts += ',';
    pts += num(y);
  }
  body_ += "<polyline points=\"" + pts + "\" fill=\"none\" stroke=\"" + stroke +
           "\" stroke-width=\"" + num(width) + "\"" + (extra.empty() ? "" : " " + extra) + "/>\n";
}

void Canvas::text(double x, double y, const std::string& s, double size, const std::string& anchor,
                  const std::string& extra) {
  body_ += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + num(size) +
           "\" text-anchor=\"" + anchor + "\"" + (extra.empty() ? "" : " " + extra) + ">" +
           escape(s) + "</text>\n";
}

void Canvas::raw(const std::string& markup) { body_ += markup; }

std::string Canvas::str() const {
  const std::string w = num(width_), h = num(height_);
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w + "\" height=\"" + h +
         "\" viewBox=\"0 0 " + w + " " + h +
         "\" font-family=\"DejaVu Sans, Helvetica, Arial, "
         "sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n" +
         body_ + "</svg>\n";
}

void Axes::draw(Canvas& c, const std::string& x_title, const std::string& y_title) const {
  for (double t : nice_ticks(x_min, x_max)) {
    if (t < x_min || t > x_max) continue;
    c.line(px(t), top, px(t), bottom, "#e5e5e5");
    c.line(px(t), bottom, px(t), bottom + 5, "#333333");
    c.text(px(t), bottom + 18, tick_label(t), 11, "middle");
  }
  for (double t : nice_ticks(y_min, y_max)) {
    if (t < y_min || t > y_max) continue;
    c.line(left, py(t), right, py(t), "#e5e5e5");
    c.line(left - 5, py(t), left, py(t), "#333333");
    c.text(left - 8, py(t) + 4, tick_label(t), 11, "end");
  }
  c.rect(left, top, right - left, bottom - top, "none", "stroke=\"#333333\"");
  c.text((left + right) / 2, bottom + 38, x_title, 13, "middle");
  const std::string cy = num((top + bottom) / 2);
  c.text(0, 0, y_title, 13, "middle",
         "transform=\"translate(" + num(left - 48) + "," + cy + ") rotate(-90)\"");
}

const std::vector<std::string>& palette() {
  static const std::vector<std::string> colours = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                                   "#56B4E9", "#D55E00", "#F0E442", "#999999",
                                                   "#882255", "#44AA99"};
  return colours;
}

}  // namespace planner::svg
