#include "report.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <functional>

namespace rateline::blocktest {
namespace {

constexpr int kCol = 14;    // a MiB/s column: "  1371.4 MiB/s"
constexpr int kRatio = 7;   // "x1.23"

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string pad(const std::string& s, int w) {
  return static_cast<int>(s.size()) >= w ? s + " " : s + std::string(static_cast<size_t>(w) - s.size(), ' ');
}

const PhaseOutcome& phase(const SizeOutcome& s, bool write) { return write ? s.write : s.read; }

// What a cell shows when there is no rate.
std::string cell_word(const PhaseOutcome& p) {
  switch (p.status) {
    case Status::not_applicable: return "n/a";
    case Status::unsupported: return "unsupported";
    case Status::not_run: return "not run";
    case Status::failed: return p.error ? std::string(p.error == ENOSPC ? "ENOSPC" : p.error == EIO ? "EIO" : "error") : "error";
    default: return "-";
  }
}

std::string rate_cell(const PhaseOutcome& p) {
  if (!p.has_rate()) return cell_word(p);
  std::string s = mib_text(p.mib_s());
  if (p.status == Status::partial) s += "*";
  if (p.verify_failures) s += "!";
  return s;
}

std::string json_escape_csv(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += c == '\n' ? ' ' : c;
  }
  return o + "\"";
}

const SizeOutcome* find_size(const FsOutcome& f, uint64_t bs) {
  for (const SizeOutcome& s : f.sizes)
    if (s.plan.block_bytes == bs) return &s;
  return nullptr;
}

PhaseOutcome unsupported_phase(const FsOutcome& f) {
  PhaseOutcome p;
  p.status = f.supported ? Status::not_run : Status::unsupported;
  return p;
}

// The nearest-rank per-mille quantile: the histogram's quantile(q) takes
// the sample of rank round(q * n); asking for exactly ceil(n * permille /
// 1000) / n makes that the nearest rank, computed in integers (0.999 * n
// in floating point can land on either side of a whole number).
uint64_t nearest_rank(const stats::LatencyHistogram& h, uint64_t permille) {
  const uint64_t n = h.samples();
  const uint64_t rank = (n * permille + 999) / 1000;
  return h.quantile(static_cast<double>(rank) / static_cast<double>(n));
}

// Latency in microseconds, three significant figures where they fit.
std::string us_text(uint64_t ns) {
  const double us = static_cast<double>(ns) / 1e3;
  return fmt(us < 10 ? "%.2f" : us < 1000 ? "%.1f" : "%.0f", us);
}

std::string clat_text(const LatencySummary& l) {
  return us_text(l.p50_ns) + "/" + us_text(l.p99_ns) + "/" + us_text(l.p99_9_ns) + "/" + us_text(l.max_ns) + " us";
}

}  // namespace

std::vector<uint64_t> all_sizes(const std::vector<FsOutcome>& fss) {
  std::vector<uint64_t> v;
  for (const FsOutcome& f : fss)
    for (const SizeOutcome& s : f.sizes) v.push_back(s.plan.block_bytes);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

LatencySummary summarize_latency(const stats::LatencyHistogram& h) {
  LatencySummary l;
  l.samples = h.samples();
  if (!l.samples) return l;
  l.p50_ns = nearest_rank(h, 500);
  l.p99_ns = nearest_rank(h, 990);
  l.p99_9_ns = nearest_rank(h, 999);
  l.max_ns = h.max();
  return l;
}

const char* status_name(Status s) {
  switch (s) {
    case Status::not_run: return "not_run";
    case Status::ok: return "ok";
    case Status::partial: return "partial";
    case Status::not_applicable: return "not_applicable";
    case Status::unsupported: return "unsupported";
    case Status::failed: return "failed";
  }
  return "?";
}

std::string mib_text(double v) { return fmt(v >= 100000 ? "%8.0f MiB/s" : "%8.1f MiB/s", v); }

std::string result_table(const std::vector<FsOutcome>& fss, bool write, const RunDescription& run, bool with_dd) {
  const int per_fs = kCol + (with_dd ? kCol + kRatio : 0);
  const int width = 8 + per_fs * static_cast<int>(fss.size());
  std::string o;
  o += std::string("blocktest disk ") + (write ? "write" : "read") + " results (" + run.mode + ", qd " +
       std::to_string(run.qd) + ", " + run.totals + (write ? std::string(run.fsync ? ", fsync counted" : ", no fsync") +
       (run.prealloc ? ", preallocated" : ", allocated while timed") : ", " + run.cache_policy) + ")\n";
  o += std::string(static_cast<size_t>(width), '-') + "\n";
  o += pad("block", 8) + "filesystem type\n";
  o += pad("size", 8) + std::string(static_cast<size_t>(width - 8), '-') + "\n";
  o += pad("(bytes)", 8);
  for (const FsOutcome& f : fss) {
    o += pad(f.name, kCol);
    if (with_dd) o += pad("dd", kCol) + pad("x dd", kRatio);
  }
  o += "\n";
  bool any_partial = false, any_bad = false;
  for (uint64_t bs : all_sizes(fss)) {
    o += pad(size_label(bs), 8);
    for (const FsOutcome& f : fss) {
      const SizeOutcome* s = find_size(f, bs);
      const PhaseOutcome p = s ? phase(*s, write) : unsupported_phase(f);
      any_partial |= p.status == Status::partial;
      any_bad |= p.verify_failures > 0;
      o += pad(rate_cell(p), kCol);
      if (with_dd) {
        if (p.dd_ran && p.dd_mib_s > 0) {
          o += pad(mib_text(p.dd_mib_s), kCol);
          o += pad(p.has_rate() ? fmt("x%.2f", p.mib_s() / p.dd_mib_s) : "-", kRatio);
        } else {
          o += pad(p.dd_note.empty() ? "-" : "dd failed", kCol) + pad("-", kRatio);
        }
      }
    }
    o += "\n";
  }
  if (any_partial) o += "* partial: the size stopped part way (see below); the rate covers what completed\n";
  if (any_bad) o += "! verify failures in this size (see below)\n";
  return o;
}

std::string latency_table(const std::vector<FsOutcome>& fss, bool write) {
  constexpr int kNum = 9;  // "  12345.6"
  auto right = [](const std::string& v) { return std::string(static_cast<size_t>(std::max(0, kNum - static_cast<int>(v.size()))), ' ') + v; };
  std::string o = std::string("blocktest disk ") + (write ? "write" : "read") +
                  " completion latency per block, us (submission to reaped completion, as fio's clat; p50/p99/p99.9 at most " +
                  fmt("%.1f", 100.0 * kLatencyRelError) + "% high, max exact)\n";
  o += pad("block", 8);
  for (const FsOutcome& f : fss) o += pad(f.name, 4 * kNum + 2);
  o += "\n" + pad("(bytes)", 8);
  for (size_t i = 0; i < fss.size(); ++i) o += right("p50") + right("p99") + right("p99.9") + right("max") + "  ";
  o += "\n";
  for (uint64_t bs : all_sizes(fss)) {
    o += pad(size_label(bs), 8);
    for (const FsOutcome& f : fss) {
      const SizeOutcome* s = find_size(f, bs);
      const PhaseOutcome p = s ? phase(*s, write) : unsupported_phase(f);
      const LatencySummary& l = p.clat;
      o += l.samples ? right(us_text(l.p50_ns)) + right(us_text(l.p99_ns)) + right(us_text(l.p99_9_ns)) + right(us_text(l.max_ns)) + "  "
                     : pad(right(cell_word(p)), 4 * kNum + 2);
    }
    o += "\n";
  }
  return o;
}

namespace {
// A size-by-filesystem table whose cells are "write | read" of one figure.
std::string phase_pair_table(const std::vector<FsOutcome>& fss, const std::string& title,
                             const std::function<std::string(const PhaseOutcome&)>& cell) {
  std::string o = title + "\n" + pad("(bytes)", 8);
  for (const FsOutcome& f : fss) o += pad(f.name, kCol + 4);
  o += "\n";
  for (uint64_t bs : all_sizes(fss)) {
    o += pad(size_label(bs), 8);
    for (const FsOutcome& f : fss) {
      const SizeOutcome* s = find_size(f, bs);
      o += pad(s ? cell(s->write) + " | " + cell(s->read) : std::string("-"), kCol + 4);
    }
    o += "\n";
  }
  return o;
}
}  // namespace

std::string worker_table(const std::vector<FsOutcome>& fss, bool exact) {
  const std::string title = exact ? "requests served by io-wq workers (punted / all, counted by tracepoint), write | read"
                                  : "io-wq worker (iou-wrk) CPU seconds per size, write | read (punts not countable here)";
  return phase_pair_table(fss, title, [exact](const PhaseOutcome& p) -> std::string {
    if (!p.has_rate()) return "-";
    if (exact) {
      const uint64_t reqs = p.requests;
      return reqs ? fmt("%.0f%%", 100.0 * static_cast<double>(p.workers.punts) / static_cast<double>(reqs)) : "-";
    }
    return fmt("%.2fs", static_cast<double>(p.workers.worker_cpu_ns) / 1e9);
  });
}

std::string device_table(const std::vector<FsOutcome>& fss) {
  bool any = false;
  for (const FsOutcome& f : fss)
    for (const SizeOutcome& s : f.sizes) any = any || s.write.device_known || s.read.device_known;
  if (!any) return "";
  return phase_pair_table(fss,
                          "device requests per block (the device's own counters; 1.00: one request each, more: split, "
                          "fewer: merged by the block layer), write | read",
                          [](const PhaseOutcome& p) -> std::string {
                            if (!p.has_rate() || !p.device_known || p.blocks == 0) return "-";
                            return fmt("%.2f", static_cast<double>(p.device_requests) / static_cast<double>(p.blocks));
                          });
}

std::string problem_lines(const std::vector<FsOutcome>& fss) {
  std::string o;
  for (const FsOutcome& f : fss) {
    if (!f.supported) {
      o += f.name + ": unsupported: " + f.reason + "\n";
      continue;
    }
    // Sizes that could not run, grouped by reason: "ext4: n/a at 8, 16: below the 512 B O_DIRECT alignment".
    std::vector<std::pair<std::string, std::string>> na;  // reason, sizes
    for (const SizeOutcome& s : f.sizes) {
      if (s.write.status != Status::not_applicable) continue;
      auto it = std::find_if(na.begin(), na.end(), [&](const auto& r) { return r.first == s.write.note; });
      if (it == na.end()) na.emplace_back(s.write.note, size_label(s.plan.block_bytes));
      else it->second += ", " + size_label(s.plan.block_bytes);
    }
    for (const auto& [reason, sizes] : na) o += f.name + ": n/a at " + sizes + ": " + reason + "\n";
    for (const SizeOutcome& s : f.sizes) {
      for (bool w : {true, false}) {
        const PhaseOutcome& p = phase(s, w);
        const std::string where = f.name + " " + size_label(s.plan.block_bytes) + " B " + (w ? "write" : "read");
        if (p.status == Status::partial || p.status == Status::failed)
          o += where + ": " + p.note + "\n";
        if (p.verify_failures) o += where + ": VERIFY FAILED: " + p.verify_note + "\n";
        if (!p.dd_note.empty()) o += where + ": dd: " + p.dd_note + "\n";
      }
    }
  }
  return o;
}

std::string detail_line(const std::string& fs, const SizeOutcome& s, bool write) {
  const PhaseOutcome& p = phase(s, write);
  char buf[512];
  const WorkerUsage& w = p.workers;
  std::snprintf(buf, sizeof buf,
                "%-6s %6s B %-5s %s in %.3f s: %llu I/Os, %llu enters%s, punts %s, iou-wrk %u thr %.3f s cpu "
                "(%.3f s runnable), submitter %.3f s cpu (%.3f s runnable) %llu sleeps",
                fs.c_str(), size_label(s.plan.block_bytes).c_str(), write ? "write" : "read", mib_text(p.mib_s()).c_str(),
                p.seconds, static_cast<unsigned long long>(p.blocks), static_cast<unsigned long long>(p.enters),
                p.fsync_seconds > 0 ? fmt(", fsync %.3f s", p.fsync_seconds).c_str() : "",
                w.have_punts ? std::to_string(w.punts).c_str() : "n/a", w.workers, static_cast<double>(w.worker_cpu_ns) / 1e9,
                static_cast<double>(w.worker_wait_ns) / 1e9, static_cast<double>(w.self_cpu_ns) / 1e9,
                static_cast<double>(w.self_wait_ns) / 1e9, static_cast<unsigned long long>(w.self_switches));
  std::string line = buf;
  if (p.clat.samples) line += "; clat p50/p99/p99.9/max " + clat_text(p.clat);
  if (!write && !p.cache.empty()) line += "; cache: " + p.cache;
  if (p.device_known)
    line += "; device " + std::to_string(p.device_requests) + " requests (" + std::to_string(p.device_merges) + " merged), " +
            fmt("%.1f MiB", static_cast<double>(p.device_bytes) / (1024.0 * 1024.0)) + ", busy " +
            std::to_string(p.device_busy_ms) + " ms";
  if (p.dd_ran) line += fmt("; dd %.1f MiB/s", p.dd_mib_s);
  return line;
}

std::string csv(const std::vector<FsOutcome>& fss, const RunDescription& run) {
  std::string o =
      "fs,mode,qd,block_bytes,phase,status,bytes,blocks,requests,seconds,mib_s,fsync_s,enters,punts,workers,worker_cpu_s,"
      "worker_wait_s,submitter_cpu_s,submitter_sleeps,verify_failures,dd_mib_s,ratio_vs_dd,device_requests,device_merges,"
      "device_bytes,clat_p50_ns,clat_p99_ns,clat_p99_9_ns,clat_max_ns,cache,note\n";
  for (const FsOutcome& f : fss) {
    std::vector<SizeOutcome> rows = f.sizes;
    if (!f.supported && rows.empty()) {
      SizeOutcome u;
      u.write.status = u.read.status = Status::unsupported;
      u.write.note = u.read.note = f.reason;
      rows.push_back(u);
    }
    for (const SizeOutcome& s : rows) {
      for (bool w : {true, false}) {
        const PhaseOutcome& p = phase(s, w);
        const WorkerUsage& u = p.workers;
        o += json_escape_csv(f.name) + "," + json_escape_csv(run.mode) + "," + std::to_string(run.qd) + "," +
             std::to_string(s.plan.block_bytes) + "," + (w ? "write" : "read") + "," + status_name(p.status) + "," +
             std::to_string(p.bytes) + "," + std::to_string(p.blocks) + "," + std::to_string(p.requests) + "," + fmt("%.6f", p.seconds) + "," +
             (p.has_rate() ? fmt("%.3f", p.mib_s()) : "") + "," + fmt("%.6f", p.fsync_seconds) + "," +
             std::to_string(p.enters) + "," + (u.have_punts ? std::to_string(u.punts) : "") + "," +
             std::to_string(u.workers) + "," + fmt("%.6f", static_cast<double>(u.worker_cpu_ns) / 1e9) + "," +
             fmt("%.6f", static_cast<double>(u.worker_wait_ns) / 1e9) + "," +
             fmt("%.6f", static_cast<double>(u.self_cpu_ns) / 1e9) + "," + std::to_string(u.self_switches) + "," +
             std::to_string(p.verify_failures) + "," + (p.dd_ran ? fmt("%.3f", p.dd_mib_s) : "") + "," +
             (p.dd_ran && p.dd_mib_s > 0 && p.has_rate() ? fmt("%.4f", p.mib_s() / p.dd_mib_s) : "") + "," +
             (p.device_known ? std::to_string(p.device_requests) + "," + std::to_string(p.device_merges) + "," +
                                   std::to_string(p.device_bytes)
                             : std::string(",,")) +
             "," + (p.clat.samples ? std::to_string(p.clat.p50_ns) + "," + std::to_string(p.clat.p99_ns) + "," +
                                         std::to_string(p.clat.p99_9_ns) + "," + std::to_string(p.clat.max_ns)
                                   : std::string(",,,")) +
             "," + json_escape_csv(p.cache) + "," + json_escape_csv(p.note.empty() ? f.reason : p.note) + "\n";
      }
    }
  }
  return o;
}

nlohmann::json phase_record(const std::string& fs, const SizeOutcome& s, bool write) {
  const PhaseOutcome& p = phase(s, write);
  const WorkerUsage& u = p.workers;
  nlohmann::json j = {{"type", "result"}, {"tool", "blocktest"}, {"fs", fs}, {"block_bytes", s.plan.block_bytes},
                      {"phase", write ? "write" : "read"}, {"status", status_name(p.status)}, {"bytes", p.bytes},
                      {"blocks", p.blocks}, {"planned_blocks", s.plan.blocks}, {"requests", p.requests}, {"seconds", p.seconds},
                      {"mib_s", p.has_rate() ? nlohmann::json(p.mib_s()) : nlohmann::json(nullptr)},
                      {"fsync_s", p.fsync_seconds}, {"enters", p.enters},
                      {"punts", u.have_punts ? nlohmann::json(u.punts) : nlohmann::json(nullptr)},
                      {"iou_wrk_threads", u.workers}, {"worker_cpu_s", static_cast<double>(u.worker_cpu_ns) / 1e9},
                      {"worker_runnable_s", static_cast<double>(u.worker_wait_ns) / 1e9},
                      {"submitter_cpu_s", static_cast<double>(u.self_cpu_ns) / 1e9},
                      {"submitter_runnable_s", static_cast<double>(u.self_wait_ns) / 1e9},
                      {"submitter_sleeps", u.self_switches}, {"verify_failures", p.verify_failures},
                      {"device_requests", p.device_known ? nlohmann::json(p.device_requests) : nlohmann::json(nullptr)},
                      {"device_merges", p.device_known ? nlohmann::json(p.device_merges) : nlohmann::json(nullptr)},
                      {"device_bytes", p.device_known ? nlohmann::json(p.device_bytes) : nlohmann::json(nullptr)},
                      {"device_busy_ms", p.device_known ? nlohmann::json(p.device_busy_ms) : nlohmann::json(nullptr)},
                      {"note", p.note}};
  // Per-block completion latency (LatencySummary), null when no block completed.
  const auto clat = [&p](uint64_t ns) { return p.clat.samples ? nlohmann::json(ns) : nlohmann::json(nullptr); };
  j["clat_p50_ns"] = clat(p.clat.p50_ns);
  j["clat_p99_ns"] = clat(p.clat.p99_ns);
  j["clat_p99_9_ns"] = clat(p.clat.p99_9_ns);
  j["clat_max_ns"] = clat(p.clat.max_ns);
  if (!write) j["cache"] = p.cache;
  if (p.error) j["errno"] = p.error;
  if (!p.verify_note.empty()) j["verify_note"] = p.verify_note;
  if (p.dd_ran || !p.dd_note.empty()) {
    j["dd_mib_s"] = p.dd_ran ? nlohmann::json(p.dd_mib_s) : nlohmann::json(nullptr);
    j["ratio_vs_dd"] = p.dd_ran && p.dd_mib_s > 0 && p.has_rate() ? nlohmann::json(p.mib_s() / p.dd_mib_s) : nlohmann::json(nullptr);
    if (!p.dd_note.empty()) j["dd_note"] = p.dd_note;
  }
  return j;
}

nlohmann::json run_record(const RunDescription& r) {
  return {{"type", "start"}, {"tool", "blocktest"}, {"mode", r.mode}, {"qd", r.qd}, {"wait_batch", r.wait_batch},
          {"totals", r.totals}, {"fsync", r.fsync}, {"prealloc", r.prealloc}, {"verify", r.verify},
          {"cache_policy", r.cache_policy}, {"placement", r.placement}, {"ring", r.ring},
          {"punt_method", r.punt_method}, {"notes", r.notes},
          // How far above the true value a reported clat percentile may be (LatencySummary).
          {"clat_max_rel_error", kLatencyRelError}};
}

}  // namespace rateline::blocktest
