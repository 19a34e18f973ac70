#include "png_check.h"

#include <zlib.h>

#include <cstdlib>
#include <unordered_map>

namespace png_check {
namespace {

uint32_t be32(const std::string& b, size_t at) {
  return (uint32_t(uint8_t(b[at])) << 24) | (uint32_t(uint8_t(b[at + 1])) << 16) |
         (uint32_t(uint8_t(b[at + 2])) << 8) | uint32_t(uint8_t(b[at + 3]));
}

int paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/// Undoes the per-row filters (PNG spec section 9) in place; returns false on a bad filter type.
bool unfilter(std::vector<uint8_t>& data, int width, int height, int bpp,
              std::vector<uint8_t>& out) {
  const size_t stride = size_t(width) * bpp;
  out.assign(stride * height, 0);
  for (int y = 0; y < height; ++y) {
    const uint8_t type = data[y * (stride + 1)];
    const uint8_t* in = &data[y * (stride + 1) + 1];
    uint8_t* row = &out[y * stride];
    const uint8_t* up = y > 0 ? &out[(y - 1) * stride] : nullptr;
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= size_t(bpp) ? row[x - bpp] : 0, b = up ? up[x] : 0;
      const int c = up && x >= size_t(bpp) ? up[x - bpp] : 0;
      int v = in[x];
      switch (type) {
        case 0:
          break;
        case 1:
          v += a;
          break;
        case 2:
          v += b;
          break;
        case 3:
          v += (a + b) / 2;
          break;
        case 4:
          v += paeth(a, b, c);
          break;
        default:
          return false;
      }
      row[x] = uint8_t(v);
    }
  }
  return true;
}

}  // namespace

Image decode(const std::string& b) {
  Image img;
  auto fail = [&](const std::string& why) {
    img.error = why;
    return img;
  };
  if (b.size() < 33 || b.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return fail("not a PNG");
  int depth = 0, colour = 0, interlace = 0;
  std::string idat;
  for (size_t at = 8; at + 8 <= b.size();) {
    const uint32_t len = be32(b, at);
    const std::string type = b.substr(at + 4, 4);
    if (at + 12 + len > b.size()) return fail("truncated chunk " + type);
    if (type == "IHDR") {
      img.width = int(be32(b, at + 8)), img.height = int(be32(b, at + 12));
      depth = uint8_t(b[at + 16]), colour = uint8_t(b[at + 17]), interlace = uint8_t(b[at + 20]);
    } else if (type == "IDAT") {
      idat += b.substr(at + 8, len);
    }
    at += 12 + len;
  }
  const int channels = colour == 0 ? 1 : colour == 2 ? 3 : colour == 4 ? 2 : colour == 6 ? 4 : 0;
  if (depth != 8 || channels == 0 || interlace != 0 || img.width <= 0 || img.height <= 0)
    return fail("unsupported PNG (8-bit, not interlaced, no palette only)");
  std::vector<uint8_t> raw((size_t(img.width) * channels + 1) * img.height);
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) !=
          Z_OK ||
      raw_len != raw.size())
    return fail("bad image data");
  std::vector<uint8_t> px;
  if (!unfilter(raw, img.width, img.height, channels, px)) return fail("bad filter");
  for (size_t i = 0; i < px.size(); i += channels) {
    const uint8_t* p = &px[i];
    const uint32_t r = p[0], g = channels >= 3 ? p[1] : p[0], bl = channels >= 3 ? p[2] : p[0];
    const uint32_t a = channels == 4 ? p[3] : channels == 2 ? p[1] : 255;
    img.rgba.push_back(r << 24 | g << 16 | bl << 8 | a);
  }
  return img;
}

Stats stats(const Image& image) {
  std::unordered_map<uint32_t, size_t> count;
  for (uint32_t p : image.rgba) ++count[p];
  size_t most = 0;
  for (const auto& [colour, n] : count) most = std::max(most, n);
  Stats s;
  s.colours = count.size();
  s.ink = image.rgba.empty() ? 0 : 1.0 - double(most) / image.rgba.size();
  return s;
}

}  // namespace png_check
