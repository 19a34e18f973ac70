#pragma once
/// Every file the planner and its GPU programs write goes through here: all of it or nothing.
/// Bytes go to a temporary file in the target's folder, are flushed to disk (fsync), and the
/// temporary is renamed over the target; on an error, an exception or SIGINT/SIGTERM/SIGHUP the
/// temporary is removed and the target keeps its old content. A set of files (emit's launch
/// files) is replaced together or not at all.
#include <string>
#include <string_view>
#include <vector>

namespace planner::io {

struct NamedContent {
  std::string name;  ///< file name inside the folder
  std::string contents;
  bool executable = false;
};

/// One output file, written as a stream (a trace of millions of events need not fit in memory).
class OutputFile {
 public:
  /// Opens the temporary `.NAME.tmp-PID-N` beside `path`; throws InputError naming `path` when the
  /// folder is missing or not writable. `executable`: mode 0777 less the umask, else 0666.
  explicit OutputFile(std::string path, bool executable = false);
  ~OutputFile();  ///< removes the temporary unless committed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view bytes);
  /// Flushes, fsyncs and renames the temporary over the path; throws InputError when it cannot
  /// (the temporary is then removed).
  void commit();
  const std::string& path() const { return path_; }

 private:
  friend std::vector<std::string> write_file_set(const std::string& dir,
                                                 const std::vector<NamedContent>& files);
  void flush();
  void sync_and_close();  ///< flush, fsync, close: ready to rename

  std::string path_, temp_;
  int fd_ = -1;
  int slot_ = -1;  ///< in the signal handler's table of temporaries
  bool committed_ = false;
  std::string buffer_;
};

/// Writes `content` to `path` atomically (see OutputFile).
void write_file_atomically(const std::string& path, std::string_view content,
                           bool executable = false);

/// Writes `files` into `dir` as one set: a new folder is filled under a temporary name and renamed
/// into place; into an existing folder each file is renamed over its old version, and if one
/// rename fails those already renamed are put back. Throws InputError saying what was and was not
/// replaced (normally: nothing). Returns the paths written, in order.
std::vector<std::string> write_file_set(const std::string& dir,
                                        const std::vector<NamedContent>& files);

}  // namespace planner::io
