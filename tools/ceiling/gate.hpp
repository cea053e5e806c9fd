// The agent's door: every TCP connection to `ceiling --serve` passes here
// before it is a session. The gate accepts, counts connections against
// --max-clients, takes keyed clients through the challenge-response
// (auth.hpp) within kHandshakeTimeoutNs, and refuses everything else with
// one log line each (peer address and reason). One session runs at a time:
// a client admitted while one runs gets ERR code=busy.
//
// Single-threaded: the agent's poll loop (idle, or the running session's)
// adds the gate's descriptors to its own poll set and calls service() after
// every poll, so handshakes and their deadlines go on while a trial runs.
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth.hpp"
#include "protocol.hpp"

namespace rateline::ceiling {

struct ServeConfig;

// A pre-session connection must finish its handshake (HELLO, AUTH) this long
// after it connected: per message, not per byte, so a client that trickles a
// byte a second is dropped as surely as a silent one.
inline constexpr uint64_t kHandshakeTimeoutNs = 5'000'000'000ull;
// A session's request must be whole this long after its first byte arrived.
inline constexpr uint64_t kRequestTimeoutNs = 5'000'000'000ull;

// "1.2.3.4:5", "[::1]:5", or "(unknown address)".
std::string peer_text(const sockaddr_storage& addr, socklen_t len);

// Sends all of `data` on socket `fd` by `deadline_ns`. false with errno ETIMEDOUT when the peer did not take it.
bool send_by(int fd, std::string_view data, uint64_t deadline_ns);

// One line per refused or dropped client on stderr. A flood of refusals could
// fill a disk through the log: past kMaxLinesPerWindow in a 10 s window the
// rest are counted and summed up in one line when the window ends.
class RefusalLog {
 public:
  static constexpr uint32_t kMaxLinesPerWindow = 200;
  void line(const std::string& peer, const std::string& what);

 private:
  uint64_t window_start_ns_ = 0;
  uint32_t lines_ = 0, unlogged_ = 0;
};

// A connection that passed the gate.
struct Admitted {
  int fd = -1;
  std::string peer;
  bool greeted = false;                       // HELLO (and AUTH) already done
  proto::LineSplitter lines{proto::kMaxRequestBytes};  // what the client sent after its AUTH, if anything
};

class Gate {
 public:
  Gate(int listen_fd, const ServeConfig& cfg);
  ~Gate();
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  // Appends the listening socket and every connection in its handshake.
  void add_poll_fds(std::vector<pollfd>& fds);
  // After poll() on a set that add_poll_fds() filled: accepts, advances
  // handshakes, drops the ones past their deadline. With `session_peer` set a
  // session runs and nothing is admitted; else a connection that is through
  // comes back, and the caller runs its session.
  std::optional<Admitted> service(const std::vector<pollfd>& fds, const std::string* session_peer);

  // Log a refusal or drop (rate-bounded).
  void log(const std::string& peer, const std::string& what) { log_.line(peer, what); }

 private:
  struct Pending {
    int fd = -1;
    std::string peer;
    proto::LineSplitter lines{proto::kMaxRequestBytes};
    uint64_t opened_ns = 0;
    auth::Nonce agent_nonce{};
    bool challenged = false;  // HELLO answered with CHALLENGE; AUTH expected
    bool finished = false;    // closed or handed over: removed after this service()
  };

  void accept_all(bool& busy, std::optional<Admitted>& admitted, const std::string* session_peer);
  void read_from(Pending& p, bool& busy, std::optional<Admitted>& admitted, const std::string* session_peer);
  // One complete line of a keyed client's handshake.
  void step(Pending& p, const proto::LineSplitter::Item& item, bool& busy, std::optional<Admitted>& admitted,
            const std::string* session_peer);
  void refuse(Pending& p, const char* code, const std::string& text);

  int listen_fd_;
  const ServeConfig& cfg_;
  std::vector<std::unique_ptr<Pending>> pending_;
  size_t first_fd_index_ = 0;  // where add_poll_fds() put ours
  size_t polled_ = 0;          // how many of pending_ it put there
  RefusalLog log_;
};

}  // namespace rateline::ceiling
