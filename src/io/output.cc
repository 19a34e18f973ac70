#include "planner/io/output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>

#include "planner/error.h"

namespace fs = std::filesystem;

namespace planner::io {
namespace {

// ---- temporaries removed on SIGINT, SIGTERM and SIGHUP --------------------------------------

/// Paths of the temporaries alive now; the handler may only call async-signal-safe functions, so
/// it reads them from fixed slots (a path is owned by its OutputFile, or by write_file_set for a
/// folder, and its slot is cleared before the path is freed).
constexpr int kSlots = 64;
std::atomic<const char*> g_files[kSlots];
std::atomic<const char*> g_dirs[kSlots];

extern "C" void remove_temporaries_and_reraise(int sig) {
  for (auto& slot : g_files)
    if (const char* p = slot.load()) ::unlink(p);
  for (auto& slot : g_dirs)
    if (const char* p = slot.load()) ::rmdir(p);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

/// Installs the handler where the signal still has its default action (a program's own handler,
/// or SIG_IGN under nohup, is left alone). Checked at each temporary: a few system calls.
void install_handler() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_handler = remove_temporaries_and_reraise;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

int hold(std::atomic<const char*>* slots, const std::string& path) {
  install_handler();
  for (int i = 0; i < kSlots; ++i) {
    const char* empty = nullptr;
    if (slots[i].compare_exchange_strong(empty, path.c_str())) return i;
  }
  return -1;  // more than kSlots at once: still removed on every other way out
}

void release(std::atomic<const char*>* slots, int& slot) {
  if (slot >= 0) slots[slot].store(nullptr);
  slot = -1;
}

std::string errno_text() { return std::strerror(errno); }

/// ".NAME.tmp-PID-N" beside `path`: hidden, unique within the process and across processes.
std::string temporary_beside(const std::string& path) {
  static std::atomic<int> counter{0};
  const fs::path p(path);
  std::string name = ".";
  name.append(p.filename().string()).append(".tmp-").append(std::to_string(::getpid()));
  name.append("-").append(std::to_string(counter++));
  return (p.has_parent_path() ? p.parent_path() / name : fs::path(name)).string();
}

/// All of `bytes` to `fd`; false (errno set) when the disk is full or the write fails.
bool write_all(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

/// fsync (where the file system can) and close; false (errno set) when either fails.
bool sync_close(int fd) {
  const bool synced = ::fsync(fd) == 0 || errno == EINVAL;  // EINVAL: nothing to sync to
  const int err = errno;
  const bool closed = ::close(fd) == 0;
  if (!synced) errno = err;
  return synced && closed;
}

int create(const std::string& path, bool executable) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, executable ? 0777 : 0666);
}

}  // namespace

// ---- one file --------------------------------------------------------------------------------

OutputFile::OutputFile(std::string path, bool executable)
    : path_(std::move(path)), temp_(temporary_beside(path_)) {
  if (path_.empty()) throw InputError("", 0, "", "an empty output file name");
  slot_ = hold(g_files, temp_);
  fd_ = create(temp_, executable);
  if (fd_ < 0) {
    const std::string why = errno_text();
    release(g_files, slot_);
    throw InputError(path_, 0, "", "cannot write: " + why);
  }
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
  release(g_files, slot_);
}

void OutputFile::write(std::string_view bytes) {
  buffer_.append(bytes);
  if (buffer_.size() >= (1u << 20)) flush();
}

void OutputFile::flush() {
  if (!write_all(fd_, buffer_)) throw InputError(path_, 0, "", "cannot write: " + errno_text());
  buffer_.clear();
}

void OutputFile::sync_and_close() {
  flush();
  const int fd = fd_;
  fd_ = -1;
  if (!sync_close(fd)) throw InputError(path_, 0, "", "cannot write: " + errno_text());
}

void OutputFile::commit() {
  sync_and_close();
  if (::rename(temp_.c_str(), path_.c_str()) != 0)
    throw InputError(path_, 0, "", "cannot replace the file: " + errno_text());
  committed_ = true;
  release(g_files, slot_);
}

void write_file_atomically(const std::string& path, std::string_view content, bool executable) {
  OutputFile out(path, executable);
  out.write(content);
  out.commit();
}

// ---- a set of files into one folder -----------------------------------------------------------

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

/// A new folder: filled under a temporary name beside it, then renamed into place in one step.
/// Until then its files and the folder itself are in the signal handler's tables.
std::vector<std::string> write_new_folder(const fs::path& root,
                                          const std::vector<NamedContent>& files) {
  std::error_code ec;
  if (root.has_parent_path()) fs::create_directories(root.parent_path(), ec);
  const std::string temp = temporary_beside(root.string());
  if (::mkdir(temp.c_str(), 0777) != 0)
    throw InputError("", 0, "--out",
                     "cannot create directory " + root.string() + ": " + errno_text());
  int dir_slot = hold(g_dirs, temp);
  std::vector<std::string> paths;
  paths.reserve(files.size());  // never reallocated: the handler holds pointers into them
  std::vector<int> slots;
  auto release_all = [&] {
    for (int& slot : slots) release(g_files, slot);
    release(g_dirs, dir_slot);
  };
  try {
    for (const NamedContent& f : files) {
      paths.push_back((fs::path(temp) / f.name).string());
      slots.push_back(hold(g_files, paths.back()));
      const int fd = create(paths.back(), f.executable);
      if (fd < 0 || !write_all(fd, f.contents) || !sync_close(fd))
        throw InputError((root / f.name).string(), 0, "", "cannot write: " + errno_text());
    }
    if (::rename(temp.c_str(), root.c_str()) != 0)
      throw InputError("", 0, "--out",
                       "cannot create directory " + root.string() + ": " + errno_text());
  } catch (...) {
    release_all();
    fs::remove_all(temp, ec);
    throw;
  }
  release_all();
  std::vector<std::string> written;
  for (const NamedContent& f : files) written.push_back((root / f.name).string());
  return written;
}

/// A second name for `target`'s current version (a hard link, else a copy), or "" if it has none.
std::string keep_old_version(const std::string& target) {
  std::error_code ec;
  if (!fs::is_regular_file(target, ec)) return "";  // none, or a folder that rename will refuse
  const std::string backup = temporary_beside(target) + ".old";
  if (::link(target.c_str(), backup.c_str()) == 0) return backup;
  if (fs::copy_file(target, backup, ec)) return backup;
  throw InputError(target, 0, "",
                   "cannot keep the old version while replacing it: " + ec.message());
}

}  // namespace

std::vector<std::string> write_file_set(const std::string& dir,
                                        const std::vector<NamedContent>& files) {
  fs::path root(dir);
  if (root.filename().empty() && root.has_parent_path()) root = root.parent_path();  // "out/"
  std::error_code ec;
  if (!fs::exists(root, ec)) return write_new_folder(root, files);
  if (!fs::is_directory(root, ec)) throw InputError("", 0, "--out", dir + " is not a directory");
  // Every file complete on disk under its temporary name first...
  std::vector<std::unique_ptr<OutputFile>> temps;
  for (const NamedContent& f : files) {
    temps.push_back(std::make_unique<OutputFile>((root / f.name).string(), f.executable));
    temps.back()->write(f.contents);
    temps.back()->sync_and_close();
  }
  // ... then each renamed over its target, the old version kept until all are in.
  std::vector<std::string> backups(files.size()), written;
  size_t i = 0;
  std::string failure;
  try {
    for (; i < files.size(); ++i) {
      OutputFile& t = *temps[i];
      backups[i] = keep_old_version(t.path_);
      if (::rename(t.temp_.c_str(), t.path_.c_str()) != 0) {
        failure = "cannot replace " + t.path_ + ": " + errno_text();
        break;
      }
      t.committed_ = true;
      written.push_back(t.path_);
    }
  } catch (const InputError& e) {
    failure = e.what();
  }
  if (failure.empty()) {
    for (const std::string& b : backups)
      if (!b.empty()) ::unlink(b.c_str());
    return written;
  }
  // Put back what was replaced: the old version where there was one, else no file.
  std::vector<std::string> left_new, old;
  for (size_t j = 0; j < files.size(); ++j) {
    const std::string& target = temps[j]->path_;
    const bool put_back =
        j >= i || (backups[j].empty() ? ::unlink(target.c_str()) == 0
                                      : ::rename(backups[j].c_str(), target.c_str()) == 0);
    if (j >= i && !backups[j].empty()) ::unlink(backups[j].c_str());
    (put_back ? old : left_new).push_back(files[j].name);
  }
  if (left_new.empty())
    throw InputError("", 0, "--out", failure + "; nothing was replaced (" + dir + " is as it was)");
  throw InputError("", 0, "--out",
                   failure + "; in " + dir + " the new " + joined(left_new) + " and the old " +
                       joined(old) + ": emit again once the cause is fixed");
}

}  // namespace planner::io
