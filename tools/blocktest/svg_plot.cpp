#include <algorithm>
#include <cmath>
#include <cstdio>

#include "planner.hpp"
#include "report.hpp"
#include "report/xml_text.hpp"

namespace rateline::blocktest {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

const PhaseOutcome& phase(const SizeOutcome& s, bool write) { return write ? s.write : s.read; }


}  // namespace

std::string svg_plot(const std::vector<FsOutcome>& fss, const std::string& title) {
  const double W = 920, H = 560, L = 80, R = 190, T = 56, B = 64;
  const double pw = W - L - R, ph = H - T - B;
  const std::vector<uint64_t> sizes = all_sizes(fss);
  double lo = 1e300, hi = 0;
  for (const FsOutcome& f : fss)
    for (const SizeOutcome& s : f.sizes)
      for (bool w : {true, false})
        if (phase(s, w).has_rate()) {
          lo = std::min(lo, phase(s, w).mib_s());
          hi = std::max(hi, phase(s, w).mib_s());
        }
  std::string o;
  auto add = [&](const std::string& s) { o += s; o += "\n"; };
  add("<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
  add("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", W) + "\" height=\"" + fmt("%.0f", H) +
      "\" viewBox=\"0 0 " + fmt("%.0f", W) + " " + fmt("%.0f", H) + "\" font-family=\"sans-serif\" font-size=\"12\">");
  add("<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"white\"/>");
  add("<text x=\"" + fmt("%.0f", L) + "\" y=\"24\" font-size=\"16\" font-weight=\"bold\">" + report::xml_escape(title) + "</text>");
  add("<text x=\"" + fmt("%.0f", L) + "\" y=\"42\" fill=\"#555\">MiB/s against block size; both axes logarithmic; "
      "solid = write, dashed = read</text>");
  if (sizes.empty() || hi <= 0) {
    add("<text x=\"" + fmt("%.0f", L + pw / 2) + "\" y=\"" + fmt("%.0f", T + ph / 2) + "\" text-anchor=\"middle\">no results</text>");
    add("</svg>");
    return o;
  }
  const double xmin = std::log2(static_cast<double>(sizes.front())), xmax = std::log2(static_cast<double>(sizes.back()));
  const double ymin = std::floor(std::log10(lo)), ymax = std::max(ymin + 1, std::ceil(std::log10(hi)));
  auto X = [&](uint64_t bs) {
    return xmax > xmin ? L + (std::log2(static_cast<double>(bs)) - xmin) / (xmax - xmin) * pw : L + pw / 2;
  };
  auto Y = [&](double v) { return T + ph - (std::log10(v) - ymin) / (ymax - ymin) * ph; };

  // Grid and axes.
  add("<g stroke=\"#ddd\" stroke-width=\"1\">");
  for (uint64_t bs : sizes) add("<line x1=\"" + fmt("%.1f", X(bs)) + "\" y1=\"" + fmt("%.1f", T) + "\" x2=\"" + fmt("%.1f", X(bs)) + "\" y2=\"" + fmt("%.1f", T + ph) + "\"/>");
  for (double d = ymin; d <= ymax; d += 1)
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, d);
      if (std::log10(v) > ymax + 1e-9) continue;
      add("<line x1=\"" + fmt("%.1f", L) + "\" y1=\"" + fmt("%.1f", Y(v)) + "\" x2=\"" + fmt("%.1f", L + pw) + "\" y2=\"" +
          fmt("%.1f", Y(v)) + "\"" + (m == 1.0 ? " stroke=\"#bbb\"" : "") + "/>");
    }
  add("</g>");
  add("<rect x=\"" + fmt("%.1f", L) + "\" y=\"" + fmt("%.1f", T) + "\" width=\"" + fmt("%.1f", pw) + "\" height=\"" + fmt("%.1f", ph) + "\" fill=\"none\" stroke=\"#333\"/>");
  for (uint64_t bs : sizes)
    add("<text x=\"" + fmt("%.1f", X(bs)) + "\" y=\"" + fmt("%.1f", T + ph + 18) + "\" text-anchor=\"middle\">" + size_label(bs) + "</text>");
  for (double d = ymin; d <= ymax; d += 1) {
    const double v = std::pow(10.0, d);
    add("<text x=\"" + fmt("%.1f", L - 8) + "\" y=\"" + fmt("%.1f", Y(v) + 4) + "\" text-anchor=\"end\">" +
        (v >= 1 ? fmt("%.0f", v) : fmt("%g", v)) + "</text>");
  }
  add("<text x=\"" + fmt("%.1f", L + pw / 2) + "\" y=\"" + fmt("%.1f", H - 18) + "\" text-anchor=\"middle\">block size (bytes)</text>");
  add("<text transform=\"translate(22," + fmt("%.1f", T + ph / 2) + ") rotate(-90)\" text-anchor=\"middle\">MiB/s</text>");

  static const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  int idx = 0;
  double ly = T + 10;
  for (const FsOutcome& f : fss) {
    const char* c = colours[idx++ % 8];
    for (bool w : {true, false}) {
      // Consecutive sizes with a rate form one polyline; a gap (n/a, error) breaks it.
      std::vector<std::string> runs(1);
      std::string marks;
      for (const SizeOutcome& s : f.sizes) {
        const PhaseOutcome& p = phase(s, w);
        if (!p.has_rate()) {
          if (!runs.back().empty()) runs.emplace_back();
          continue;
        }
        const std::string pt = fmt("%.1f", X(s.plan.block_bytes)) + "," + fmt("%.1f", Y(p.mib_s()));
        runs.back() += pt + " ";
        marks += w ? "<circle cx=\"" + fmt("%.1f", X(s.plan.block_bytes)) + "\" cy=\"" + fmt("%.1f", Y(p.mib_s())) + "\" r=\"3\" fill=\"" + c + "\"/>"
                   : "<rect x=\"" + fmt("%.1f", X(s.plan.block_bytes) - 3) + "\" y=\"" + fmt("%.1f", Y(p.mib_s()) - 3) + "\" width=\"6\" height=\"6\" fill=\"white\" stroke=\"" + c + "\"/>";
        marks += "\n";
      }
      for (const std::string& r : runs)
        if (!r.empty())
          add(std::string("<polyline fill=\"none\" stroke=\"") + c + "\" stroke-width=\"2\"" + (w ? "" : " stroke-dasharray=\"6,4\"") + " points=\"" + r + "\"/>");
      o += marks;
    }
    const double lx = L + pw + 16;
    add(std::string("<line x1=\"") + fmt("%.1f", lx) + "\" y1=\"" + fmt("%.1f", ly) + "\" x2=\"" + fmt("%.1f", lx + 26) + "\" y2=\"" + fmt("%.1f", ly) + "\" stroke=\"" + c + "\" stroke-width=\"2\"/>");
    add("<text x=\"" + fmt("%.1f", lx + 32) + "\" y=\"" + fmt("%.1f", ly + 4) + "\">" + report::xml_escape(f.name) + " write" + (f.supported ? "" : " (unsupported)") + "</text>");
    ly += 18;
    add(std::string("<line x1=\"") + fmt("%.1f", lx) + "\" y1=\"" + fmt("%.1f", ly) + "\" x2=\"" + fmt("%.1f", lx + 26) + "\" y2=\"" + fmt("%.1f", ly) + "\" stroke=\"" + c + "\" stroke-width=\"2\" stroke-dasharray=\"6,4\"/>");
    add("<text x=\"" + fmt("%.1f", lx + 32) + "\" y=\"" + fmt("%.1f", ly + 4) + "\">" + report::xml_escape(f.name) + " read</text>");
    ly += 24;
  }
  add("</svg>");
  return o;
}

}  // namespace rateline::blocktest
