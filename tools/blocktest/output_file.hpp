// blocktest's output files (--json, --csv, --svg): whole or not at all, and
// every write checked.
//
// A regular file (or a new name) is written into an unnamed file in the same
// directory (O_TMPFILE; a hidden temporary name where the filesystem has no
// O_TMPFILE) and renamed over the name only by commit(), once complete: a
// crash or a kill leaves the previous file or none, never half of one.
// A character device or FIFO (/dev/full, /dev/stdout on a pipe) and "-" are
// written in place: there is nothing to rename, and renaming over /dev/full
// would replace the device node. "-" is also how to follow the JSON lines
// live: a file gets its name only at the end.
// The first failed write is kept (ENOSPC on /dev/full is an error, not an
// empty file and exit 0) and commit() reports it.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace rateline::blocktest {

class OutputFile {
 public:
  OutputFile() = default;  // disabled: writes go nowhere
  // "" = disabled, "-" = stdout. `what` names it in messages ("JSON").
  // Creates the unnamed file now, so an unwritable directory fails before
  // anything is measured. Throws SetupError.
  OutputFile(const std::string& path, const char* what);
  ~OutputFile();  // not committed: the unnamed (or temporary) file goes away
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  bool enabled() const { return fd_ >= 0; }
  void write(std::string_view text);  // never throws; remembers the first error
  bool failed() const { return err_ != 0; }
  std::string error_text() const;     // "Couldn't write the JSON file X: <strerror>"
  // Gives the file its name (after flushing it to disk). Throws SetupError
  // with error_text() if any write failed, or if the rename does.
  void commit();

 private:
  void discard() noexcept;
  std::string path_, what_;
  std::string target_;      // the regular file the name resolves to (a symlink followed)
  std::string temp_path_;   // the named temporary (no O_TMPFILE here), else ""
  int fd_ = -1;
  bool in_place_ = false;   // device, FIFO or stdout: written directly
  bool unnamed_ = false;    // O_TMPFILE: linked into place by commit()
  bool committed_ = false;
  int err_ = 0;
};

// JSON lines (one record per line) into an OutputFile.
class JsonOutput {
 public:
  JsonOutput() = default;
  explicit JsonOutput(const std::string& path) : file_(path, "JSON") {}
  void write(const nlohmann::json& record) {
    if (file_.enabled()) file_.write(record.dump() + "\n");
  }
  OutputFile& file() { return file_; }

 private:
  OutputFile file_;
};

}  // namespace rateline::blocktest
