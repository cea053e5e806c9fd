#include "auth.hpp"

#include <sodium.h>

#include <stdexcept>
#include <vector>

namespace rateline::ceiling::auth {

namespace {

static_assert(kKeyBytes == crypto_auth_KEYBYTES && kMacBytes == crypto_auth_BYTES);

using secret::ensure_sodium;

// "<label>\0" A C: the label keeps the two roles' proofs apart.
std::vector<unsigned char> proof_input(Role role, const Nonce& agent_nonce, const Nonce& client_nonce) {
  const std::string_view label = role == Role::client ? "rateline ceiling v1 client" : "rateline ceiling v1 agent";
  std::vector<unsigned char> m(label.begin(), label.end());
  m.push_back(0);
  m.insert(m.end(), agent_nonce.begin(), agent_nonce.end());
  m.insert(m.end(), client_nonce.begin(), client_nonce.end());
  return m;
}

}  // namespace

Nonce fresh_nonce() {
  ensure_sodium();
  Nonce n;
  randombytes_buf(n.data(), n.size());
  return n;
}

std::string to_hex(const unsigned char* bytes, size_t n) {
  std::string hex(2 * n + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), bytes, n);
  hex.pop_back();
  return hex;
}

bool parse_hex(std::string_view hex, unsigned char* out, size_t n) {
  if (hex.size() != 2 * n) return false;
  size_t len = 0;
  const char* end = nullptr;
  return sodium_hex2bin(out, n, hex.data(), hex.size(), nullptr, &len, &end) == 0 && len == n &&
         end == hex.data() + hex.size();
}

std::string proof(const Key& key, Role role, const Nonce& agent_nonce, const Nonce& client_nonce) {
  const std::vector<unsigned char> m = proof_input(role, agent_nonce, client_nonce);
  unsigned char mac[kMacBytes];
  crypto_auth(mac, m.data(), m.size(), key.data());
  return to_hex(mac, sizeof mac);
}

bool verify(const Key& key, Role role, const Nonce& agent_nonce, const Nonce& client_nonce, std::string_view mac_hex) {
  unsigned char mac[kMacBytes];
  if (!parse_hex(mac_hex, mac, sizeof mac)) return false;
  const std::vector<unsigned char> m = proof_input(role, agent_nonce, client_nonce);
  return crypto_auth_verify(mac, m.data(), m.size(), key.data()) == 0;
}

}  // namespace rateline::ceiling::auth
