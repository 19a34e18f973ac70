#include "cli/app.h"

int main(int argc, char** argv) { return planner::cli::run(argc, argv); }
