// The ceiling control protocol: one TCP connection (or a pipe pair in the
// local lab) between the sender, which drives the search, and the receiver
// agent, which runs one rx per trial. ASCII lines, "\n"-terminated.
//
//   line    = VERB *(SP key "=" value) [SP text]
//   VERB    = 1*16 upper-case letters
//   key     = 1*16 of [a-z_];  value = 1*64 of [A-Za-z0-9_.:+-]
//
// Requests (sender -> receiver), at most kMaxRequestBytes each, key=value only:
//   HELLO version=1                      -> OK version=1, or, from an agent with a key (auth.hpp):
//                                           CHALLENGE nonce=<64 hex>
//   AUTH nonce=<64 hex> mac=<64 hex>     -> OK version=1 mac=<64 hex> (the agent's proof)
//   PING                                 -> PONG (any time)
//   TRIAL id=N size=S port=P idle_ms=I max_ms=M [backend=B] [rcvbuf=BYTES] [slow_us=U] [threads=T]
//                                        -> READY id=N once rx listens, later RESULT id=N {json}
//   STOP id=N                            -> ends trial N's rx now; its RESULT follows
//   BYE                                  -> OK, then the receiver closes the connection
// Replies (receiver -> sender), at most kMaxReplyBytes each:
//   ERR code=C [id=N] text               C: malformed | too-long | out-of-order | unknown-verb |
//                                           bad-value | busy | rx-failed |
//                                           auth (no key, or not this agent's key: it closes the connection) |
//                                           limit (over one of the agent's caps, named in text) |
//                                           refused (a test aid, or dpdk, not offered by this agent) |
//                                           timeout (idle or session limit: the agent closes the connection)
//   RESULT id=N {json}                   rx's JSON result record without its per-stream rows
//
// Order: HELLO first (then AUTH when challenged: before that, any error
// closes the connection); one trial at a time; STOP only for the running trial.
// Anything else is answered with ERR and otherwise ignored: the connection
// and the server stay up, until the agent's time limits end the session
// (ERR code=timeout, carrying the running trial's id if there is one). An over-long line is answered once with
// ERR code=too-long and skipped up to its newline. The receiver runs nothing
// but rx with these numeric parameters: no paths, no commands, no strings
// beyond the backend name, which must be one of rx's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rateline::ceiling::proto {

inline constexpr int kVersion = 1;
inline constexpr size_t kMaxRequestBytes = 512;
inline constexpr size_t kMaxReplyBytes = 64 * 1024;
inline constexpr size_t kMaxFields = 16;

struct Message {
  std::string verb;
  std::vector<std::pair<std::string, std::string>> fields;  // in order; keys unique
  std::string text;                                         // the rest of the line, from the first non-field token

  const std::string* get(std::string_view key) const;
};

// Parses one line (without its newline). nullopt + *error when malformed.
std::optional<Message> parse(std::string_view line, std::string* error);

struct TrialRequest {
  uint64_t id = 0;
  uint32_t size = 1400;       // UDP payload bytes
  uint16_t port = 9000;       // UDP port rx listens on
  uint32_t idle_ms = 1000;    // rx --idle: how long to wait after the last packet
  uint32_t max_ms = 60000;    // rx --duration: the trial's hard limit
  std::string backend = "auto";
  int64_t rcvbuf = -1;        // rx --rcvbuf; -1 = rx's default
  uint32_t slow_us = 0;       // rx --test-slow-us (TEST AID)
  uint32_t threads = 1;
};

// Validates a TRIAL message. nullopt + *code, *error when a field is missing or out of range.
std::optional<TrialRequest> trial_from(const Message& m, std::string* code, std::string* error);
std::string to_line(const TrialRequest& t);

// Splits a byte stream into lines of at most max_bytes (newline included).
class LineSplitter {
 public:
  explicit LineSplitter(size_t max_bytes) : max_(max_bytes) {}
  struct Item {
    std::string line;     // without the newline
    bool too_long = false;
  };
  // Feeds bytes; complete lines (and too-long markers) come out of next().
  void feed(std::string_view bytes);
  std::optional<Item> next();
  bool has_partial() const { return !buf_.empty() || skipping_; }

 private:
  size_t max_;
  std::string buf_;
  bool skipping_ = false;  // inside an over-long line: drop up to its newline
  std::vector<Item> ready_;
  size_t ready_pos_ = 0;
};

}  // namespace rateline::ceiling::proto
