// The agent's control address: what --serve "[ADDR:]PORT" names, and
// whether it can be reached from other hosts.
#pragma once

#include <string>

#include "socket/udp_socket.hpp"

namespace rateline::ceiling {

// The TCP address of --serve "[ADDR:]PORT" (ADDR numeric, IPv6 in brackets:
// [::1]:7700; default 127.0.0.1). Throws SetupError saying what is wrong with it.
drivers::SocketAddress listen_address(const std::string& spec);

// A non-blocking TCP socket listening on `addr` (backlog 128). Throws
// SetupError ("Couldn't listen on ADDR: <cause>").
int listen_on(const drivers::SocketAddress& addr);

// 127.0.0.0/8, ::1, or ::ffff:127.x.y.z: reachable from this host only.
bool is_loopback(const drivers::SocketAddress& a);

}  // namespace rateline::ceiling
