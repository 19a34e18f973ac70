#include "planner/io/model_io.h"

#include "planner/error.h"
#include "planner/io/yaml_util.h"

namespace planner::io {
namespace {

const std::vector<std::string> kModelKeys = {"name",  "layers", "hidden", "heads",   "kv_heads",
                                             "ffn",   "swiglu", "vocab",  "seq_len", "tied_embeddings"};

ModelSpec read_model(const YamlReader& r) {
  r.check_keys(kModelKeys);
  ModelSpec m;
  m.name = r.get_string("name");
  m.layers = r.get_int("layers");
  m.hidden = r.get_int("hidden");
  m.heads = r.get_int("heads");
  m.kv_heads = r.has("kv_heads") ? r.get_int("kv_heads") : m.heads;
  m.ffn = r.get_int("ffn");
  m.swiglu = r.get_bool("swiglu");
  m.vocab = r.get_int("vocab");
  m.seq_len = r.get_int("seq_len");
  m.tied_embeddings = r.has("tied_embeddings") ? r.get_bool("tied_embeddings") : true;
  try {
    validate_model(m, r.file());
  } catch (const InputError& e) {  // re-raise with the line of the offending key
    std::string what = e.what();
    what = what.substr(what.find("': ") + 3);
    r.fail(e.key(), what);
  }
  return m;
}

}  // namespace

ModelSpec load_model(const std::string& path) {
  return read_model(YamlReader(load_yaml_file(path), path));
}

ModelSpec parse_model(const std::string& text, const std::string& file) {
  return read_model(YamlReader(parse_yaml_text(text, file), file));
}

}  // namespace planner::io
