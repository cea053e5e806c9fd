#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "util/errors.hpp"

namespace rateline::blocktest {
namespace {

std::string dir_of(const std::string& p) {
  const auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

std::string base_of(const std::string& p) {
  const auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// A hidden name beside `target` that nothing uses yet: ".<name>.<random>.tmp".
std::string temp_name(const std::string& target) {
  static std::random_device rd;
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, ".%08x.tmp", rd());
  return dir_of(target) + "/." + base_of(target) + suffix;
}

}  // namespace

OutputFile::OutputFile(const std::string& path, const char* what) : path_(path), what_(what) {
  if (path.empty()) return;
  if (path == "-") {
    fd_ = STDOUT_FILENO;
    in_place_ = true;
    return;
  }
  const std::string create_failed = "Couldn't create the " + what_ + " file " + path + ": ";
  std::string target = path;
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw SetupError(create_failed + "it is a directory");
    if (!S_ISREG(st.st_mode)) {
      fd_ = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
      if (fd_ < 0) throw SetupError(create_failed + errno_text(errno));
      in_place_ = true;
      return;
    }
    // A symlink to a regular file: the file it names is replaced, not the link.
    char real[PATH_MAX];
    if (::realpath(path.c_str(), real)) target = real;
  }
  target_ = target;
  fd_ = ::open(dir_of(target).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  if (fd_ >= 0) {
    unnamed_ = true;
    return;
  }
  // EISDIR / EOPNOTSUPP / EINVAL: no O_TMPFILE in this kernel or filesystem.
  if (errno != EISDIR && errno != EOPNOTSUPP && errno != EINVAL) throw SetupError(create_failed + errno_text(errno));
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::string t = temp_name(target);
    fd_ = ::open(t.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) {
      temp_path_ = t;
      return;
    }
    if (errno != EEXIST) throw SetupError(create_failed + errno_text(errno));
  }
  throw SetupError(create_failed + "no unused temporary name");
}

OutputFile::~OutputFile() {
  if (!committed_) discard();
}

void OutputFile::discard() noexcept {
  if (fd_ >= 0 && fd_ != STDOUT_FILENO) ::close(fd_);
  fd_ = -1;
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
  temp_path_.clear();
}

void OutputFile::write(std::string_view text) {
  if (fd_ < 0 || err_) return;
  if (fd_ == STDOUT_FILENO) std::fflush(stdout);  // after what printf holds, in order
  while (!text.empty()) {
    const ssize_t n = ::write(fd_, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;  // a stop signal; the record still goes out whole
    if (n <= 0) {
      err_ = n < 0 ? errno : EIO;
      return;
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
}

std::string OutputFile::error_text() const {
  return "Couldn't write the " + what_ + " file " + path_ + ": " + errno_text(err_);
}

void OutputFile::commit() {
  if (fd_ < 0 || committed_) return;
  const auto fail = [&](int err) {
    err_ = err;
    const std::string m = error_text();
    discard();
    throw SetupError(m);
  };
  if (err_) fail(err_);
  if (in_place_) {
    committed_ = true;
    if (fd_ != STDOUT_FILENO && ::close(fd_) != 0) {
      fd_ = -1;
      fail(errno);
    }
    fd_ = -1;
    return;
  }
  // On disk before the name points at it: a crash of the machine after the
  // rename must not leave the name on an empty file either.
  if (::fdatasync(fd_) != 0) fail(errno);
  if (unnamed_) {
    // linkat cannot replace a name: link under a fresh one, then rename.
    for (int attempt = 0; attempt < 16 && temp_path_.empty(); ++attempt) {
      const std::string t = temp_name(target_);
      // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc/self/fd does not.
      int rc = ::linkat(fd_, "", AT_FDCWD, t.c_str(), AT_EMPTY_PATH);
      if (rc != 0 && errno != EEXIST) {
        const std::string self = "/proc/self/fd/" + std::to_string(fd_);
        rc = ::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, t.c_str(), AT_SYMLINK_FOLLOW);
      }
      if (rc == 0) temp_path_ = t;
      else if (errno != EEXIST) fail(errno);
    }
    if (temp_path_.empty()) fail(EEXIST);
  }
  if (::rename(temp_path_.c_str(), target_.c_str()) != 0) fail(errno);
  temp_path_.clear();
  ::close(fd_);
  fd_ = -1;
  committed_ = true;
}

}  // namespace rateline::blocktest
