#include "planner/io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "planner/error.h"
#include "planner/limits.h"

namespace planner::io {
namespace {

/// Closes the descriptor on every way out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_file(const std::string& path) {
  if (path.empty()) throw InputError("", 0, "", "an empty file name");
  const Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0)
    throw InputError(path, 0, "", std::string("cannot open file: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) == 0 && S_ISDIR(st.st_mode))
    throw InputError(path, 0, "", "is a folder, not a file");
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(path, 0, "", std::string("cannot read file: ") + std::strerror(errno));
    }
    if (out.size() + static_cast<size_t>(n) > limits::kInputFileBytes)
      throw InputError(path, 0, "",
                       "larger than the limit of " + std::to_string(limits::kInputFileBytes >> 20) +
                           " MiB for an input file");
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace planner::io
