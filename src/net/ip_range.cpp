#include "net/ip_range.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <stdexcept>

#include "net/iface.hpp"

namespace rateline::net {
namespace {

IpAddress parse_one(const std::string& text) {
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return IpAddress::v4(v4);
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) return IpAddress::v6(v6);
  throw std::invalid_argument("'" + text + "' is not a numeric IPv4 or IPv6 address");
}

// The address's last 8 bytes (IPv4: all 4) as a number.
uint64_t low64(const IpAddress& a) {
  const size_t len = a.is_v6 ? 16 : 4;
  uint64_t v = 0;
  for (size_t i = len >= 8 ? len - 8 : 0; i < len; ++i) v = v << 8 | a.bytes[i];
  return v;
}

}  // namespace

IpAddress IpRange::at(uint32_t i) const {
  IpAddress a = first;
  uint32_t carry = i;
  for (size_t b = a.is_v6 ? 16 : 4; b-- > 0 && carry;) {
    const uint32_t sum = a.bytes[b] + (carry & 0xff);
    a.bytes[b] = static_cast<uint8_t>(sum);
    carry = (carry >> 8) + (sum >> 8);
  }
  return a;
}

std::string IpRange::text() const {
  return count == 1 ? ip_text(first) : ip_text(first) + "-" + ip_text(at(count - 1));
}

std::string ip_text(const IpAddress& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(a.is_v6 ? AF_INET6 : AF_INET, a.bytes.data(), buf, sizeof buf);
  return buf;
}

IpRange parse_ip_range(std::string_view text, uint32_t max_count) {
  const size_t dash = text.find('-');
  IpRange r;
  r.first = parse_one(std::string(text.substr(0, dash)));
  if (dash == std::string_view::npos) return r;
  const IpAddress last = parse_one(std::string(text.substr(dash + 1)));
  if (last.is_v6 != r.first.is_v6) throw std::invalid_argument("both ends of a range are IPv4 or both IPv6");
  if (last.bytes < r.first.bytes) throw std::invalid_argument("a range runs from the lower address to the higher one");
  // IPv6: ranges that differ in the first 64 bits are far past any flow limit.
  const bool same_prefix = !r.first.is_v6 || std::equal(r.first.bytes.begin(), r.first.bytes.begin() + 8, last.bytes.begin());
  const uint64_t a = low64(r.first), b = low64(last);
  if (!same_prefix || b - a >= max_count)
    throw std::invalid_argument("at most " + std::to_string(max_count) + " addresses (one flow each)");
  r.count = static_cast<uint32_t>(b - a + 1);
  return r;
}

namespace {
uint64_t mac_number(const MacAddress& m) {
  uint64_t v = 0;
  for (uint8_t b : m) v = v << 8 | b;
  return v;
}
}  // namespace

MacAddress MacRange::at(uint32_t i) const {
  uint64_t v = mac_number(first) + i;
  MacAddress m{};
  for (int k = 5; k >= 0; --k, v >>= 8) m[k] = static_cast<uint8_t>(v);
  return m;
}

MacRange parse_mac_range(std::string_view text, uint32_t max_count) {
  const size_t dash = text.find('-');
  MacRange r;
  r.first = parse_mac(std::string(text.substr(0, dash)));
  if (dash == std::string_view::npos) return r;
  const uint64_t a = mac_number(r.first), b = mac_number(parse_mac(std::string(text.substr(dash + 1))));
  if (b < a) throw std::invalid_argument("a range runs from the lower MAC to the higher one");
  if (b - a >= max_count) throw std::invalid_argument("at most " + std::to_string(max_count) + " MACs (one flow each)");
  r.count = static_cast<uint32_t>(b - a + 1);
  return r;
}

}  // namespace rateline::net
