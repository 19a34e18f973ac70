// Writing outputs (io/output.h) and reading inputs (io/file.h, io/json.h): all or nothing, bounded.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include "planner/error.h"
#include "planner/io/file.h"
#include "planner/io/json.h"
#include "planner/io/knobs.h"
#include "planner/io/output.h"
#include "planner/limits.h"

using namespace planner;
namespace fs = std::filesystem;

namespace {

fs::path fresh(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("planner_output_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) { return io::read_file(p.string()); }

long entries(const fs::path& d) {
  return std::distance(fs::directory_iterator(d), fs::directory_iterator());
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a file is written atomically; a missing folder is a clear error") {
  const fs::path dir = fresh("atomic");
  io::write_file_atomically((dir / "p.yaml").string(), "old\n");
  io::write_file_atomically((dir / "p.yaml").string(), "new\n");
  CHECK(read(dir / "p.yaml") == "new\n");
  CHECK(entries(dir) == 1);  // no temporary left behind
  CHECK(error_of([&] { io::write_file_atomically((dir / "missing/p.yaml").string(), "x"); }) ==
        (dir / "missing/p.yaml").string() + ": cannot write: No such file or directory");
  fs::remove_all(dir);
}

TEST_CASE("a streamed file appears only on commit, and not at all when abandoned") {
  const fs::path dir = fresh("stream");
  const std::string path = (dir / "t.json").string();
  {
    io::OutputFile out(path);
    for (int i = 0; i < 300000; ++i) out.write("0123456789");  // 3 MB: flushed on the way
    CHECK(!fs::exists(path));
    CHECK(entries(dir) == 1);  // the temporary
    out.commit();
  }
  CHECK(fs::file_size(path) == 3000000);
  {
    io::OutputFile out(path);
    out.write("half");
  }  // an exception on the way out: no commit
  CHECK(fs::file_size(path) == 3000000);
  CHECK(entries(dir) == 1);
  fs::remove_all(dir);
}

TEST_CASE("SIGINT and SIGTERM while writing remove the temporary, then end the process") {
  for (int sig : {SIGINT, SIGTERM}) {
    const fs::path dir = fresh("signal");
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      std::signal(sig, SIG_DFL);  // doctest's own handler would otherwise be kept
      io::OutputFile out((dir / "trace.json").string());
      out.write("partial");
      ::raise(sig);
      ::_exit(0);  // not reached
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
    CHECK(entries(dir) == 0);
    fs::remove_all(dir);
  }
}

TEST_CASE("a set of files: a new folder in one rename, an existing one all or nothing") {
  const fs::path dir = fresh("set") / "nested" / "out";
  const auto written =
      io::write_file_set(dir.string(), {{"a.sh", "echo a\n", true}, {"b.json", "{}\n", false}});
  CHECK(written == std::vector<std::string>{(dir / "a.sh").string(), (dir / "b.json").string()});
  CHECK((fs::status(dir / "a.sh").permissions() & fs::perms::owner_exec) != fs::perms::none);
  CHECK((fs::status(dir / "b.json").permissions() & fs::perms::owner_exec) == fs::perms::none);
  CHECK(entries(dir.parent_path()) == 1);  // the temporary folder was renamed, not left
  // "out/" names the same folder as "out".
  const fs::path slash = dir.parent_path() / "slash";
  io::write_file_set(slash.string() + "/", {{"c.txt", "c\n", false}});
  CHECK(read(slash / "c.txt") == "c\n");
  fs::remove_all(slash);
  // The second file cannot replace what is there (a folder): the first is put back.
  fs::remove(dir / "b.json");
  fs::create_directories(dir / "b.json" / "x");
  CHECK(error_of([&] {
          io::write_file_set(dir.string(), {{"a.sh", "new\n", false}, {"b.json", "{}\n", false}});
        }) == "option --out: cannot replace " + (dir / "b.json").string() +
                  ": Is a directory; nothing was replaced (" + dir.string() + " is as it was)");
  CHECK(read(dir / "a.sh") == "echo a\n");
  CHECK(entries(dir) == 2);  // a.sh and the folder b.json: no temporary, no backup
  // A file that did not exist before is removed again.
  CHECK(error_of([&] {
          io::write_file_set(dir.string(), {{"c.txt", "c\n", false}, {"b.json", "{}\n", false}});
        }).find("nothing was replaced") != std::string::npos);
  CHECK(!fs::exists(dir / "c.txt"));
  fs::remove_all(fresh("set"));
}

TEST_CASE("input files are read once and bounded") {
  CHECK(error_of([] { io::read_file("/dev/zero"); }) ==
        "/dev/zero: larger than the limit of 16 MiB for an input file");
  CHECK(error_of([] { io::read_file("/"); }) == "/: is a folder, not a file");
  CHECK(error_of([] { io::read_file(std::string(300, 'x')); }) ==
        std::string(300, 'x') + ": cannot open file: File name too long");
  CHECK(error_of([] { io::read_file(""); }) == "an empty file name");
}

TEST_CASE("JSON: overflowing numbers and deep nesting are input errors with line and key") {
  CHECK(error_of([] { io::parse_json("{\n\"a\": 1,\n\"n_layer\": 1e400}", "c.json"); }) ==
        "c.json:3: key 'n_layer': number out of range (number overflow parsing '1e400')");
  CHECK(error_of([] { io::parse_json("{\"a\":\n[" + std::string(70, '[') + "]}", "c.json"); }) ==
        "c.json:2: invalid JSON: nested deeper than 64 levels");
  CHECK(error_of([] {
          io::parse_json("{\"a\": 1,}", "c.json");
        }).rfind("c.json:1: invalid JSON: syntax error", 0) == 0);
  CHECK(io::parse_json(std::string(64, '[') + std::string(64, ']'), "c.json").is_array());
  CHECK(io::is_json("{\"n\": 1e400}"));
  CHECK(!io::is_json("{name: x}"));
}

TEST_CASE("lists are bounded before they are expanded") {
  CHECK(io::parse_int_set("1-4,2,8", "--tp") == std::vector<int>{1, 2, 3, 4, 8});
  CHECK(io::parse_int_set("0-1048575", "--gpus").size() == size_t(limits::kListValues));
  CHECK(
      error_of([] { io::parse_int_set("0-1048575,7", "--gpus"); }) ==
      "option --gpus: the list expands to more than 1048576 values; give fewer or narrower ranges");
  CHECK(error_of([] { io::parse_int_set("1-1048577", "--pp"); }) ==
        "option --pp: values must be at most 1048576");
}
