#include "net/sender_address.hpp"

#include <arpa/inet.h>

namespace rateline::net {

std::string SenderAddress::text() const {
  if (*this == SenderAddress{}) return "?";
  char buf[INET6_ADDRSTRLEN];
  if (is_v4()) {
    inet_ntop(AF_INET, ip.data() + 12, buf, sizeof buf);
    return std::string(buf) + ":" + std::to_string(port);
  }
  inet_ntop(AF_INET6, ip.data(), buf, sizeof buf);
  return "[" + std::string(buf) + "]:" + std::to_string(port);
}

}  // namespace rateline::net
