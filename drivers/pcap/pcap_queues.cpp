#include "pcap/pcap_queues.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "net/pcap_file.hpp"
#include "util/clock.hpp"
#include "wire/decode.hpp"
#include "wire/test_payload.hpp"

namespace rateline::drivers {
namespace {

// The send stamp the engine wrote into this frame's payload (CLOCK_MONOTONIC
// ns); a frame that is not ours (a replayed stranger's) gets the clock now.
uint64_t send_stamp(const uint8_t* frame, uint32_t len, uint32_t headers_len) {
  if (len < headers_len + wire::kShortHeaderBytes) return now_ns();
  const uint8_t* p = frame + headers_len;
  if (p[0] == wire::kShortTag && p[1] == wire::kShortVersionKind)
    return wire::extend_stamp48(wire::detail::load_be(p + 12, 6), now_ns());
  if (len >= headers_len + wire::kHeaderBytes && wire::detail::load_be(p, 4) == wire::kMagic)
    return wire::detail::load_be(p + 16, 8);
  return now_ns();
}

}  // namespace

PcapTxQueue::PcapTxQueue(const PcapTxConfig& cfg)
    : cfg_(cfg), buffer_(size_t{cfg.batch} * cfg.frame_bytes), slots_(cfg.batch) {
  for (uint32_t i = 0; i < cfg.batch; ++i)
    slots_[i] = {buffer_.data() + size_t{i} * cfg.frame_bytes, cfg.frame_bytes, 0, 0, true};
  out_.reserve(kWriteBytes + size_t{cfg.batch} * (net::kPcapRecordHeaderBytes + cfg.frame_bytes));
}

engine::CommitResult PcapTxQueue::commit(std::span<engine::TxSlot> s) {
  const auto n = static_cast<uint32_t>(s.size());
  if (error_) {  // the file takes no more: these are lost too (counted as sender errors after the run)
    lost_ += n;
    return {n, 0, 0};
  }
  for (const engine::TxSlot& slot : s) {
    const size_t at = out_.size();
    out_.resize(at + net::kPcapRecordHeaderBytes + slot.len);
    const uint64_t t = send_stamp(slot.data, slot.len, cfg_.headers_len) + static_cast<uint64_t>(cfg_.epoch_offset_ns);
    net::write_pcap_record_header(out_.data() + at, t, slot.len);
    std::memcpy(out_.data() + at + net::kPcapRecordHeaderBytes, slot.data, slot.len);
  }
  out_records_ += n;
  if (out_.size() >= kWriteBytes) write_out();
  return {n, 0, 0};
}

void PcapTxQueue::flush() {
  if (!error_) write_out();
}

void PcapTxQueue::write_out() {
  size_t done = 0;
  while (done < out_.size()) {
    const ssize_t w = ::write(cfg_.fd, out_.data() + done, out_.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      error_ = w < 0 ? errno : ENOSPC;
      lost_ += out_records_;
      out_.clear();
      out_records_ = 0;
      return;
    }
    done += static_cast<size_t>(w);
  }
  out_.clear();
  out_records_ = 0;
}

}  // namespace rateline::drivers
