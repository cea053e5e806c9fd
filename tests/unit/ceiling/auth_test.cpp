#include "tools/ceiling/auth.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

using namespace rateline::ceiling::auth;

namespace {

// A file in a fresh temporary directory, removed with it.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/rateline-auth-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() {
    for (const char* f : {"/key", "/loose", "/short", "/made"}) ::unlink((path + f).c_str());
    ::rmdir(path.c_str());
  }
  std::string write(const char* name, const std::string& bytes, mode_t mode) const {
    const std::string p = path + name;
    std::ofstream(p, std::ios::binary) << bytes;
    ::chmod(p.c_str(), mode);
    return p;
  }
};

std::string counting_bytes(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(i));
  return s;
}

std::string error_of(const std::string& path) {
  try {
    load_key_file(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(loaded)";
}

TEST(CeilingAuth, KnownAnswerMatchesHmacSha512Truncated) {
  // Computed outside libsodium (Python: hmac.new(blake2b(file, 32), label + b"\0" + A + C, sha512)[:32]),
  // so the construction documented in auth.hpp is what the code does.
  TempDir d;
  const Key key = load_key_file(d.write("/key", counting_bytes(32), 0600));
  Nonce a, c;
  a.fill(0xaa);
  c.fill(0x55);
  EXPECT_EQ(proof(key, Role::client, a, c), "e32892b8d4f1f03b67c72256b3152df316869e242f4d3268a8402d0ff059b880");
  EXPECT_EQ(proof(key, Role::agent, a, c), "031f77ed5d9a26e7473adf2fe94a0c375493b0ca1c44ff6028efa6a2c9828179");
}

TEST(CeilingAuth, ProofBindsKeyRoleAndBothNonces) {
  TempDir d;
  const Key key = load_key_file(d.write("/key", counting_bytes(40), 0600));
  const Key other = load_key_file(d.write("/made", counting_bytes(41), 0400));
  const Nonce a = fresh_nonce(), c = fresh_nonce(), a2 = fresh_nonce();
  ASSERT_NE(a, a2);
  const std::string p = proof(key, Role::client, a, c);
  EXPECT_TRUE(verify(key, Role::client, a, c, p));
  EXPECT_FALSE(verify(other, Role::client, a, c, p));     // wrong key
  EXPECT_FALSE(verify(key, Role::agent, a, c, p));        // reflected to the other role
  EXPECT_FALSE(verify(key, Role::client, a2, c, p));      // replayed against a new challenge
  EXPECT_FALSE(verify(key, Role::client, a, a2, p));      // another client nonce
  EXPECT_FALSE(verify(key, Role::client, a, c, p.substr(0, 62)));
  EXPECT_FALSE(verify(key, Role::client, a, c, p.substr(0, 62) + "zz"));
  EXPECT_FALSE(verify(key, Role::client, a, c, ""));
}

TEST(CeilingAuth, KeyFileChecks) {
  TempDir d;
  const std::string loose = error_of(d.write("/loose", counting_bytes(32), 0640));
  EXPECT_NE(loose.find("mode 0640"), std::string::npos) << loose;
  EXPECT_NE(loose.find("chmod 600"), std::string::npos) << loose;
  const std::string shrt = error_of(d.write("/short", counting_bytes(31), 0600));
  EXPECT_NE(shrt.find("31 bytes"), std::string::npos) << shrt;
  EXPECT_NE(shrt.find("--make-key"), std::string::npos) << shrt;
  EXPECT_NE(error_of(d.path).find("not a regular file"), std::string::npos);
  EXPECT_NE(error_of(d.path + "/absent").find("No such file"), std::string::npos);
}

TEST(CeilingAuth, MakeKeyWritesAPrivateKeyAndNeverOverwrites) {
  TempDir d;
  const std::string p = d.path + "/made";
  make_key_file(p);
  struct stat st {};
  ASSERT_EQ(stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_size, static_cast<off_t>(kKeyBytes));
  EXPECT_NO_THROW(load_key_file(p));
  EXPECT_THROW(make_key_file(p), std::runtime_error);
}

TEST(CeilingAuth, Hex) {
  const unsigned char b[3] = {0x00, 0xab, 0xff};
  EXPECT_EQ(to_hex(b, 3), "00abff");
  unsigned char out[3] = {};
  EXPECT_TRUE(parse_hex("00ABff", out, 3));
  EXPECT_EQ(out[2], 0xff);
  EXPECT_FALSE(parse_hex("00abf", out, 3));
  EXPECT_FALSE(parse_hex("00abfg", out, 3));
  EXPECT_FALSE(parse_hex("00ab ff", out, 3));
}

}  // namespace
