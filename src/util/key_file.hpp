// A shared secret in a file, as both ends of a run read it: ceiling's agent
// authentication (tools/ceiling/auth.hpp) and the per-packet tag of pktgen
// and rx (wire/packet_tag.hpp) take the same --key-file. The secret is
// BLAKE2b-256 (libsodium's crypto_generichash) of the file's bytes, so any
// file of 32 or more random bytes is a key; each use derives its own key
// from it, so a proof of one kind is never a tag of the other.
#pragma once

#include <array>
#include <cstddef>
#include <string>

namespace rateline::secret {

inline constexpr size_t kKeyBytes = 32;
inline constexpr size_t kMinKeyFileBytes = 32;
inline constexpr size_t kMaxKeyFileBytes = 4096;  // a larger file is not a key someone meant to give

using Key = std::array<unsigned char, kKeyBytes>;

// Reads a key file: a regular file of kMinKeyFileBytes..kMaxKeyFileBytes that
// neither group nor others may access (mode & 077 == 0). Throws
// std::runtime_error with one line saying what is wrong and what to run.
Key load_key_file(const std::string& path);

// Writes kKeyBytes random bytes to a new file `path` (mode 0600; an existing
// file is never overwritten). Throws std::runtime_error naming the cause.
void make_key_file(const std::string& path);

// libsodium's one-time set-up (safe to call more than once, from any thread).
void ensure_sodium();

}  // namespace rateline::secret
