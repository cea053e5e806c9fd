#include "report.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "report/csv_rows.hpp"
#include "report/rates.hpp"
#include "report/xml_text.hpp"
#include "util/units.hpp"

namespace rateline::ceiling {

namespace {

std::string f(const char* fmt, double v) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

std::string rate_cell(const RateResult& x) {
  if (!x.found()) return x.state == SearchState::below_min ? "<min" : "-";
  std::string s = f("%.0f", x.pps);
  if (x.state == SearchState::sender_limited) s = ">=" + s;
  else if (!x.confirmed || x.state != SearchState::converged) s += "?";
  return s;
}

std::string pct_cell(const RateResult& x, const SizeResult& r, const RunInfo& info) {
  if (!x.found() || !info.link.speed_mbps) return "n/a";
  const report::Rates rt = report::rates_for(static_cast<uint64_t>(std::llround(x.pps * 1e6)), r.frame, 1e6);
  const auto pct = report::line_rate_percent(rt, info.link.speed_mbps);
  return f(*pct < 10 ? "%.2f%%" : "%.1f%%", *pct) + (info.link.nominal ? "n" : "");
}

std::string first_fail_text(const RateResult& x) {
  if (!x.first_fail) return "no failing rate";
  const TrialOutcome& o = *x.first_fail;
  return ledger::brief(o.ledger) + " (at " + f("%.0f", o.achieved_pps) + " pps, " + f("%.3g", o.loss_ratio() * 100) + "% lost)";
}

using report::csv_escape;

using report::xml_escape;

}  // namespace

std::string format_table(const std::vector<SizeResult>& results, const Config& cfg, const RunInfo& info) {
  std::string s;
  char b[512];
  std::snprintf(b, sizeof b, "\nceiling: %s; sender %s; trials of %s, resolution %.3g%%, PDR = loss <= %.3g%%%s%s\n",
                info.mode.c_str(), info.link.text().c_str(), units::duration_text(cfg.trial_ns).c_str(), cfg.resolution * 100,
                cfg.pdr_threshold * 100, info.shape.empty() ? "" : "; shaped: ", info.shape.c_str());
  s += b;
  std::snprintf(b, sizeof b, "%6s %7s | %10s %15s %11s %10s %8s | %10s %15s | %9s | %s\n", "Frame", "Payload", "NDR pps",
                "asked/achieved", "data Mbit/s", "L1 Mbit/s", "% line", "PDR pps", "asked/achieved", "b2b burst",
                "drops at the first failing rate");
  s += b;
  bool unconfirmed = false, nominal = false;
  for (const auto& r : results) {
    const std::string frame = std::to_string(r.frame.l2);
    if (!r.error.empty()) {
      std::snprintf(b, sizeof b, "%6s %7u | error: %s\n", frame.c_str(), r.plan.payload, r.error.c_str());
      s += b;
      continue;
    }
    std::string ndr = "-", asked = "-", data = "-", l1 = "-", pct = "-", pdr = "-", pdr_asked = "-", drops = "-";
    auto asked_achieved = [](const RateResult& x) {
      return (x.asked_pps > 0 ? f("%.0f", x.asked_pps) : std::string("unpaced")) + "/" + f("%.0f", x.achieved_pps);
    };
    if (r.ran_throughput) {
      ndr = rate_cell(r.ndr);
      unconfirmed |= ndr.back() == '?';
      if (r.ndr.found()) {
        const report::Rates rt = report::rates_for(static_cast<uint64_t>(std::llround(r.ndr.pps * 1e6)), r.frame, 1e6);
        asked = asked_achieved(r.ndr);
        data = f("%.2f", rt.payload_mbps);
        l1 = f("%.2f", rt.l1_mbps);
        pct = pct_cell(r.ndr, r, info);
        nominal |= info.link.nominal && info.link.speed_mbps.has_value();
      }
      pdr = rate_cell(r.pdr);
      if (r.pdr.found()) pdr_asked = asked_achieved(r.pdr);
      drops = first_fail_text(r.ndr);
    }
    std::string b2b = "-";
    if (r.b2b.ran) b2b = std::to_string(r.b2b.longest) + (r.b2b.at_max ? "+" : "");
    std::snprintf(b, sizeof b, "%6s %7u | %10s %15s %11s %10s %8s | %10s %15s | %9s | %s\n", frame.c_str(), r.plan.payload,
                  ndr.c_str(), asked.c_str(), data.c_str(), l1.c_str(), pct.c_str(), pdr.c_str(), pdr_asked.c_str(), b2b.c_str(),
                  drops.c_str());
    s += b;
  }
  s += "NDR/PDR pps: the offered rate of the best passing trial, as asked of pktgen and as it achieved (the lower of the trial\n"
       "and its repeat); a pass where pktgen fell more than 5% short counts at the achieved rate. Mbit/s and % line: of the NDR.\n";
  if (unconfirmed) s += "?: not confirmed (the repeat of the final trial lost packets, or the search ran out of trials).\n";
  s += ">=: the receiver took everything the sender could offer (sender-limited). <min: loss even at --min-rate.\n";
  if (nominal) s += "n: % of a nominal link speed (virtual device: the number is made up).\n";
  else if (!info.link.speed_mbps) s += "% line: n/a, the sender's interface reports no link speed.\n";
  if (results.size() && results.front().b2b.ran)
    s += "b2b burst: longest burst at --delay 0 with no loss, " + std::to_string(cfg.b2b_repeats) + " bursts per trial (RFC 2544 26.4); +: reached --b2b-max.\n";
  uint32_t aside = 0;
  for (const auto& r : results) aside += r.set_aside;
  if (aside)
    s += std::to_string(aside) + " trial(s) set aside and run again: they lost packets while the sender fell off its schedule"
         " (pace slips; a stalled host stalls the path's queues too). Each is in the JSON/CSV log with `set_aside`.\n";
  if (!cfg.load.strict()) {
    uint32_t lossy = 0;
    for (const auto& r : results) lossy += r.ndr.lossy_at_rate;
    std::snprintf(b, sizeof b,
                  "Each rate judged over up to %u trials (MLRsearch, goal exceed ratio %.2f): it fails once more than %.2f of them\n"
                  "lose packets. Lossy trials inside the NDRs reported: %u (JSON: ndr.lossy_trials_at_rate). RFC 2544: --rate-trials 1.\n",
                  cfg.load.trials, cfg.load.exceed_ratio, cfg.load.exceed_ratio * cfg.load.trials, lossy);
    s += b;
  }
  // The ledger of each size's first failing rate, in full.
  for (const auto& r : results) {
    if (!r.ran_throughput || !r.ndr.first_fail) continue;
    const TrialOutcome& o = *r.ndr.first_fail;
    std::snprintf(b, sizeof b, "\n%u B payload: first failing rate %.0f pps achieved (%s), %" PRIu64 " of %" PRIu64 " lost\n",
                  r.plan.payload, o.achieved_pps, o.spec.rate_pps > 0 ? ("asked " + f("%.0f", o.spec.rate_pps)).c_str() : "unpaced",
                  o.lost, o.sent);
    s += b;
    if (o.in_burst_peak_pps > 0 || (r.ndr.best && r.ndr.best->in_burst_peak_pps > 0)) {
      std::snprintf(b, sizeof b, "offered inside bursts (peak, the fastest burst): %s pps at the NDR, %s pps here\n",
                    r.ndr.best && r.ndr.best->in_burst_peak_pps > 0 ? f("%.0f", r.ndr.best->in_burst_peak_pps).c_str() : "-",
                    o.in_burst_peak_pps > 0 ? f("%.0f", o.in_burst_peak_pps).c_str() : "-");
      s += b;
    }
    s += ledger::format(o.ledger);
  }
  return s;
}

std::string summary_csv(const std::vector<SizeResult>& results, const RunInfo& info) {
  std::string s =
      "requested_frame,frame,payload,ndr_state,ndr_confirmed,ndr_pps,ndr_asked_pps,ndr_achieved_pps,ndr_payload_mbps,ndr_l2_mbps,"
      "ndr_l1_mbps,ndr_line_rate_pct,pdr_state,pdr_confirmed,pdr_pps,pdr_asked_pps,pdr_achieved_pps,pdr_payload_mbps,pdr_l1_mbps,"
      "b2b_burst,b2b_at_max,"
      "trials,first_fail_asked_pps,first_fail_achieved_pps,first_fail_loss_pct,first_fail_drops,"
      "ndr_in_burst_peak_pps,first_fail_in_burst_peak_pps,error\n";
  for (const auto& r : results) {
    auto rate_cols = [&](const RateResult& x, bool with_pct) {
      std::string c = std::string(state_name(x.state)) + "," + (x.confirmed ? "1" : "0") + ",";
      if (!x.found()) return c + (with_pct ? ",,,,,,," : ",,,,,");
      const report::Rates rt = report::rates_for(static_cast<uint64_t>(std::llround(x.pps * 1e6)), r.frame, 1e6);
      c += f("%.1f", x.pps) + "," + (x.asked_pps > 0 ? f("%.1f", x.asked_pps) : "") + "," + f("%.1f", x.achieved_pps) + "," +
           f("%.3f", rt.payload_mbps) + ",";
      if (with_pct) {
        c += f("%.3f", rt.l2_mbps) + "," + f("%.3f", rt.l1_mbps) + ",";
        const auto pct = report::line_rate_percent(rt, info.link.speed_mbps);
        c += pct ? f("%.4f", *pct) : "";
      } else {
        c += f("%.3f", rt.l1_mbps);
      }
      return c + ",";
    };
    s += (r.plan.rfc_frame ? std::to_string(*r.plan.rfc_frame) : "") + "," + std::to_string(r.frame.l2) + "," +
         std::to_string(r.plan.payload) + ",";
    s += rate_cols(r.ndr, true) + rate_cols(r.pdr, false);
    s += (r.b2b.ran ? std::to_string(r.b2b.longest) : "") + "," + (r.b2b.ran ? (r.b2b.at_max ? "1" : "0") : "") + ",";
    s += std::to_string(r.trials.size()) + ",";
    if (r.ndr.first_fail) {
      const TrialOutcome& o = *r.ndr.first_fail;
      s += (o.spec.rate_pps > 0 ? f("%.1f", o.spec.rate_pps) : "") + "," + f("%.1f", o.achieved_pps) + "," +
           f("%.4f", o.loss_ratio() * 100) + "," + csv_escape(ledger::brief(o.ledger)) + ",";
    } else {
      s += ",,,,";
    }
    // The sender's fastest burst: what the queues saw at the peak, beside the average offered above.
    const auto peak = [&](const std::optional<TrialOutcome>& o) {
      return o && o->in_burst_peak_pps > 0 ? f("%.1f", o->in_burst_peak_pps) : std::string();
    };
    s += peak(r.ndr.best) + "," + peak(r.ndr.first_fail) + ",";
    s += csv_escape(r.error) + "\n";
  }
  return s;
}

std::string trials_csv(const std::vector<SizeResult>& results, const Config& cfg) {
  std::string s = "k,frame,payload,kind,asked_pps,achieved_pps,rx_pps,burst,sent,received,lost,loss_pct,pass_ndr,pass_pdr,drops,"
                  "in_burst_pps,in_burst_peak_pps,set_aside\n";
  for (const auto& r : results)
    for (const auto& o : r.trials) {
      s += std::to_string(o.k) + "," + std::to_string(r.frame.l2) + "," + std::to_string(r.plan.payload) + "," +
           kind_name(o.spec.kind) + "," + (o.spec.rate_pps > 0 ? f("%.1f", o.spec.rate_pps) : "") + "," +
           f("%.1f", o.achieved_pps) + "," + f("%.1f", o.rx_pps) + "," + std::to_string(o.spec.burst) + "," +
           std::to_string(o.sent) + "," + std::to_string(o.received) + "," + std::to_string(o.lost) + "," +
           f("%.4f", o.loss_ratio() * 100) + "," + (o.lost == 0 ? "1" : "0") + "," +
           (o.loss_ratio() <= cfg.pdr_threshold ? "1" : "0") + "," + csv_escape(ledger::brief(o.ledger)) + "," +
           f("%.1f", o.in_burst_pps) + "," + f("%.1f", o.in_burst_peak_pps) + "," + (o.set_aside.empty() ? "0" : "1") + "\n";
    }
  return s;
}

std::string loss_svg(const std::vector<SizeResult>& results, const Config& cfg, const RunInfo& info) {
  std::vector<const SizeResult*> panels;
  for (const auto& r : results)
    if (r.ran_throughput && !r.trials.empty()) panels.push_back(&r);
  const int pw = 480, ph = 300, ml = 72, mr = 24, mt = 44, mb = 56;
  const int cols = panels.size() > 1 ? 2 : 1;
  const int rows = std::max<int>(1, static_cast<int>((panels.size() + 1) / 2));
  const int title_h = 48;
  const int W = cols * pw, H = title_h + rows * ph + 28;
  std::string s;
  char b[1024];
  std::snprintf(b, sizeof b,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                "font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"12\">\n"
                "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
                W, H, W, H, W, H);
  s += b;
  std::snprintf(b, sizeof b, "<text x=\"12\" y=\"20\" font-size=\"15\" font-weight=\"bold\">Loss vs offered rate</text>\n"
                "<text x=\"190\" y=\"20\" fill=\"#444\">%s</text>\n",
                xml_escape(info.mode + (info.shape.empty() ? "" : "; " + info.shape)).c_str());
  s += b;
  std::snprintf(b, sizeof b,
                "<text x=\"12\" y=\"38\" fill=\"#444\">x: offered rate (pps asked of the sender); y: loss %% (log; zero loss "
                "on the bottom line); trials of %s. "
                "<tspan fill=\"#1a8f3c\">&#9679; no loss</tspan> <tspan fill=\"#d98500\">&#9679; loss &lt;= %.3g%%</tspan> "
                "<tspan fill=\"#c62828\">&#9679; more</tspan></text>\n",
                units::duration_text(cfg.trial_ns).c_str(), cfg.pdr_threshold * 100);
  s += b;
  if (panels.empty()) s += "<text x=\"20\" y=\"90\">no throughput trials</text>\n";
  const double ymin_pct = 1e-3, ymax_pct = 100;
  for (size_t i = 0; i < panels.size(); ++i) {
    const SizeResult& r = *panels[i];
    const int ox = static_cast<int>(i % 2) * pw, oy = title_h + static_cast<int>(i / 2) * ph;
    const int x0 = ox + ml, x1 = ox + pw - mr, y0 = oy + mt, y1 = oy + ph - mb;  // plot box
    const int yzero = y1, ylog_bottom = y1 - 18;                                 // zero-loss band under the log axis
    // Offered rate: asked, or achieved for the unpaced probe. The probe is
    // often far above the rest: then it sits clamped at the right edge, labelled.
    auto offered = [](const TrialOutcome& o) { return o.spec.rate_pps > 0 ? o.spec.rate_pps : o.achieved_pps; };
    std::vector<double> xs;
    for (const auto& o : r.trials)
      if (o.spec.kind != TrialKind::back_to_back) xs.push_back(offered(o));
    std::sort(xs.begin(), xs.end());
    double cut = xs.empty() ? 1 : xs.back();
    if (xs.size() >= 2 && xs.back() > 3 * xs[xs.size() - 2]) cut = xs[xs.size() - 2];
    const double xmin = xs.empty() ? 0 : xs.front();
    double xlo = xs.size() >= 2 ? xmin - 0.1 * (cut - xmin) - 0.02 * cut : 0, xhi = cut + 0.1 * (cut - xmin) + 0.02 * cut;
    if (xlo < 0 || xs.size() < 2) xlo = 0;
    if (xhi <= xlo) xhi = xlo + 1;
    auto X = [&](double pps) { return x0 + std::clamp((pps - xlo) / (xhi - xlo), 0.0, 1.0) * (x1 - x0); };
    auto Y = [&](double loss_pct) {
      if (loss_pct <= 0) return static_cast<double>(yzero - 6);
      const double t = (std::log10(std::max(loss_pct, ymin_pct)) - std::log10(ymin_pct)) / (std::log10(ymax_pct) - std::log10(ymin_pct));
      return ylog_bottom - std::clamp(t, 0.0, 1.0) * (ylog_bottom - y0);
    };
    std::snprintf(b, sizeof b, "<g>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" stroke=\"#999\"/>\n", x0, y0,
                  x1 - x0, y1 - y0);
    s += b;
    std::string head = std::to_string(r.plan.payload) + " B payload, " + std::to_string(r.frame.l2) + " B frame";
    if (r.ndr.found()) head += ": NDR " + f("%.0f", r.ndr.pps) + " pps";
    if (r.pdr.found()) head += ", PDR " + f("%.0f", r.pdr.pps);
    std::snprintf(b, sizeof b, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">%s</text>\n", x0, y0 - 10, xml_escape(head).c_str());
    s += b;
    // y grid: decades of loss %, and the zero line.
    for (double d = ymin_pct; d <= ymax_pct * 1.001; d *= 10) {
      const double y = Y(d);
      std::snprintf(b, sizeof b,
                    "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                    "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#444\">%g%%</text>\n",
                    x0, y, x1, y, x0 - 6, y + 4, d);
      s += b;
    }
    std::snprintf(b, sizeof b,
                  "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#bbb\" stroke-dasharray=\"2,2\"/>"
                  "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#444\">0</text>\n",
                  x0, yzero - 6, x1, yzero - 6, x0 - 6, yzero - 2);
    s += b;
    // x ticks.
    std::vector<double> ticks;
    {
      const double raw = (xhi - xlo) / 5, mag = std::pow(10, std::floor(std::log10(raw)));
      const double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
      for (double t = std::ceil(xlo / step) * step; t <= xhi; t += step) ticks.push_back(t);
    }
    for (double t : ticks) {
      const double x = X(t);
      std::snprintf(b, sizeof b,
                    "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>"
                    "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#444\">%s</text>\n",
                    x, y0, x, y1, x, y1 + 16, units::si(t, t >= 1000 ? 2 : 0).c_str());
      s += b;
    }
    std::snprintf(b, sizeof b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#444\">offered pps</text>\n",
                  (x0 + x1) / 2, y1 + 34);
    s += b;
    // NDR / PDR markers.
    auto vline = [&](double pps, const char* color, const char* label, int dy) {
      const double x = X(pps);
      std::snprintf(b, sizeof b,
                    "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"6,3\"/>"
                    "<text x=\"%.1f\" y=\"%d\" fill=\"%s\" font-size=\"11\">%s</text>\n",
                    x, y0, x, y1, color, x + 3, y0 + dy, color, label);
      s += b;
    };
    if (r.ndr.found()) vline(r.ndr.pps, "#1a8f3c", "NDR", 14);
    if (r.pdr.found()) vline(r.pdr.pps, "#d98500", "PDR", 28);
    // The trials: a line through them in rate order, then the points.
    std::vector<const TrialOutcome*> pts;
    for (const auto& o : r.trials)
      if (o.spec.kind != TrialKind::back_to_back) pts.push_back(&o);
    std::sort(pts.begin(), pts.end(), [&](const TrialOutcome* a, const TrialOutcome* c) { return offered(*a) < offered(*c); });
    std::string poly;
    for (const auto* o : pts) poly += f("%.1f", X(offered(*o))) + "," + f("%.1f", Y(o->loss_ratio() * 100)) + " ";
    s += "<polyline fill=\"none\" stroke=\"#888\" stroke-width=\"1\" points=\"" + poly + "\"/>\n";
    for (const auto* o : pts) {
      const double loss = o->loss_ratio() * 100;
      const char* color = o->lost == 0 ? "#1a8f3c" : o->loss_ratio() <= cfg.pdr_threshold ? "#d98500" : "#c62828";
      std::snprintf(b, sizeof b,
                    "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" stroke=\"#333\" stroke-width=\"0.5\">"
                    "<title>trial %u: asked %s, achieved %.0f pps, %.4g%% lost</title></circle>\n",
                    X(offered(*o)), Y(loss), color, o->k,
                    o->spec.rate_pps > 0 ? (f("%.0f", o->spec.rate_pps) + " pps").c_str() : "unpaced", o->achieved_pps, loss);
      s += b;
      if (offered(*o) > xhi) {
        std::snprintf(b, sizeof b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#444\" font-size=\"10\">%s pps &#8594;</text>\n",
                      X(offered(*o)) - 7, Y(loss) + 4, units::si(offered(*o), 1).c_str());
        s += b;
      }
    }
    s += "</g>\n";
  }
  std::snprintf(b, sizeof b, "<text x=\"12\" y=\"%d\" fill=\"#666\" font-size=\"11\">rateline ceiling: RFC 2544 throughput (NDR: zero loss; PDR: loss &lt;= %.3g%%)</text>\n",
                H - 10, cfg.pdr_threshold * 100);
  s += b;
  s += "</svg>\n";
  return s;
}

}  // namespace rateline::ceiling
