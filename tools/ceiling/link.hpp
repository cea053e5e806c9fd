// The sender's end of the control protocol (protocol.hpp): a TCP connection
// to `ceiling --serve` on the receiver, or pipes to a local agent process.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "auth.hpp"
#include "process.hpp"
#include "protocol.hpp"

namespace rateline::ceiling {

// The receiver refused or failed a request; what() carries its ERR text.
struct LinkError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ReceiverLink {
 public:
  static std::unique_ptr<ReceiverLink> connect_tcp(const std::string& host_port, uint64_t timeout_ns);
  static std::unique_ptr<ReceiverLink> spawn_agent(const std::vector<std::string>& argv);
  ~ReceiverLink();
  ReceiverLink(const ReceiverLink&) = delete;
  ReceiverLink& operator=(const ReceiverLink&) = delete;

  // HELLO, and with a key the challenge-response (auth.hpp): this end proves it holds the key, and the
  // receiver must prove it too. Throws LinkError saying which side lacks the key or has another one.
  void hello(const std::optional<auth::Key>& key);
  // Starts trial t; returns once its rx listens. Throws LinkError.
  void start(const proto::TrialRequest& t, uint64_t timeout_ns);
  // rx's result record for trial `id`. Sends STOP after stop_after_ns, throws LinkError after timeout_ns.
  nlohmann::json result(uint64_t id, uint64_t stop_after_ns, uint64_t timeout_ns);
  void stop(uint64_t id);

  void send_line(const std::string& line);  // adds the newline
  // Next reply line, parsed; nullopt on timeout. Throws LinkError when the receiver hung up.
  std::optional<proto::Message> read_reply(uint64_t timeout_ns);
  const std::string& describe() const { return describe_; }

 private:
  ReceiverLink() = default;
  int rfd_ = -1, wfd_ = -1;
  Child child_;
  proto::LineSplitter lines_{proto::kMaxReplyBytes};
  std::string describe_;
};

}  // namespace rateline::ceiling
