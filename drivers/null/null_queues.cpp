#include "null/null_queues.hpp"

#include <bit>

#include "util/clock.hpp"

namespace rateline::drivers {

NullTxQueue::NullTxQueue(uint32_t batch, uint32_t frame_bytes) : buffer_(size_t{batch} * frame_bytes), slots_(batch) {
  for (uint32_t i = 0; i < batch; ++i) slots_[i] = {buffer_.data() + size_t{i} * frame_bytes, frame_bytes, 0, 0, true};
}

NullRxQueue::NullRxQueue(const NullRxConfig& cfg)
    : cfg_(cfg),
      tag_bytes_(cfg.tag_key ? wire::kTagBytes : 0),
      payload_(wire::PayloadPlan::make(cfg.payload_bytes - tag_bytes_, wire::kHeaderBytes / 8, cfg.sender_id)) {
  headers_len_ = static_cast<uint32_t>(net::headers_len(cfg.ipv6));
  const uint32_t frame_bytes = headers_len_ + cfg.payload_bytes;
  buffer_.resize(size_t{cfg.batch} * frame_bytes);
  frames_.resize(cfg.batch);
  for (uint32_t i = 0; i < cfg.batch; ++i) {
    uint8_t* f = buffer_.data() + size_t{i} * frame_bytes;
    net::build_udp_headers({f, headers_len_}, cfg.endpoints, cfg.payload_bytes);
    frames_[i] = {f, frame_bytes, {}};
  }
  headers_sum_ = net::udp_headers_sum({buffer_.data(), headers_len_}, cfg.ipv6);
}

std::span<const engine::RxFrame> NullRxQueue::poll(uint32_t n) {
  if (n > frames_.size()) n = static_cast<uint32_t>(frames_.size());
  if (cfg_.frames != 0 && n > cfg_.frames - next_seq_) n = static_cast<uint32_t>(cfg_.frames - next_seq_);
  // One stamp for the batch, as a sender that reads its clock once per batch would.
  const uint64_t stamp_ns = now_ns();
  for (uint32_t i = 0; i < n; ++i) {
    uint8_t* f = const_cast<uint8_t*>(frames_[i].data);
    uint8_t* p = f + headers_len_;
    wire::PayloadSums sums = wire::fill_data_payload(p + tag_bytes_, payload_, cfg_.stream, next_seq_++, stamp_ns);
    if (tag_bytes_) sums.ones += wire::put_tag(*cfg_.tag_key, p, payload_.len);
    if constexpr (std::endian::native == std::endian::little) {
      net::udp_store_checksum(f, headers_len_, headers_sum_, sums.ones);
    } else {  // the writer's sum matches little-endian loads only (engine/tx_loop.hpp)
      net::udp_finish_checksum({f, frames_[i].len}, cfg_.ipv6);
    }
  }
  return {frames_.data(), n};
}

}  // namespace rateline::drivers
