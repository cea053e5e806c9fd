// The pcap reader against files built byte by byte here (both byte orders,
// us and ns stamps) and against what the writer's headers make; every kind
// of bad file is refused with its own reason.
#include "net/pcap_file.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace rateline::net;

void put32(std::vector<uint8_t>& out, uint32_t v, bool big) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (big ? 24 - 8 * i : 8 * i)));
}
void put16(std::vector<uint8_t>& out, uint16_t v, bool big) {
  out.push_back(static_cast<uint8_t>(big ? v >> 8 : v));
  out.push_back(static_cast<uint8_t>(big ? v : v >> 8));
}

std::vector<uint8_t> file_header(uint32_t magic, bool big, uint32_t linktype = kLinktypeEthernet) {
  std::vector<uint8_t> f;
  put32(f, magic, big);
  put16(f, 2, big);
  put16(f, 4, big);
  put32(f, 0, big);
  put32(f, 0, big);
  put32(f, 65535, big);
  put32(f, linktype, big);
  return f;
}

void add_record(std::vector<uint8_t>& f, bool big, uint32_t sec, uint32_t frac, const std::vector<uint8_t>& frame,
                uint32_t orig_len = 0) {
  put32(f, sec, big);
  put32(f, frac, big);
  put32(f, static_cast<uint32_t>(frame.size()), big);
  put32(f, orig_len ? orig_len : static_cast<uint32_t>(frame.size()), big);
  f.insert(f.end(), frame.begin(), frame.end());
}

std::string error_of(const std::vector<uint8_t>& f) {
  try {
    parse_pcap(f);
  } catch (const PcapError& e) {
    return e.what();
  }
  return "";
}

const std::vector<uint8_t> kA(60, 0xaa), kB(1442, 0xbb);

TEST(PcapFile, ReadsBothByteOrdersAndBothStampUnits) {
  for (bool big : {false, true})
    for (uint32_t magic : {kPcapMagicUs, kPcapMagicNs}) {
      std::vector<uint8_t> f = file_header(magic, big);
      add_record(f, big, 7, 250, kA);
      add_record(f, big, 8, 5, kB);
      const PcapFrames p = parse_pcap(f);
      ASSERT_EQ(p.size(), 2u) << big << magic;
      EXPECT_EQ(p.nanosecond, magic == kPcapMagicNs);
      EXPECT_EQ(std::vector<uint8_t>(p.frame(0).begin(), p.frame(0).end()), kA);
      EXPECT_EQ(std::vector<uint8_t>(p.frame(1).begin(), p.frame(1).end()), kB);
      const uint64_t unit = magic == kPcapMagicNs ? 1 : 1000;
      EXPECT_EQ(p.t_ns[0], 7'000'000'000ull + 250 * unit);
      EXPECT_EQ(p.t_ns[1], 8'000'000'000ull + 5 * unit);
      EXPECT_EQ(p.max_len, kB.size());
    }
}

TEST(PcapFile, WriterHeadersReadBack) {
  const auto h = pcap_file_header();
  std::vector<uint8_t> f(h.begin(), h.end());
  const size_t at = f.size();
  f.resize(at + kPcapRecordHeaderBytes);
  write_pcap_record_header(f.data() + at, 1'700'000'000'123'456'789ull, static_cast<uint32_t>(kA.size()));
  f.insert(f.end(), kA.begin(), kA.end());
  const PcapFrames p = parse_pcap(f);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_TRUE(p.nanosecond);
  EXPECT_EQ(p.t_ns[0], 1'700'000'000'123'456'789ull);
  EXPECT_EQ(p.frame(0).size(), kA.size());
}

TEST(PcapFile, RefusesEmptyForeignAndPcapng) {
  EXPECT_NE(error_of({}).find("empty"), std::string::npos);
  EXPECT_NE(error_of({'r', 'o', 'o', 't', ':', 'x'}).find("not a pcap"), std::string::npos);
  std::vector<uint8_t> wrong = file_header(0x12345678, false);
  add_record(wrong, false, 0, 0, kA);
  EXPECT_NE(error_of(wrong).find("not a pcap"), std::string::npos);
  // pcapng: a section header block (type 0x0a0d0d0a) with its byte-order magic.
  std::vector<uint8_t> ng;
  put32(ng, 0x0a0d0d0a, false);
  put32(ng, 28, false);
  put32(ng, 0x1a2b3c4d, false);
  ng.resize(28);
  EXPECT_NE(error_of(ng).find("pcapng not supported, convert with editcap -F pcap"), std::string::npos);
  EXPECT_NE(error_of(file_header(kPcapMagicUs, false)).find("no frames"), std::string::npos);
  EXPECT_NE(error_of(file_header(kPcapMagicUs, false, 101)).find("not Ethernet"), std::string::npos);
}

TEST(PcapFile, RefusesTruncatedFilesAtEveryCut) {
  std::vector<uint8_t> whole = file_header(kPcapMagicNs, true);
  add_record(whole, true, 1, 2, kA);
  add_record(whole, true, 1, 3, kA);
  const size_t one_record = kPcapFileHeaderBytes + kPcapRecordHeaderBytes + kA.size();
  for (size_t cut = 1; cut < whole.size(); ++cut) {
    if (cut == kPcapFileHeaderBytes || cut == one_record) continue;  // a whole file (no frames / one frame)
    const std::vector<uint8_t> f(whole.begin(), whole.begin() + static_cast<long>(cut));
    const std::string e = error_of(f);
    EXPECT_NE(e.find(cut < 4 ? "not a pcap" : "truncated"), std::string::npos) << cut << ": " << e;
  }
  EXPECT_EQ(parse_pcap(whole).size(), 2u);
}

TEST(PcapFile, RefusesFramesCapturedShort) {
  std::vector<uint8_t> f = file_header(kPcapMagicUs, false);
  add_record(f, false, 0, 0, kA, 1514);
  EXPECT_NE(error_of(f).find("captured cut short"), std::string::npos);
}

}  // namespace
