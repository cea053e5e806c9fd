#include "lab_sender.hpp"

#include "backend.hpp"
#include "process.hpp"

namespace rateline::ceiling {

LabSender fastest_lab_sender(VethLab& lab, const std::string& pktgen_bin) {
  LabSender out;
  std::string passed_over;
  for (const char* name : {"xdp", "afxdp", "afpacket"}) {
    const drivers::BackendDescriptor& b = drivers::describe_backend(name);
    std::string why = b.open_tx ? b.why_not() : "not built";
    if (why.empty()) {
      if (b.tx_needs_peer_napi) lab.enable_receiver_napi();
      std::string err;
      const int rc = run_command({"ip", "netns", "exec", lab.ns_tx, pktgen_bin, "--backend", name, "--device", lab.if_tx,
                                  "--dst", lab.ip_rx, "--dst-mac", lab.mac_rx, "--count", "100", "--rate", "10k", "--size",
                                  "18", "--end-markers", "0", "--quiet"},
                                 nullptr, &err, 20'000'000'000ull);
      if (rc == 0) {
        out.backend = name;
        out.note = std::string("sender ") + name + ": the fastest pktgen backend that works here" +
                   (passed_over.empty() ? "" : " (" + passed_over + ")") + "; --tx-backend to choose another";
        return out;
      }
      if (b.tx_needs_peer_napi) lab.disable_receiver_napi();
      const size_t nl = err.find_last_not_of("\n");
      why = err.empty() ? "exit " + std::to_string(rc) : err.substr(0, nl + 1);
      if (const size_t last = why.rfind('\n'); last != std::string::npos) why = why.substr(last + 1);
    }
    passed_over += (passed_over.empty() ? "" : "; ") + std::string(name) + ": " + why;
  }
  out.note = "sender: pktgen's own choice (" + passed_over + ")";
  return out;
}

}  // namespace rateline::ceiling
