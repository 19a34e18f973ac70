// `planner completion bash`: a bash completion script generated from the command line itself,
// so that it lists exactly the subcommands and options this binary has.
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "cli/vary.h"
#include "planner/format.h"
#include "planner/framework.h"
#include "planner/knob_table.h"

namespace planner::cli {
namespace {

/// File options and the extensions (a bash regex alternation) they complete; "/" for folders.
const std::map<std::string, std::string> kFileOptions = {
    {"--model", "yaml|yml|json"}, {"--cluster", "yaml|yml"}, {"--like", "yaml|yml"},
    {"--cases", "csv"},           {"--write-bands", "csv"},  {"--plot", "svg"},
    {"--report", "html|htm"},     {"--trace", "json"},       {"--out", "/"},
    {"--profiles", "/"}};

/// Values of options that take lists (no validator to read them from): the knob table's words
/// and short integer ranges, the frameworks, and the two single-valued enum options.
std::map<std::string, std::string> value_options() {
  auto join = [](const auto& words) {
    std::string out;
    for (const auto& w : words) out += std::string(out.empty() ? "" : " ") + w;
    return out;
  };
  std::map<std::string, std::string> out;
  for (const KnobDef& k : knob_table()) {
    if (!k.searched) continue;
    if (!k.is_integer()) {
      out[k.option()] = join(k.words);
    } else if (k.hi - k.lo <= 3) {
      std::vector<std::string> v;
      for (int x = k.lo; x <= k.hi; ++x) v.push_back(std::to_string(x));
      out[k.option()] = join(v);
    }
  }
  std::vector<std::string> frameworks, emitting;
  for (Framework f : kFrameworks) frameworks.push_back(to_string(f));
  for (Framework f : kCurrentFrameworks) emitting.push_back(to_string(f));
  out["--emit"] = join(emitting);        // and emit's --framework: the versions with launch files
  out[" framework"] = join(frameworks);  // every other command's --framework
  frameworks.push_back("all");
  out["--framework"] = join(frameworks);  // suggest's
  out["--dtype"] = join(knob(KnobId::dtype).words);
  out["--attention"] = join(knob(KnobId::attn).words);
  return out;
}

/// The set an IsMember validator prints in the option's type name: "TEXT:{table,json}" -> "table
/// json".
std::string member_values(const CLI::Option* o) {
  const std::string type = o->get_type_name();
  const size_t open = type.find('{'), close = type.find('}', open);
  if (open == std::string::npos || close == std::string::npos) return "";
  std::string values = type.substr(open + 1, close - open - 1);
  for (char& ch : values)
    if (ch == ',') ch = ' ';
  return values;
}

std::string vary_words() {
  std::string words = "cluster= framework=";
  for (const std::string& n : vary_scale_names()) words += " " + n + "*";
  for (const std::string& k : knob_names()) words += " " + k + "=";
  return words;
}

/// `case "$prev"` arms for one subcommand's options that take values.
std::string value_cases(const CLI::App& sub) {
  std::string out;
  const std::map<std::string, std::string> values = value_options();
  for (const CLI::Option* o : sub.get_options()) {
    if (o->get_lnames().empty() || o->get_items_expected_max() == 0)
      continue;  // positionals, flags
    const std::string name = "--" + o->get_lnames().front();
    std::string action;
    if (name == "--out" && sub.get_name() == "init")  // a profile file, not emit's folder
      action = "_planner_files 'yaml|yml'";
    else if (auto f = kFileOptions.find(name); f != kFileOptions.end())
      action = f->second == "/" ? "_planner_dirs" : "_planner_files '" + f->second + "'";
    else if (const std::string v = member_values(o); !v.empty())
      action = "_planner_words '" + v + "'";
    else if (name == "--framework" && sub.get_name() != "suggest")  // "all" is suggest's only
      action =
          "_planner_words '" + values.at(sub.get_name() == "emit" ? "--emit" : " framework") + "'";
    else if (auto w = values.find(name); w != values.end())
      action = "_planner_words '" + w->second + "'";
    else if (name == "--vary")
      action = "_planner_words '" + vary_words() + "'; compopt -o nospace 2>/dev/null";
    else
      action = ":";  // a number or free text
    out += fmt("        {}) {}; return ;;\n", name, action);
  }
  return out;
}

std::string option_words(const CLI::App& app) {
  std::string words;
  for (const CLI::Option* o : app.get_options())
    for (const std::string& l : o->get_lnames()) words += (words.empty() ? "--" : " --") + l;
  return words;
}

/// The subcommands of `app`, each followed by its own ("profile", "init").
std::vector<const CLI::App*> commands_of(const CLI::App& app) {
  std::vector<const CLI::App*> out;
  for (const CLI::App* s : app.get_subcommands({})) {
    out.push_back(s);
    for (const CLI::App* nested : commands_of(*s)) out.push_back(nested);
  }
  return out;
}

/// The names of the commands directly under `app`, space-separated.
std::string command_words(const CLI::App& app) {
  std::string out;
  for (const CLI::App* s : app.get_subcommands({})) out += (out.empty() ? "" : " ") + s->get_name();
  return out;
}

std::string bash_script(const CLI::App& app) {
  const std::vector<const CLI::App*> subs = commands_of(app);
  std::string alternatives;
  for (const CLI::App* s : subs) alternatives += (alternatives.empty() ? "" : "|") + s->get_name();
  std::string out =
      "# bash completion for planner; generated by `planner completion bash` (do not edit:\n"
      "# `cmake --build build --target update_completion` regenerates it).\n"
      "# Use: source this file, or copy it to "
      "~/.local/share/bash-completion/completions/planner\n"
      "_planner_words() { COMPREPLY=($(compgen -W \"$1\" -- \"$cur\")); }\n"
      "_planner_dirs() { compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "
      "\"$cur\")); }\n"
      "_planner_files() {\n"
      "  local IFS=$'\\n' f\n  COMPREPLY=()\n  compopt -o filenames 2>/dev/null\n"
      "  for f in $(compgen -f -- \"$cur\"); do\n"
      "    if [[ -d $f || $f =~ \\.($1)$ ]]; then COMPREPLY+=(\"$f\"); fi\n  done\n}\n"
      "_planner() {\n"
      "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\" sub=\"\" "
      "i\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    case \"${COMP_WORDS[i]}\" in ";
  // The last command word wins: "profile init" completes init's options.
  out += alternatives + ") sub=\"${COMP_WORDS[i]}\" ;; esac\n  done\n  case \"$sub\" in\n";
  for (const CLI::App* s : subs) {
    out += fmt("    {})\n      case \"$prev\" in\n{}      esac\n", s->get_name(), value_cases(*s));
    std::string positional = command_words(*s);
    for (const CLI::Option* o : s->get_options())
      if (!o->nonpositional()) positional += member_values(o);
    out += fmt(
        "      if [[ $cur == -* ]]; then _planner_words '{}'; else _planner_words '{}'; fi ;;\n",
        option_words(*s), positional);
  }
  out +=
      fmt("    *) if [[ $cur == -* ]]; then _planner_words '{}'; else _planner_words '{}'; fi ;;\n"
          "  esac\n}}\ncomplete -F _planner planner\n",
          option_words(app), command_words(app));
  return out;
}

}  // namespace

void add_completion(CLI::App& app, int* rc) {
  auto shell = std::make_shared<std::string>();
  CLI::App* s =
      app.add_subcommand("completion", "print a shell completion script: planner completion bash");
  s->add_option("shell", *shell, "the shell (bash)")->required()->check(CLI::IsMember({"bash"}));
  s->callback([&app, rc, shell] {  // `shell` lives as long as the option that writes into it
    std::cout << bash_script(app);
    *rc = 0;
  });
}

}  // namespace planner::cli
