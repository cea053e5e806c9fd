#include "limits.hpp"

#include "backend.hpp"

namespace rateline::ceiling {

namespace {

std::string bytes_text(int64_t b) {
  if (b >= (int64_t{1} << 20) && b % (int64_t{1} << 20) == 0) return std::to_string(b >> 20) + "M";
  if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + "k";
  return std::to_string(b);
}

std::string seconds_text(uint32_t ms) {
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
}

}  // namespace

std::optional<Refusal> check_limits(const proto::TrialRequest& t, const TrialLimits& l) {
  auto limit = [](std::string text) { return Refusal{"limit", std::move(text)}; };
  if (t.threads > l.max_threads)
    return limit("threads=" + std::to_string(t.threads) + " is over this receiver's cap --max-threads " +
                 std::to_string(l.max_threads));
  if (t.rcvbuf > l.max_rcvbuf)
    return limit("rcvbuf=" + std::to_string(t.rcvbuf) + " is over this receiver's cap --max-rcvbuf " +
                 bytes_text(l.max_rcvbuf));
  if (t.port < l.port_lo || t.port > l.port_hi)
    return limit("port=" + std::to_string(t.port) + " is outside this receiver's --ports " + std::to_string(l.port_lo) +
                 "-" + std::to_string(l.port_hi));
  if (t.max_ms > l.max_trial_ms)
    return limit("max_ms=" + std::to_string(t.max_ms) + " is over this receiver's cap --max-trial " +
                 seconds_text(l.max_trial_ms) + " (a sender's --trial T asks about 2T + drain + 10s)");
  if (t.slow_us && !l.allow_test_aids)
    return Refusal{"refused", "slow_us is a test aid: this receiver takes it only when started with "
                              "--serve-allow-test-aids"};
  if (drivers::describe_backend(t.backend).eal_args && !l.allow_dpdk)
    return Refusal{"refused", "backend=dpdk: this receiver offers DPDK only on a device its operator named "
                              "(--serve-dpdk-device NAME)"};
  return std::nullopt;
}

}  // namespace rateline::ceiling
