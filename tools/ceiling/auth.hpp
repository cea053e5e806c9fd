// Authentication of the control channel: a shared secret (a key file on both
// hosts) and a challenge-response per session, built from libsodium's
// crypto_auth (HMAC-SHA-512-256). The secret never crosses the wire; only
// nonces and MACs over them do. Nothing here encrypts: trial parameters and
// results travel in the clear (README, "The agent's security model").
//
//   sender                                   agent (--serve --key-file)
//   HELLO version=1                      ->
//                                        <-  CHALLENGE nonce=<A: 32 random bytes, hex>
//   AUTH nonce=<C: 32 random bytes, hex>
//        mac=<crypto_auth(K, "rateline ceiling v1 client" 0 A C)>  ->
//                                        <-  OK version=1 mac=<crypto_auth(K, "rateline ceiling v1 agent" 0 A C)>
//
// A is fresh for every connection, so a captured AUTH line fails on any
// other connection (replay). The MAC binds both nonces, and the two roles
// MAC different labels, so a proof cannot be reflected back to its sender.
// The agent's proof lets the sender know it talks to a holder of the key.
// K is the key file's secret (util/key_file.hpp), shared with pktgen's and
// rx's per-packet tags, which derive a key of their own from it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/key_file.hpp"

namespace rateline::ceiling::auth {

using secret::kKeyBytes;                       // = crypto_auth_KEYBYTES
inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;        // crypto_auth_BYTES

using secret::Key;
using Nonce = std::array<unsigned char, kNonceBytes>;

enum class Role { client, agent };

using secret::load_key_file;
using secret::make_key_file;

Nonce fresh_nonce();

// Lower-case hex of the bytes; parse_hex: nullopt-like false unless `hex` is exactly 2*N hex digits.
std::string to_hex(const unsigned char* bytes, size_t n);
bool parse_hex(std::string_view hex, unsigned char* out, size_t n);

// The proof of `role` for the nonce pair, as hex (what goes on the wire).
std::string proof(const Key& key, Role role, const Nonce& agent_nonce, const Nonce& client_nonce);
// Whether `mac_hex` is that proof (constant-time comparison: crypto_auth_verify).
bool verify(const Key& key, Role role, const Nonce& agent_nonce, const Nonce& client_nonce, std::string_view mac_hex);

}  // namespace rateline::ceiling::auth
