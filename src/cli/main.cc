#include <filesystem>
#include <iostream>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "planner/error.h"

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_st("planner"));
  spdlog::set_pattern("[%l] %v");
  CLI::App app{"planner: parallel training plans for large transformers, from first principles"};
  app.set_version_flag("--version", std::string("planner ") + PLANNER_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // --quiet and --verbose also after the subcommand
  bool verbose = false, quiet = false;
  app.add_flag("-v,--verbose", verbose, "log details on stderr");
  app.add_flag("-q,--quiet", quiet, "log only errors");
  app.parse_complete_callback([&] {
    spdlog::set_level(quiet ? spdlog::level::err : verbose ? spdlog::level::debug : spdlog::level::warn);
  });
  int rc = 0;
  planner::cli::add_suggest(app, &rc);
  planner::cli::add_estimate(app, &rc);
  planner::cli::add_regress(app, &rc);
  planner::cli::add_validate(app, &rc);
  planner::cli::add_emit(app, &rc);
  planner::cli::add_compare(app, &rc);
  planner::cli::add_completion(app, &rc);  // last: it lists the subcommands above
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // One line, as for every other bad input: "option --top: must be from 1 to 1000, got 0".
    const std::string what = e.what();
    const bool value = dynamic_cast<const CLI::ValidationError*>(&e) != nullptr;
    std::cerr << "planner: error: " << (what.rfind("--", 0) == 0 ? "option " : "") << what
              << (value ? "" : " (--help lists the options)") << "\n";
    return 2;
  } catch (const planner::InputError& e) {
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
