#include "util/key_file.hpp"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace rateline::secret {

namespace {

std::string octal_mode(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

}  // namespace

void ensure_sodium() {
  // Safe to call more than once (and from any thread); < 0 only when the library cannot work at all.
  if (sodium_init() < 0) throw std::runtime_error("Couldn't initialise libsodium");
}

Key load_key_file(const std::string& path) {
  ensure_sodium();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw std::runtime_error("--key-file " + path + ": " + std::strerror(errno));
  struct stat st {};
  std::vector<unsigned char> bytes;
  std::string problem;
  if (fstat(fd, &st) != 0) {
    problem = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    problem = "not a regular file";
  } else if (st.st_mode & 077) {
    problem = "mode " + octal_mode(st.st_mode) + " lets group or others access the secret: chmod 600 " + path;
  } else if (st.st_size < static_cast<off_t>(kMinKeyFileBytes) || st.st_size > static_cast<off_t>(kMaxKeyFileBytes)) {
    problem = std::to_string(st.st_size) + " bytes; a key is " + std::to_string(kMinKeyFileBytes) + ".." +
              std::to_string(kMaxKeyFileBytes) + " random bytes (make one: ceiling --make-key " + path + ")";
  } else {
    bytes.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    if (got != bytes.size()) problem = "short read (the file changed while read?)";
  }
  ::close(fd);
  if (!problem.empty()) {
    sodium_memzero(bytes.data(), bytes.size());
    throw std::runtime_error("--key-file " + path + ": " + problem);
  }
  Key key;
  crypto_generichash(key.data(), key.size(), bytes.data(), bytes.size(), nullptr, 0);
  sodium_memzero(bytes.data(), bytes.size());
  return key;
}

void make_key_file(const std::string& path) {
  ensure_sodium();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    throw std::runtime_error("Couldn't create key file " + path + ": " + std::strerror(errno) +
                             (errno == EEXIST ? " (an existing key is never overwritten: remove it first)" : ""));
  // The umask could only narrow 0600; fchmod makes sure it is exactly that.
  fchmod(fd, 0600);
  unsigned char bytes[kKeyBytes];
  randombytes_buf(bytes, sizeof bytes);
  const bool ok = ::write(fd, bytes, sizeof bytes) == static_cast<ssize_t>(sizeof bytes);
  const int write_errno = errno;
  sodium_memzero(bytes, sizeof bytes);
  if (::close(fd) != 0 || !ok) {
    ::unlink(path.c_str());
    throw std::runtime_error("Couldn't write key file " + path + ": " + std::strerror(ok ? errno : write_errno));
  }
}

}  // namespace rateline::secret
