// The receiver agent: speaks the control protocol (protocol.hpp) and runs
// one rx per trial, the same binary and code path a user runs by hand.
#pragma once

#include <string>

#include "socket/udp_socket.hpp"

namespace rateline::ceiling {

struct ServeConfig {
  std::string listen;        // "[ADDR:]PORT" for TCP; "" = one session on stdin/stdout
  std::string rx_bind;       // rx --bind (default 0.0.0.0)
  std::string rx_bin;        // rx program
  std::string rx_dpdk_args;  // rx --dpdk-args for backend=dpdk: the receiver's own choice, never sent over the wire
  bool verbose = true;       // log sessions and trials to stderr
};

// The TCP address of --serve "[ADDR:]PORT" (ADDR numeric, default 0.0.0.0).
// Throws SetupError saying what is wrong with it.
drivers::SocketAddress listen_address(const std::string& spec);

// Runs until SIGINT/SIGTERM (TCP) or until stdin closes (stdio). Returns the exit code.
int serve(const ServeConfig& cfg);

}  // namespace rateline::ceiling
