#include "planner/block.h"

#include <initializer_list>

namespace planner {

BlockModel block_model(const LayerShape& l, const BlockConfig& cfg) {
  const double t = cfg.tp, o = cfg.sp ? t : 1.0;  // o: how the outside-TP part is sharded
  const double e = cfg.element_bytes;             // a stored activation element; masks 1 byte
  const int cp = l.causal ? cfg.cp : 1;
  const double s = double(l.seq) / cp * l.sequences, b = cfg.mbs, sb = s * b;
  const double h = l.hidden, f = l.ffn, up = (l.swiglu ? 2.0 : 1.0) * f;
  BlockModel bm;
  bm.tokens = sb;
  using K = ModuleKind;
  auto same = [](double bytes) { return std::array<double, 3>{bytes, bytes, 0.0}; };
  if (!l.attention) {  // a projector MLP: in -> ffn -> hidden, keeping its input
    const double in = l.in_features, x = e * sb * in;
    for (const Module& m : std::initializer_list<Module>{
             {"fc1", K::linear, kFc1, in, up / t, in * up, {x, x, x}, true, 0, true},
             {"activation", K::activation, -1, 0, 0, 0, same(e * sb * up / t), false, 0, false},
             {"fc2", K::linear, kFc2, f / t, h, f * h, same(e * sb * f / t), false, 1, true}})
      bm.add(m);
    return bm;
  }
  const double d = l.head_dim(), a = l.heads, g = l.kv_heads, sbh = sb * h;
  // The attention core keeps Q, K and V, and the scores, softmax and dropout (5 a s^2 b) unless
  // selective recompute drops them; a flash kernel keeps only fp32 softmax statistics (4 a s b).
  // The 5 of 5 a s^2 b is the scores and the softmax (2 bytes each) and the 1-byte dropout mask.
  const double qkv_kept = e * sbh / t + 2.0 * e * sb * g * d / t;
  const double scores = (2.0 * e + 1.0) * a * s * double(l.seq) * b / t, stats = 4.0 * a * sb / t;
  const bool flash = cfg.attention == AttentionKernel::flash;
  const std::array<double, 3> core = {qkv_kept + (flash ? stats : scores),
                                      qkv_kept + (flash ? stats : 0.0), 0.0};
  // Full recompute keeps only the block's input, the first norm's.
  for (const Module& m : std::initializer_list<Module>{
           {"norm1",
            K::norm,
            -1,
            0,
            0,
            h,
            {e * sbh / o, e * sbh / o, e * sbh / o},
            false,
            0,
            false},
           {"qkv", K::linear, kQkv, h, (a + 2.0 * g) * d / t, h * (a + 2.0 * g) * d,
            same(e * sbh / o), true, 0, true},
           {"attention", K::attention_core, -1, 0, 0, 0, core, false, 0, false},
           // Its input inside the TP region, and the dropout mask after it outside.
           {"proj", K::linear, kProj, a * d / t, h, a * d * h, same(e * sbh / t + sbh / o), false,
            1, true},
           {"norm2", K::norm, -1, 0, 0, h, same(e * sbh / o), false, 0, false},
           {"fc1", K::linear, kFc1, h, up / t, h * up, same(e * sbh / o), true, 0, true},
           {"activation", K::activation, -1, 0, 0, 0, same(e * sb * up / t), false, 0, false},
           {"fc2", K::linear, kFc2, f / t, h, f * h, same(e * sb * f / t + sbh / o), false, 1,
            true}})
    bm.add(m);
  return bm;
}

double BlockModel::params() const {
  double p = 0;
  for (const Module& m : *this) p += m.params;
  return p;
}

double BlockModel::stored_bytes(Recompute r) const {
  double bytes = 0;
  for (const Module& m : *this) bytes += m.stored[static_cast<int>(r)];
  return bytes;
}

int BlockModel::tp_collectives() const {
  int n = 0;
  for (const Module& m : *this) n += m.tp_collectives;
  return n;
}

const Module* BlockModel::linear(int index) const {
  for (const Module& m : *this)
    if (m.kind == ModuleKind::linear && m.linear == index) return &m;
  return nullptr;
}

}  // namespace planner
