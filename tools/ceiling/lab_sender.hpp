// The local lab's sender when the user named none: the fastest pktgen
// backend that works on this host. A receiver's NDR is found only when the
// sender outruns it; a slower sender (afpacket here: 224 kpps at 1518 B,
// below rx's socket ceiling) makes every answer ">=" (sender-limited).
#pragma once

#include <string>

#include "lab.hpp"

namespace rateline::ceiling {

struct LabSender {
  std::string backend;  // "" = none of the fast ones worked: pktgen's auto choice
  std::string note;     // one line for the start of the run: what was tried, what was taken
};

// Tries xdp, afxdp, afpacket in that order with a short pktgen run across
// the lab (100 frames); the first that sends them all is taken. Turns the
// receiver's NAPI on for xdp (and off again if xdp does not work).
LabSender fastest_lab_sender(VethLab& lab, const std::string& pktgen_bin);

}  // namespace rateline::ceiling
