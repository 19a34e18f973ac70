#include "calibrate/validate_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "calibrate/validate_common.h"

namespace planner::calibrate::ref {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// Key j is hidden from query i (of sq queries over sk keys, bottom-right aligned).
bool masked(int i, int j, int sq, int sk, bool causal) { return causal && j > i + (sk - sq); }

}  // namespace

float bf16_to_float(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t float_to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if (std::isnan(x)) return 0x7FC0;
  u += 0x7FFF + ((u >> 16) & 1);  // round to nearest, ties to even
  return uint16_t(u >> 16);
}

float fp16_to_float(uint16_t bits) {
  const int sign = bits >> 15, exp = (bits >> 10) & 0x1F, mant = bits & 0x3FF;
  float v;
  if (exp == 0)
    v = std::ldexp(float(mant), -24);  // subnormal: mant x 2^-14 / 2^10
  else if (exp == 31)
    v = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else
    v = std::ldexp(float(mant | 0x400), exp - 25);
  return sign ? -v : v;
}

uint16_t float_to_fp16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000);
  if (std::isnan(x)) return 0x7E00;
  const float a = std::fabs(x);
  if (a >= 65520.0f) return sign | 0x7C00;  // rounds past the largest half (65504)
  if (a < 6.103515625e-05f) {               // subnormal: a multiple of 2^-24, rounded to even
    const float q = std::nearbyint(a * 16777216.0f);
    return sign | uint16_t(q);
  }
  const uint32_t mant = u & 0x7FFFFF;
  const int exp = int((u >> 23) & 0xFF) - 127 + 15;
  uint32_t h = (uint32_t(exp) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // may carry into the exponent: fine
  return sign | uint16_t(h);
}

float e4m3_to_float(uint8_t bits) {
  const int sign = bits >> 7, exp = (bits >> 3) & 0xF, mant = bits & 0x7;
  float v;
  if (exp == 0xF && mant == 0x7)
    v = std::numeric_limits<float>::quiet_NaN();
  else if (exp == 0)
    v = std::ldexp(float(mant), -9);  // subnormal: mant / 8 x 2^-6
  else
    v = std::ldexp(float(mant | 0x8), exp - 10);
  return sign ? -v : v;
}

double relative_error(const Vec& got, const Vec& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(want[i]))
      return std::numeric_limits<double>::infinity();
    diff = std::max(diff, double(std::fabs(got[i] - want[i])));
    scale = std::max(scale, double(std::fabs(want[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

Vec gemm(char ta, char tb, int m, int n, int k, int batch, const Vec& a, const Vec& b) {
  Vec c(size_t(m) * n * batch, 0.0f);
  const size_t sa = size_t(m) * k, sb = size_t(k) * n, sc = size_t(m) * n;
  for (int z = 0; z < batch; ++z)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double acc = 0;
        for (int p = 0; p < k; ++p) {
          const float x = ta == 'T' ? a[z * sa + size_t(i) * k + p] : a[z * sa + size_t(p) * m + i];
          const float y = tb == 'T' ? b[z * sb + size_t(p) * n + j] : b[z * sb + size_t(j) * k + p];
          acc += double(x) * y;
        }
        c[z * sc + size_t(j) * m + i] = float(acc);
      }
  return c;
}

Vec softmax_forward(const Vec& x, int rows, int cols, int sq, float scale, bool causal) {
  Vec y(x.size(), 0.0f);
  for (int r = 0; r < rows; ++r) {
    const int i = r % sq;
    double mx = kNegInf, sum = 0;
    for (int j = 0; j < cols; ++j)
      if (!masked(i, j, sq, cols, causal))
        mx = std::max(mx, double(scale) * x[size_t(r) * cols + j]);
    if (mx == kNegInf) continue;  // every key hidden: the row stays 0
    for (int j = 0; j < cols; ++j)
      if (!masked(i, j, sq, cols, causal)) sum += std::exp(scale * x[size_t(r) * cols + j] - mx);
    for (int j = 0; j < cols; ++j)
      if (!masked(i, j, sq, cols, causal))
        y[size_t(r) * cols + j] = float(std::exp(scale * x[size_t(r) * cols + j] - mx) / sum);
  }
  return y;
}

Vec softmax_backward(const Vec& y, const Vec& dy, int rows, int cols, float scale) {
  Vec dx(y.size());
  for (int r = 0; r < rows; ++r) {
    double dot = 0;
    for (int j = 0; j < cols; ++j)
      dot += double(y[size_t(r) * cols + j]) * dy[size_t(r) * cols + j];
    for (int j = 0; j < cols; ++j) {
      const size_t e = size_t(r) * cols + j;
      dx[e] = float(scale * y[e] * (dy[e] - dot));
    }
  }
  return dx;
}

Dropped dropout_forward(const Vec& x, float p, uint64_t seed) {
  Dropped d{Vec(x.size()), std::vector<uint8_t>(x.size())};
  for (size_t i = 0; i < x.size(); ++i) {
    d.mask[i] = dropout_keep(seed, i, p);
    d.out[i] = d.mask[i] ? x[i] / (1.0f - p) : 0.0f;
  }
  return d;
}

Vec dropout_backward(const Vec& dy, const std::vector<uint8_t>& mask, float p) {
  Vec dx(dy.size());
  for (size_t i = 0; i < dy.size(); ++i) dx[i] = mask[i] ? dy[i] / (1.0f - p) : 0.0f;
  return dx;
}

namespace {

/// Scaled scores of one head: s[i][j] = q_i . k_j / sqrt(d), -inf where masked.
std::vector<double> head_scores(const Vec& q, const Vec& k, int h, int sq, int sk, int d,
                                bool causal) {
  std::vector<double> s(size_t(sq) * sk);
  const double scale = 1.0 / std::sqrt(double(d));
  for (int i = 0; i < sq; ++i)
    for (int j = 0; j < sk; ++j) {
      double acc = 0;
      for (int c = 0; c < d; ++c)
        acc += double(q[(size_t(h) * sq + i) * d + c]) * k[(size_t(h) * sk + j) * d + c];
      s[size_t(i) * sk + j] = masked(i, j, sq, sk, causal) ? -INFINITY : acc * scale;
    }
  return s;
}

/// Softmax of each row of `s` in place; returns each row's log-sum-exp.
std::vector<double> softmax_rows(std::vector<double>& s, int sq, int sk) {
  std::vector<double> lse(sq);
  for (int i = 0; i < sq; ++i) {
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < sk; ++j) mx = std::max(mx, s[size_t(i) * sk + j]);
    for (int j = 0; j < sk; ++j) sum += std::exp(s[size_t(i) * sk + j] - mx);
    for (int j = 0; j < sk; ++j) s[size_t(i) * sk + j] = std::exp(s[size_t(i) * sk + j] - mx) / sum;
    lse[i] = mx + std::log(sum);
  }
  return lse;
}

}  // namespace

Attention attention_forward(const Vec& q, const Vec& k, const Vec& v, int bh, int sq, int sk, int d,
                            bool causal) {
  Attention a{Vec(size_t(bh) * sq * d), Vec(size_t(bh) * sq)};
  for (int h = 0; h < bh; ++h) {
    std::vector<double> p = head_scores(q, k, h, sq, sk, d, causal);
    const std::vector<double> lse = softmax_rows(p, sq, sk);
    for (int i = 0; i < sq; ++i) {
      a.lse[size_t(h) * sq + i] = float(lse[i]);
      for (int c = 0; c < d; ++c) {
        double acc = 0;
        for (int j = 0; j < sk; ++j) acc += p[size_t(i) * sk + j] * v[(size_t(h) * sk + j) * d + c];
        a.o[(size_t(h) * sq + i) * d + c] = float(acc);
      }
    }
  }
  return a;
}

Attention attention_forward_tiled(const Vec& q, const Vec& k, const Vec& v, int bh, int sq, int sk,
                                  int d, bool causal, int bc) {
  Attention a{Vec(size_t(bh) * sq * d), Vec(size_t(bh) * sq)};
  const float scale = 1.0f / std::sqrt(float(d));
  std::vector<float> acc(d);
  for (int h = 0; h < bh; ++h)
    for (int i = 0; i < sq; ++i) {
      float m = kNegInf, l = 0;
      std::fill(acc.begin(), acc.end(), 0.0f);
      const int last_key = causal ? std::min(sk - 1, i + (sk - sq)) : sk - 1;
      for (int j0 = 0; j0 <= last_key; j0 += bc) {  // tiles past the diagonal are skipped
        const int j1 = std::min(j0 + bc, sk);
        std::vector<float> s(size_t(j1 - j0), kNegInf);
        float tile_max = kNegInf;
        for (int j = j0; j < j1; ++j) {
          if (masked(i, j, sq, sk, causal)) continue;
          float dot = 0;
          for (int c = 0; c < d; ++c)
            dot += q[(size_t(h) * sq + i) * d + c] * k[(size_t(h) * sk + j) * d + c];
          s[j - j0] = dot * scale;
          tile_max = std::max(tile_max, s[j - j0]);
        }
        const float m_new = std::max(m, tile_max);
        const float alpha = m == kNegInf ? 0.0f : std::exp(m - m_new);
        l *= alpha;
        for (float& x : acc) x *= alpha;
        for (int j = j0; j < j1; ++j) {
          const float p = s[j - j0] == kNegInf ? 0.0f : std::exp(s[j - j0] - m_new);
          l += p;
          for (int c = 0; c < d; ++c) acc[c] += p * v[(size_t(h) * sk + j) * d + c];
        }
        m = m_new;
      }
      for (int c = 0; c < d; ++c) a.o[(size_t(h) * sq + i) * d + c] = acc[c] / l;
      a.lse[size_t(h) * sq + i] = m + std::log(l);
    }
  return a;
}

AttentionGrads attention_backward(const Vec& q, const Vec& k, const Vec& v, const Vec& dout, int bh,
                                  int sq, int sk, int d, bool causal) {
  AttentionGrads g{Vec(q.size(), 0.0f), Vec(k.size(), 0.0f), Vec(v.size(), 0.0f)};
  const double scale = 1.0 / std::sqrt(double(d));
  for (int h = 0; h < bh; ++h) {
    std::vector<double> p = head_scores(q, k, h, sq, sk, d, causal);
    softmax_rows(p, sq, sk);
    const auto Q = [&](int i, int c) { return double(q[(size_t(h) * sq + i) * d + c]); };
    const auto K = [&](int j, int c) { return double(k[(size_t(h) * sk + j) * d + c]); };
    const auto V = [&](int j, int c) { return double(v[(size_t(h) * sk + j) * d + c]); };
    const auto dO = [&](int i, int c) { return double(dout[(size_t(h) * sq + i) * d + c]); };
    for (int i = 0; i < sq; ++i) {
      std::vector<double> dp(sk);
      double dot = 0;  // sum_j P dP = sum_c O dO
      for (int j = 0; j < sk; ++j) {
        double acc = 0;
        for (int c = 0; c < d; ++c) acc += dO(i, c) * V(j, c);
        dp[j] = acc;
        dot += p[size_t(i) * sk + j] * acc;
      }
      for (int j = 0; j < sk; ++j) {
        const double pij = p[size_t(i) * sk + j], ds = pij * (dp[j] - dot);
        for (int c = 0; c < d; ++c) {
          g.dv[(size_t(h) * sk + j) * d + c] += float(pij * dO(i, c));
          g.dq[(size_t(h) * sq + i) * d + c] += float(scale * ds * K(j, c));
          g.dk[(size_t(h) * sk + j) * d + c] += float(scale * ds * Q(i, c));
        }
      }
    }
  }
  return g;
}

AttentionGrads attention_backward_tiled(const Vec& q, const Vec& k, const Vec& v, const Vec& dout,
                                        int bh, int sq, int sk, int d, bool causal, int br,
                                        int bc) {
  const Attention fwd = attention_forward(q, k, v, bh, sq, sk, d, causal);
  AttentionGrads g{Vec(q.size(), 0.0f), Vec(k.size(), 0.0f), Vec(v.size(), 0.0f)};
  const float scale = 1.0f / std::sqrt(float(d));
  const auto at = [d](const Vec& x, int h, int rows, int r) {
    return &x[(size_t(h) * rows + r) * d];
  };
  const auto dotd = [d](const float* a, const float* b) {
    float s = 0;
    for (int c = 0; c < d; ++c) s += a[c] * b[c];
    return s;
  };
  for (int h = 0; h < bh; ++h)
    for (int j0 = 0; j0 < sk; j0 += bc) {
      const int first_q = causal ? std::max(0, j0 - (sk - sq)) : 0;
      for (int i0 = first_q / br * br; i0 < sq; i0 += br)
        for (int j = j0; j < std::min(j0 + bc, sk); ++j)
          for (int i = i0; i < std::min(i0 + br, sq); ++i) {
            if (masked(i, j, sq, sk, causal)) continue;
            const float p = std::exp(dotd(at(q, h, sq, i), at(k, h, sk, j)) * scale -
                                     fwd.lse[size_t(h) * sq + i]);
            const float dp = dotd(at(dout, h, sq, i), at(v, h, sk, j));
            const float ds = p * (dp - dotd(at(dout, h, sq, i), at(fwd.o, h, sq, i)));
            for (int c = 0; c < d; ++c) {
              g.dv[(size_t(h) * sk + j) * d + c] += p * at(dout, h, sq, i)[c];
              g.dk[(size_t(h) * sk + j) * d + c] += scale * ds * at(q, h, sq, i)[c];
              g.dq[(size_t(h) * sq + i) * d + c] += scale * ds * at(k, h, sk, j)[c];
            }
          }
    }
  return g;
}

Norm norm_forward(const Vec& x, const Vec& gamma, const Vec& beta, int rows, int h, bool rms) {
  Norm n{Vec(x.size()), Vec(rows, 0.0f), Vec(rows)};
  for (int r = 0; r < rows; ++r) {
    const float* row = &x[size_t(r) * h];
    double mean = 0, var = 0;
    if (!rms) {
      for (int c = 0; c < h; ++c) mean += row[c];
      mean /= h;
    }
    for (int c = 0; c < h; ++c) var += (row[c] - mean) * (row[c] - mean);
    const double rstd = 1.0 / std::sqrt(var / h + kNormEps);
    n.mean[r] = float(mean), n.rstd[r] = float(rstd);
    for (int c = 0; c < h; ++c)
      n.y[size_t(r) * h + c] = float((row[c] - mean) * rstd * gamma[c] + (rms ? 0.0f : beta[c]));
  }
  return n;
}

NormGrads norm_backward(const Vec& x, const Vec& gamma, const Vec& dy, int rows, int h, bool rms) {
  const Norm n = norm_forward(x, gamma, Vec(h, 0.0f), rows, h, rms);
  NormGrads g{Vec(x.size()), Vec(h, 0.0f), Vec(h, 0.0f)};
  for (int r = 0; r < rows; ++r) {
    double sum_g = 0, sum_gx = 0;  // over the row: g = dy * gamma, against 1 and xhat
    for (int c = 0; c < h; ++c) {
      const size_t e = size_t(r) * h + c;
      const double xhat = (x[e] - n.mean[r]) * n.rstd[r], gc = double(dy[e]) * gamma[c];
      sum_g += gc, sum_gx += gc * xhat;
      g.dgamma[c] += float(dy[e] * xhat);
      g.dbeta[c] += dy[e];
    }
    for (int c = 0; c < h; ++c) {
      const size_t e = size_t(r) * h + c;
      const double xhat = (x[e] - n.mean[r]) * n.rstd[r], gc = double(dy[e]) * gamma[c];
      g.dx[e] = float(n.rstd[r] * (gc - (rms ? 0.0 : sum_g / h) - xhat * sum_gx / h));
    }
  }
  if (rms) std::fill(g.dbeta.begin(), g.dbeta.end(), 0.0f);
  return g;
}

Dropped bias_dropout_add(const Vec& a, const Vec& bias, const Vec& residual, int rows, int h,
                         float p, uint64_t seed) {
  Dropped d{Vec(a.size()), std::vector<uint8_t>(a.size())};
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < h; ++c) {
      const size_t e = size_t(r) * h + c;
      d.mask[e] = dropout_keep(seed, e, p);
      d.out[e] = residual[e] + (d.mask[e] ? (a[e] + bias[c]) / (1.0f - p) : 0.0f);
    }
  return d;
}

Vec bias_gelu_forward(const Vec& x, const Vec& bias, int rows, int cols) {
  Vec y(x.size());
  for (size_t e = 0; e < size_t(rows) * cols; ++e) y[e] = gelu(x[e] + bias[e % cols]);
  return y;
}

Vec bias_gelu_backward(const Vec& x, const Vec& bias, const Vec& dy, int rows, int cols) {
  Vec dx(x.size());
  for (size_t e = 0; e < size_t(rows) * cols; ++e) dx[e] = dy[e] * gelu_grad(x[e] + bias[e % cols]);
  return dx;
}

Vec swiglu_forward(const Vec& x, int rows, int f) {
  Vec y(size_t(rows) * f);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < f; ++c)
      y[size_t(r) * f + c] = silu(x[size_t(r) * 2 * f + c]) * x[size_t(r) * 2 * f + f + c];
  return y;
}

Vec swiglu_backward(const Vec& x, const Vec& dy, int rows, int f) {
  Vec dx(x.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < f; ++c) {
      const float a = x[size_t(r) * 2 * f + c], b = x[size_t(r) * 2 * f + f + c];
      const float g = dy[size_t(r) * f + c];
      dx[size_t(r) * 2 * f + c] = g * b * silu_grad(a);
      dx[size_t(r) * 2 * f + f + c] = g * silu(a);
    }
  return dx;
}

Routing router_forward(const Vec& logits, int tokens, int experts, int k) {
  Routing r;
  r.probs.resize(size_t(tokens) * experts);
  r.index.resize(size_t(tokens) * k);
  r.weight.resize(size_t(tokens) * k);
  for (int t = 0; t < tokens; ++t) {
    const float* x = &logits[size_t(t) * experts];
    float* p = &r.probs[size_t(t) * experts];
    const float top = *std::max_element(x, x + experts);
    double sum = 0;
    for (int e = 0; e < experts; ++e) sum += std::exp(double(x[e]) - top);
    for (int e = 0; e < experts; ++e) p[e] = float(std::exp(double(x[e]) - top) / sum);
    std::vector<bool> taken(size_t(experts), false);
    for (int j = 0; j < k; ++j) {
      int best = -1;
      for (int e = 0; e < experts; ++e)
        if (!taken[size_t(e)] && (best < 0 || p[e] > p[best])) best = e;
      taken[size_t(best)] = true;
      r.index[size_t(t) * k + j] = best;
      r.weight[size_t(t) * k + j] = p[best];
    }
  }
  return r;
}

Vec router_backward(const Routing& r, const Vec& dweight, int tokens, int experts, int k) {
  Vec dl(size_t(tokens) * experts, 0.0f);
  for (int t = 0; t < tokens; ++t) {
    const float* p = &r.probs[size_t(t) * experts];
    Vec g(size_t(experts), 0.0f);
    double s = 0;
    for (int j = 0; j < k; ++j) {
      const int e = r.index[size_t(t) * k + j];
      g[size_t(e)] = dweight[size_t(t) * k + j];
      s += double(p[e]) * g[size_t(e)];
    }
    for (int e = 0; e < experts; ++e)
      dl[size_t(t) * experts + e] = float(p[e] * (g[size_t(e)] - s));
  }
  return dl;
}

std::vector<int> expert_order(const std::vector<int>& index, int experts) {
  std::vector<int> count(size_t(experts) + 1, 0), pos(index.size());
  for (int e : index) ++count[size_t(e) + 1];
  for (int e = 0; e < experts; ++e) count[size_t(e) + 1] += count[size_t(e)];
  for (size_t c = 0; c < index.size(); ++c) pos[c] = count[size_t(index[c])]++;
  return pos;
}

Vec permute_forward(const Vec& x, const std::vector<int>& pos, int k, int h) {
  Vec out(pos.size() * h);
  for (size_t c = 0; c < pos.size(); ++c)
    std::copy_n(x.begin() + long(c / k) * h, h, out.begin() + long(pos[c]) * h);
  return out;
}

Vec permute_backward(const Vec& dout, const std::vector<int>& pos, int k, int h) {
  Vec dx(pos.size() / k * h, 0.0f);
  for (size_t c = 0; c < pos.size(); ++c)
    for (int i = 0; i < h; ++i) dx[c / k * h + i] += dout[size_t(pos[c]) * h + i];
  return dx;
}

Vec unpermute_forward(const Vec& e, const Vec& w, const std::vector<int>& pos, int k, int h) {
  Vec y(pos.size() / k * h, 0.0f);
  for (size_t c = 0; c < pos.size(); ++c)
    for (int i = 0; i < h; ++i) y[c / k * h + i] += w[c] * e[size_t(pos[c]) * h + i];
  return y;
}

UnpermuteGrads unpermute_backward(const Vec& dy, const Vec& e, const Vec& w,
                                  const std::vector<int>& pos, int k, int h) {
  UnpermuteGrads g;
  g.de.assign(pos.size() * h, 0.0f);
  g.dw.assign(pos.size(), 0.0f);
  for (size_t c = 0; c < pos.size(); ++c) {
    double dot = 0;
    for (int i = 0; i < h; ++i) {
      const float d = dy[c / k * h + i];
      g.de[size_t(pos[c]) * h + i] = w[c] * d;
      dot += double(d) * e[size_t(pos[c]) * h + i];
    }
    g.dw[c] = float(dot);
  }
  return g;
}

}  // namespace planner::calibrate::ref
