// The pcap backend: `pktgen --pcap-out FILE` writes the frames it would
// send (headers, payload, checksums, end markers, paced as asked) to a
// classic pcap file instead of a wire (pcap_queues.hpp). TX only; needs no
// privilege. Its MACs are the kernel's when --device and a neighbour entry
// give them, else locally administered ones (--dst-mac still applies).
//
// One worker writes the file in send order. With --threads N each worker
// writes its records to a file of its own (unlinked, beside FILE), in its
// send order; the last worker to finish merges them into FILE by record
// time (send stamps: one per batch, so a batch's records stay together;
// equal times go in worker order). The file is one capture in send-stamp
// order, as a tap on a link the workers shared would have seen it.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <span>

#include "backend.hpp"
#include "engine/tx_loop.hpp"
#include "net/pcap_file.hpp"
#include "pcap/pcap_queues.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"
#include "util/owned.hpp"

namespace rateline::drivers {
namespace {

// One worker's records, read back in order for the merge (buffered: one
// read() per MiB, none per record).
class RecordReader {
 public:
  explicit RecordReader(int fd) : fd_(fd), buf_(1 << 20) {}
  // The next record (header and frame) or an empty span at the end; false on a read error.
  bool next(std::span<const uint8_t>& rec) {
    rec = {};
    if (!fill(net::kPcapRecordHeaderBytes)) return ok_;
    uint32_t caplen;
    std::memcpy(&caplen, buf_.data() + at_ + 8, 4);
    const size_t whole = net::kPcapRecordHeaderBytes + size_t{caplen};
    if (!fill(whole)) return false;  // a header without its frame: the file is damaged
    rec = {buf_.data() + at_, whole};
    at_ += whole;
    return true;
  }
  static uint64_t time_ns(std::span<const uint8_t> rec) {
    uint32_t sec, nsec;
    std::memcpy(&sec, rec.data(), 4);
    std::memcpy(&nsec, rec.data() + 4, 4);
    return uint64_t{sec} * 1'000'000'000 + nsec;
  }

 private:
  // At least n bytes from at_ on in buf_, reading more when needed.
  bool fill(size_t n) {
    if (end_ - at_ >= n) return true;
    std::memmove(buf_.data(), buf_.data() + at_, end_ - at_);
    end_ -= at_;
    at_ = 0;
    if (buf_.size() < n) buf_.resize(n);
    while (end_ < n) {
      const ssize_t r = ::read(fd_, buf_.data() + end_, buf_.size() - end_);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) ok_ = false;
      if (r <= 0) return false;
      end_ += static_cast<size_t>(r);
    }
    return true;
  }
  int fd_;
  std::vector<uint8_t> buf_;
  size_t at_ = 0, end_ = 0;
  bool ok_ = true;
};

class PcapTx : public TxBackend {
 public:
  explicit PcapTx(const TxOptions& o)
      : path_(o.pcap_path), batch_(o.batch), slot_bytes_(o.slot_bytes),
        workers_(static_cast<unsigned>(std::max<size_t>(o.placement.worker_cpus.size(), 1))), parts_(workers_) {
    fd_.reset(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd_) throw SetupError("Couldn't create " + path_ + ": " + errno_text(errno));
    const auto header = net::pcap_file_header();
    if (::write(fd_.get(), header.data(), header.size()) != static_cast<ssize_t>(header.size()))
      throw SetupError("Couldn't write " + path_ + ": " + errno_text(errno));
    if (workers_ == 1) return;
    // Each worker's part: an unlinked file in FILE's directory (the same file system, no name left behind).
    const size_t slash = path_.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
    for (OwnedFd& part : parts_) {
      part.reset(::open(dir.c_str(), O_RDWR | O_TMPFILE | O_CLOEXEC, 0600));
      if (!part) throw SetupError("Couldn't make a worker's part file in " + dir + ": " + errno_text(errno));
    }
  }
  FramePath frame_path(const TxOptions& o) const override {
    return o.kernel_path.why_not.empty() ? o.kernel_path : no_wire_frame_path(o, "pcap");
  }
  std::vector<std::string> start_lines() const override {
    return {"pcap backend: frames go to " + path_ + " (classic pcap, Ethernet, ns stamps = send stamps), not to a wire"};
  }
  engine::TxResult run(const TxWorker& w, const engine::TxPlan& plan, stats::TxSnapshotRing& snapshots,
                       const std::atomic<bool>& stop, const std::function<void()>& ready) override {
    PcapTxConfig c;
    c.fd = workers_ == 1 ? fd_.get() : parts_[w.index].get();
    c.batch = batch_;
    const uint32_t headers_len = static_cast<uint32_t>(net::headers_len(plan.ipv6, plan.vlan_tags));
    c.headers_len = headers_len + plan.tag_bytes;  // the stamp is in the test payload, after a --key-file tag
    c.frame_bytes = std::max(headers_len + slot_bytes_, plan.replay ? plan.replay->max_len : 0);
    c.epoch_offset_ns = epoch_offset_ns_;
    PcapTxQueue q(c);
    ready();
    engine::TxResult r = engine::run_tx(q, plan, snapshots, stop);
    if (q.lost()) {  // a write failed (a full disk): those records are not in the file
      r.counters.failed += q.lost();
      r.counters.last_error = q.error();
    }
    written_ += r.counters.packets + r.counters.end_markers - q.lost();
    if (workers_ > 1 && finished_.fetch_add(1) + 1 == workers_) {
      // The last worker merges every part; what it could not write is counted as its failures.
      const uint64_t unmerged = merge_parts(r.counters.last_error);
      r.counters.failed += unmerged;
      written_ -= unmerged;
    }
    return r;
  }
  std::vector<std::string> end_lines() const override {
    return {"pcap: " + std::to_string(written_) + " frames written to " + path_};
  }
  void add_to_result(nlohmann::json& j) const override {
    j["pcap_out"] = path_;
    j["pcap_frames"] = written_.load();
  }

 private:
  // Every part into FILE by record time (ties: the lower worker first).
  // Returns the records written to parts that did not reach FILE (a part
  // that cannot be read back, a write that fails); sets error to why.
  uint64_t merge_parts(int& error) {
    std::vector<RecordReader> readers;
    std::vector<std::span<const uint8_t>> head(workers_);
    for (unsigned i = 0; i < workers_; ++i) {
      ::lseek(parts_[i].get(), 0, SEEK_SET);
      readers.emplace_back(parts_[i].get());
    }
    for (unsigned i = 0; i < workers_; ++i)
      if (!readers[i].next(head[i])) error = EIO;
    std::vector<uint8_t> out;
    out.reserve(2 * PcapTxQueue::kWriteBytes);
    uint64_t pending = 0, merged = 0;
    bool failed = false;
    auto write_out = [&] {
      for (size_t done = 0; !failed && done < out.size();) {
        const ssize_t n = ::write(fd_.get(), out.data() + done, out.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          failed = true;
          error = n < 0 ? errno : ENOSPC;
        } else {
          done += static_cast<size_t>(n);
        }
      }
      if (!failed) merged += pending;
      out.clear();
      pending = 0;
    };
    for (;;) {
      int pick = -1;
      for (unsigned i = 0; i < workers_; ++i)
        if (!head[i].empty() && (pick < 0 || RecordReader::time_ns(head[i]) < RecordReader::time_ns(head[pick])))
          pick = static_cast<int>(i);
      if (pick < 0) break;
      out.insert(out.end(), head[pick].begin(), head[pick].end());
      ++pending;
      if (out.size() >= PcapTxQueue::kWriteBytes) write_out();
      if (!readers[pick].next(head[pick])) error = EIO;  // the rest of that part is lost
    }
    write_out();
    for (OwnedFd& part : parts_) part.reset();
    return written_.load() - merged;
  }

  std::string path_;
  uint32_t batch_;
  uint32_t slot_bytes_;
  unsigned workers_;
  OwnedFd fd_;
  std::vector<OwnedFd> parts_;  // --threads > 1: each worker's records
  int64_t epoch_offset_ns_ = realtime_minus_monotonic_ns();  // one offset for every worker: their stamps compare
  std::atomic<unsigned> finished_{0};
  std::atomic<uint64_t> written_{0};  // records in FILE, read after join
};

}  // namespace

extern const BackendDescriptor pcap_backend = {
    .name = "pcap",
    .detail_tx = "frames to a pcap file (--pcap-out)",
    .detail_rx = nullptr,
    .frames = true,
    .kernel_interface = false,
    .pins_workers = false,
    .auto_tx = 0,
    .auto_rx = 0,
    .auto_skip = nullptr,
    .fallback = nullptr,
    .why_not = [] { return std::string(); },
    .capabilities = [] { return std::vector<int>{}; },
    .open_tx = [](const TxOptions& o) -> std::unique_ptr<TxBackend> { return std::make_unique<PcapTx>(o); },
    .open_rx = [](const RxOptions&) -> std::unique_ptr<RxBackend> {
      throw SetupError("--backend pcap only sends (pktgen --pcap-out FILE); rx reads frames from an interface");
    },
    .cleanup = nullptr,
    .moves_packets = false,
    .replays = true,
};

}  // namespace rateline::drivers
