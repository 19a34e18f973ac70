#pragma once
/// `--report FILE.html`: one self-contained page (inline CSS, inline SVG, no external resources).
#include <string>
#include <vector>

#include "planner/report/report.h"

namespace planner {

/// The `planner emit` command line that writes a plan's launch files, or why it cannot.
struct LaunchCommand {
  std::string framework;  ///< "megatron" or "deepspeed"
  int rank = 0;           ///< the listed plan it launches (1 = top); 0 when none can be
  std::string command;    ///< `planner emit ... --framework F --out DIR`
  std::string refusal;    ///< the framework's reason, when it cannot run the top plan
};

/// Inputs, the listed plans, their breakdowns, both plots, the top plan's diagnostics and the
/// launch commands.
std::string suggest_html(const RunContext& ctx, const SearchResult& r,
                         const std::vector<LaunchCommand>& launch);

/// Inputs, the plan, its breakdown, layer and memory detail, the plot, diagnostics and the
/// launch commands.
std::string estimate_html(const RunContext& ctx, const Estimate& e,
                          const std::vector<LaunchCommand>& launch);

/// Escapes text for HTML (the same five characters as SVG).
std::string html_escape(const std::string& text);

/// One table of text cells, the first row its header, as the reports write theirs; `highlight`:
/// the index of a body row to mark (-1: none).
std::string html_table(const std::vector<std::vector<std::string>>& rows, int highlight = -1);
/// A whole page: the reports' style, `title` as its heading, `body` (HTML), the planner's footer.
std::string html_page(const std::string& title, const std::string& body);

}  // namespace planner
