#include "report/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>

#include "util/errors.hpp"

namespace rateline::report {

namespace {

std::string message(const char* verb, const std::string& what, const std::string& path, int err) {
  return std::string("Couldn't ") + verb + " " + what + " " + path + ": " + errno_text(err);
}

// A new temporary file beside `path`, with the permissions (and, as root, the
// owner) of the file it will replace. Returns -1 with errno set.
int create_temp(const std::string& path, const struct stat* replaced, std::string& tmp) {
  static std::atomic<unsigned> serial{0};
  tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(serial.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd >= 0 && replaced) {
    (void)fchown(fd, replaced->st_uid, replaced->st_gid);  // fails unless root: then the file is ours, as fopen's would be
    (void)fchmod(fd, replaced->st_mode & 07777);
  }
  return fd;
}

// /dev/stdout, /dev/fd/N and /proc/self/fd/N name an open descriptor, which
// may well be a regular file (a shell's `> out`): replacing that file would
// leave the descriptor's owner with the old, unlinked one. Written in place.
bool replaceable(const std::string& path, bool exists, const struct stat& st) {
  if (path.starts_with("/dev/") || path.starts_with("/proc/")) return false;
  return !exists || S_ISREG(st.st_mode);
}

// The file a symlink leads to: the link stays, its file is replaced.
std::string regular_target(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
  char* real = ::realpath(path.c_str(), nullptr);
  if (!real) return path;
  std::string target = real;
  std::free(real);
  return target;
}

// A directory we may not create files in can still hold a file we may write
// (a pre-made log file, say): then that file is written in place.
bool write_in_place_instead(int create_errno, const struct stat* replaced, const std::string& path) {
  return replaced && (create_errno == EACCES || create_errno == EPERM || create_errno == EROFS) &&
         ::access(path.c_str(), W_OK) == 0;
}

}  // namespace

OutputFile::OutputFile(const std::string& path, std::string what) : path_(path), what_(std::move(what)) {
  if (path.empty()) return;
  if (path == "-") {
    f_ = stdout;
    return;
  }
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (replaceable(path, exists, st)) {
    target_ = regular_target(path);
    const int fd = create_temp(target_, exists ? &st : nullptr, tmp_);
    if (fd >= 0) {
      f_ = ::fdopen(fd, "w");
      if (!f_) {
        const int e = errno;
        ::close(fd);
        ::unlink(tmp_.c_str());
        throw SetupError(message("create", what_, path, e));
      }
      return;
    }
    const int e = errno;
    tmp_.clear();
    if (!write_in_place_instead(e, exists ? &st : nullptr, path)) throw SetupError(message("create", what_, path, e));
  }
  f_ = std::fopen(path.c_str(), "w");
  if (!f_) throw SetupError(message("create", what_, path, errno));
}

OutputFile::~OutputFile() {
  if (!f_) return;
  if (f_ == stdout) {
    std::fflush(f_);
    return;
  }
  std::fclose(f_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

void OutputFile::write(std::string_view text, bool flush) {
  if (!f_ || error_) return;
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), f_) != text.size() || (flush && std::fflush(f_) != 0))
    error_ = errno ? errno : EIO;
}

std::string OutputFile::commit() {
  if (!f_) return {};
  auto keep_first = [this](bool failed) {
    if (failed && !error_) error_ = errno ? errno : EIO;
  };
  errno = 0;
  keep_first(std::fflush(f_) != 0);
  // Synced before the rename: after a power loss PATH holds the old file or the whole new one.
  if (!tmp_.empty() && !error_) keep_first(::fsync(fileno(f_)) != 0);
  if (f_ != stdout) keep_first(std::fclose(f_) != 0);
  f_ = nullptr;
  if (!tmp_.empty()) {
    if (!error_) keep_first(::rename(tmp_.c_str(), target_.c_str()) != 0);
    if (error_) ::unlink(tmp_.c_str());
    tmp_.clear();
  }
  return error_ ? message("write", what_, path_, error_) : std::string();
}

std::string OutputFile::probe(const std::string& path, const std::string& what) {
  if (path.empty() || path == "-") return {};
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (!replaceable(path, exists, st))
    return ::access(path.c_str(), W_OK) == 0 ? std::string() : message("write", what, path, errno);
  std::string tmp;
  const int fd = create_temp(regular_target(path), nullptr, tmp);
  if (fd >= 0) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return {};
  }
  const int e = errno;
  return write_in_place_instead(e, exists ? &st : nullptr, path) ? std::string() : message("create", what, path, e);
}

void write_whole_file(const std::string& path, std::string_view text, const std::string& what) {
  OutputFile out(path, what);
  out.write(text, false);
  if (const std::string e = out.commit(); !e.empty()) throw SetupError(e);
}

}  // namespace rateline::report
