// The planner's command line as a function: main() calls it, and so do the fuzzers.
#include "cli/app.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "planner/error.h"

namespace planner::cli {
namespace {

/// The options `app` takes, as written on the command line ("--gpus", "-v").
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& n : o->get_lnames()) out.push_back("--" + n);
    for (const std::string& n : o->get_snames()) out.push_back("-" + n);
  }
  return out;
}

/// "planner profile init": the words that name `app` on the command line.
std::string command_path(const CLI::App& app) {
  const CLI::App* parent = app.get_parent();
  return parent ? command_path(*parent) + " " + app.get_name() : "planner";
}

/// A word CLI11 did not expect, named with the nearest one it knows: the first unknown option
/// ("--gpu" -> "--gpus") of the deepest subcommand given, or an unknown subcommand ("sugest" ->
/// "suggest", "profile int" -> "init"). Empty when the left-over words are something else
/// (CLI11's message says it then).
std::string unknown_word(const CLI::App& app) {
  std::vector<std::string> extra = app.remaining(true);
  if (extra.empty()) return "";
  const CLI::App* owner = &app;  // the deepest subcommand given
  while (!owner->get_subcommands().empty()) owner = owner->get_subcommands().front();
  const std::vector<const CLI::App*> commands_here = owner->get_subcommands({});
  if (!commands_here.empty() && extra.front().rfind('-', 0) != 0) {  // a command word expected
    std::vector<std::string> commands;
    for (const CLI::App* s : commands_here) commands.push_back(s->get_name());
    const std::string near = nearest_word(extra.front(), commands);
    std::string all;
    for (const std::string& c : commands) all += (all.empty() ? "" : ", ") + c;
    return "unknown command '" + extra.front() + "', " +
           (near.empty() ? "expected one of " + all : "did you mean '" + near + "'?") + " (" +
           command_path(*owner) + " --help lists the commands)";
  }
  for (std::string word : extra) {
    if (word.size() < 2 || word[0] != '-' || word == "--") continue;
    word = word.substr(0, word.find('='));  // --global-bach=64
    std::vector<std::string> known = option_names(*owner);
    if (owner != &app)
      for (const std::string& n : option_names(app)) known.push_back(n);  // --quiet, --verbose
    const std::string near = nearest_word(word, known);
    return "option " + word + ": unknown option" +
           (near.empty() ? "" : ", did you mean " + near + "?") + " (" + command_path(*owner) +
           " --help lists the options)";
  }
  return "";
}

}  // namespace

int run(int argc, const char* const* argv) {
  // Not registered by name, so that run() can be called again (the fuzzers do).
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "planner", std::make_shared<spdlog::sinks::stderr_color_sink_st>()));
  spdlog::set_pattern("[%l] %v");
  CLI::App app{"planner: parallel training plans for large transformers, from first principles"};
  app.set_version_flag("--version", std::string("planner ") + PLANNER_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // --quiet and --verbose also after the subcommand
  bool verbose = false, quiet = false;
  app.add_flag("-v,--verbose", verbose, "log details on stderr");
  app.add_flag("-q,--quiet", quiet, "log only errors");
  app.parse_complete_callback([&] {
    spdlog::set_level(quiet     ? spdlog::level::err
                      : verbose ? spdlog::level::debug
                                : spdlog::level::warn);
  });
  int rc = 0;
  add_suggest(app, &rc);
  add_estimate(app, &rc);
  add_regress(app, &rc);
  add_validate(app, &rc);
  add_emit(app, &rc);
  add_compare(app, &rc);
  add_advise(app, &rc);
  add_profile(app, &rc);
  add_completion(app, &rc);  // last: it lists the subcommands above
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // A typo first: a missing --model after "--modle" is the typo's doing.
    if (const std::string typo = unknown_word(app); !typo.empty()) {
      std::cerr << "planner: error: " << typo << "\n";
      return 2;
    }
    // One line, as for every other bad input: "option --top: must be from 1 to 1000, got 0".
    const std::string what = e.what();
    const bool value = dynamic_cast<const CLI::ValidationError*>(&e) != nullptr;
    std::cerr << "planner: error: " << (what.rfind("--", 0) == 0 ? "option " : "") << what
              << (value ? "" : " (--help lists the options)") << "\n";
    return 2;
  } catch (const InputError& e) {
    std::cerr << "planner: error: " << e.what() << "\n";
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {  // a path the user gave
    std::cerr << "planner: error: " << e.path1().string() << ": " << e.code().message() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "planner: error: the inputs need more memory than this machine has; check for "
                 "implausibly large sizes or knob ranges\n";
    return 2;
  } catch (const std::exception& e) {  // a bug: say so, without a stack trace
    std::cerr << "planner: internal error: " << e.what() << "\n";
    return 3;
  }
  return rc;
}

}  // namespace planner::cli
