#include "wire/packet_tag.hpp"

#include <sodium.h>

#include <algorithm>
#include <string_view>

namespace rateline::wire {

static_assert(sizeof(PacketKey::bytes) == crypto_shorthash_siphash24_KEYBYTES);
static_assert(kTagBytes == crypto_shorthash_siphash24_BYTES);

PacketKey packet_key(const secret::Key& secret) {
  secret::ensure_sodium();
  constexpr std::string_view label = "rateline packet tag v1";
  PacketKey k;
  crypto_generichash(k.bytes.data(), k.bytes.size(), reinterpret_cast<const unsigned char*>(label.data()), label.size(),
                     secret.data(), secret.size());
  return k;
}

uint64_t packet_tag(const PacketKey& key, const uint8_t* test_payload, uint32_t len) {
  uint64_t tag;
  crypto_shorthash_siphash24(reinterpret_cast<unsigned char*>(&tag), test_payload, std::min(len, kTagCoverBytes),
                             key.bytes.data());
  return tag;
}

}  // namespace rateline::wire
