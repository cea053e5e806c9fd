#include "rx_command.hpp"

#include <algorithm>

#include "backend.hpp"

namespace rateline::ceiling {

std::vector<std::string> rx_command(const proto::TrialRequest& req, const ServeConfig& cfg) {
  std::vector<std::string> argv = {cfg.rx_bin, "--bind", cfg.rx_bind, "--port", std::to_string(req.port),
                                   "--json", "/dev/fd/3", "--quiet", "--idle", std::to_string(req.idle_ms) + "ms",
                                   "--duration", std::to_string(req.max_ms) + "ms", "--backend", req.backend,
                                   "--max-size", std::to_string(std::max<uint32_t>(9000, req.size)),
                                   "--threads", std::to_string(req.threads)};
  if (req.rcvbuf >= 0) {
    argv.push_back("--rcvbuf");
    argv.push_back(std::to_string(req.rcvbuf));
  }
  const bool eal = drivers::describe_backend(req.backend).eal_args;
  if (eal && !cfg.dpdk_device.empty()) {
    // Only the device the operator named: EAL probes just that one (-a) unless the operator gave the EAL
    // arguments too (a vdev needs them), and rx takes that port and no other.
    argv.push_back("--device");
    argv.push_back(cfg.dpdk_device);
    argv.push_back("--dpdk-args");
    argv.push_back(cfg.rx_dpdk_args.empty() ? "-a " + cfg.dpdk_device : cfg.rx_dpdk_args);
  } else if (eal && !cfg.rx_dpdk_args.empty()) {
    // The EAL arguments name devices and may load drivers: they come from this host's command line only.
    argv.push_back("--dpdk-args");
    argv.push_back(cfg.rx_dpdk_args);
  }
  if (req.slow_us) {
    argv.push_back("--test-slow-us");
    argv.push_back(std::to_string(req.slow_us));
  }
  return argv;
}

}  // namespace rateline::ceiling
