// An output file that is whole or absent: a crash or an error mid-run never
// leaves half of it where the user looks.
//
// A regular file (or a new one) is written to "PATH.tmp.<pid>.<n>" beside it
// (the same directory, so the rename cannot cross filesystems) and renamed
// over PATH by commit(); a symlink to a regular file keeps the link and has
// its file replaced. "-" is stdout. Any other target is written in place: a
// device such as /dev/full or a FIFO (its reader expects the bytes there, and
// a rename would replace the node), and any path under /dev/ or /proc/, such
// as /dev/fd/N (an open descriptor, whose owner must see the bytes). A
// process killed before commit() leaves the temporary file, and PATH as it was.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace rateline::report {

class OutputFile {
 public:
  OutputFile() = default;
  // `what` names the output in messages ("JSON file"). "" = no output.
  // Throws SetupError when the file cannot be created.
  OutputFile(const std::string& path, std::string what);
  // Without commit(): the temporary file is removed, PATH left as it was.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  bool is_open() const { return f_ != nullptr; }
  // After the first error nothing more is written; commit() reports it.
  // flush: hand the bytes to the kernel now (a reader of a pipe sees each line).
  void write(std::string_view text, bool flush);
  // Flushes and closes; a temporary file is synced and renamed over PATH.
  // Returns "" or the run's first error, "Couldn't write <what> PATH: <errno text>".
  // Later calls return "".
  std::string commit();

  // Whether `path` could be written, without writing it (nothing is left
  // behind): "" or why not. For checks before a long run.
  static std::string probe(const std::string& path, const std::string& what);

 private:
  std::FILE* f_ = nullptr;
  std::string path_, what_;
  std::string target_;  // a regular file: what commit() renames over (PATH, a symlink resolved)
  std::string tmp_;     // its temporary file, until commit()
  int error_ = 0;  // first errno of the output
};

// Writes `text` as a whole file (as above). Throws SetupError naming the path and the cause.
void write_whole_file(const std::string& path, std::string_view text, const std::string& what);

}  // namespace rateline::report
