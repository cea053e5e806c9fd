#include "tools/ceiling/verdict.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace rateline;
using namespace rateline::ceiling;

namespace {

NdrFinding finding(uint32_t payload, std::optional<double> ndr, std::string state = "converged") {
  NdrFinding f;
  f.payload = payload;
  f.frame = net::FrameSizes::for_payload(payload, false);
  f.ndr_pps = ndr;
  f.state = std::move(state);
  return f;
}

MinNdr min_rate(const std::string& text, const std::string& layer = "l1") {
  MinNdr m;
  m.rate = units::parse_rate(text);
  m.text = text;
  m.layer = layer;
  return m;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(Verdict, PassesWhenEverySizeReachesTheRate) {
  const RunVerdict v = judge_run({finding(1400, 1743.0), finding(466, 4948.0)}, min_rate("1000"));
  EXPECT_TRUE(v.passed);
  EXPECT_EQ(v.line(), "verdict: passed");
  const auto j = v.json(min_rate("1000"));
  EXPECT_EQ(j["type"], "verdict");
  EXPECT_EQ(j["tool"], "ceiling");
  EXPECT_TRUE(j["passed"].get<bool>());
  EXPECT_TRUE(j["reason"].is_null());
  EXPECT_EQ(j["sizes"].size(), 2u);
  EXPECT_EQ(j["min_ndr"]["unit"], "pps");
}

TEST(Verdict, AtTheRatePassesBelowFailsNamingSizeAndNdr) {
  EXPECT_TRUE(judge_size(finding(1400, 1000.0), min_rate("1000")).passed);
  const RunVerdict v = judge_run({finding(1400, 1743.0), finding(466, 999.5)}, min_rate("1k"));
  EXPECT_FALSE(v.passed);
  const std::string line = v.line();
  EXPECT_TRUE(has(line, "verdict: FAILED: ")) << line;
  EXPECT_TRUE(has(line, "466 B payload (512 B frame)")) << line;
  EXPECT_TRUE(has(line, "NDR 999.5")) << line;  // the NDR found
  EXPECT_TRUE(has(line, "--min-ndr 1k")) << line;
  EXPECT_FALSE(has(line, "1400 B")) << "a passing size is not named: " << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const auto j = v.json(min_rate("1k"));
  EXPECT_FALSE(j["passed"].get<bool>());
  EXPECT_TRUE(has(j["reason"].get<std::string>(), "466 B payload"));
  EXPECT_EQ(j["sizes"][1]["ndr_pps"].get<double>(), 999.5);
  EXPECT_FALSE(j["sizes"][1]["passed"].get<bool>());
  EXPECT_TRUE(j["sizes"][0]["passed"].get<bool>());
}

TEST(Verdict, NoNdrFailsAndSaysWhy) {
  const RunVerdict v = judge_run({finding(1400, std::nullopt, "below_min")}, min_rate("10"));
  EXPECT_FALSE(v.passed);
  EXPECT_TRUE(has(v.line(), "1400 B payload")) << v.line();
  EXPECT_TRUE(has(v.line(), "no NDR (below_min)")) << v.line();
  EXPECT_TRUE(v.json(min_rate("10"))["sizes"][0]["ndr_pps"].is_null());
}

TEST(Verdict, ASenderLimitedNdrBelowTheRateFailsAndSaysSo) {
  // The receiver took all the sender offered: its NDR is at least that, which does not show the rate asked.
  const SizeVerdict v = judge_size(finding(1400, 5000.0, "sender_limited"), min_rate("100M"));
  EXPECT_FALSE(v.passed);
  EXPECT_TRUE(has(v.reason, "NDR >=5.000k pps (sender-limited")) << v.reason;
  EXPECT_TRUE(judge_size(finding(1400, 5000.0, "sender_limited"), min_rate("5k")).passed);
}

TEST(Verdict, BitRatesCountAtTheRateLayer) {
  // 1400 B payload: l1 frame 1400 + 46 + 20 (preamble, SFD, gap) = 1466 B; 100 Mbit/s = 8527 pps there.
  const NdrFinding f = finding(1400, 8600.0);
  const MinNdr l1 = min_rate("100Mbit");
  EXPECT_NEAR(l1.pps_at(f.frame), 100e6 / (8.0 * f.frame.l1), 1e-6);
  EXPECT_TRUE(judge_size(f, l1).passed);
  // The same bit rate as payload bits is more packets: 100e6 / (8 * 1400) = 8929 pps.
  const SizeVerdict p = judge_size(f, min_rate("100Mbit", "payload"));
  EXPECT_FALSE(p.passed);
  EXPECT_TRUE(has(p.reason, "pps here")) << p.reason;
  EXPECT_EQ(min_rate("100Mbit").pps_at(f.frame) < min_rate("100Mbit", "l2").pps_at(f.frame), true);
  EXPECT_EQ(judge_run({f}, l1).json(l1)["min_ndr"]["unit"], "bit/s");
}

TEST(Verdict, AnEmptyRunPasses) {
  // The caller lists every size asked for (an unreached one as "not measured"), so empty means none were asked.
  EXPECT_TRUE(judge_run({}, min_rate("1")).passed);
}
