#pragma once
// A minimal PNG reader (8-bit grey, RGB, grey+alpha and RGBA, not interlaced: what rsvg-convert
// and Chromium write), so that tests can tell a rendered picture from a blank one.
#include <cstdint>
#include <string>
#include <vector>

namespace png_check {

struct Image {
  int width = 0, height = 0;
  std::vector<uint32_t> rgba;  ///< one 0xRRGGBBAA per pixel, row by row
  std::string error;           ///< why it could not be read; empty on success
};

Image decode(const std::string& bytes);

/// Distinct colours, and the share of pixels that are not the most common colour (the background).
struct Stats {
  size_t colours = 0;
  double ink = 0;
};
Stats stats(const Image& image);

}  // namespace png_check
