// Merging receive workers' results (src/report/rx_summary.hpp), with
// engine::RxResult built by hand.
#include "report/rx_summary.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace {

using rateline::engine::RxResult;
using rateline::engine::RxStreamState;
using rateline::report::RxSummary;
using rateline::report::summarize;
using rateline::wire::EndMarkerBody;

constexpr uint32_t kPayload = 1400;

// One sender's streams 0..n-1 (as run_rx keys them: same address and sender id).
RxResult worker(size_t streams = 4) {
  RxResult r;
  r.streams.resize(streams);
  for (size_t i = 0; i < streams; ++i) r.streams[i].key.stream = static_cast<uint16_t>(i);
  return r;
}

// Records sequences [0, upto) minus `drop` on `stream` of `w`, as run_rx would.
void receive(RxResult& w, uint16_t stream, uint64_t upto, const std::set<uint64_t>& drop = {},
             uint64_t first_ns = 1'000'000'000, uint64_t step_ns = 1'000) {
  RxStreamState& s = w.streams[stream];
  uint64_t t = first_ns;
  for (uint64_t q = 0; q < upto; ++q) {
    if (drop.count(q)) continue;
    if (!s.seen) {
      s.seen = true;
      s.first_ns = t;
      ++w.counters.streams_seen;
    }
    s.seq.record(q);
    s.payload_bytes += kPayload;
    s.payload_len = kPayload;
    s.last_ns = t;
    s.latency.record(10'000);
    s.jitter.record(t - 10'000, t);
    ++w.counters.frames;
    ++w.counters.data;
    w.counters.payload_bytes += kPayload;
    t += step_ns;
  }
}

EndMarkerBody body(uint64_t total_sent, uint64_t count, uint16_t streams) {
  EndMarkerBody b;
  b.total_sent = total_sent;
  b.delay_ns = 1'500'000;
  b.count = count;
  b.burst = 100;
  b.stream_count = streams;
  b.data_size = kPayload;
  return b;
}

void end(RxResult& w, uint16_t stream, const EndMarkerBody& b) {
  RxStreamState& s = w.streams[stream];
  s.ended = true;
  s.end = b;
  ++w.counters.end_markers;
  ++w.counters.streams_ended;
  if (b.stream_count > w.counters.stream_count) w.counters.stream_count = b.stream_count;
}

// Stream 0: 100 sent, 10/20/30 lost in the middle and 95..99 at the tail (8 lost).
// Stream 1 (other worker): 50 sent, none lost.
std::vector<RxResult> two_workers(bool markers) {
  std::vector<RxResult> ws{worker(), worker()};
  receive(ws[0], 0, 95, {10, 20, 30});
  receive(ws[1], 1, 50, {}, 1'200'000'000);
  if (markers) {
    end(ws[0], 0, body(100, 150, 2));
    end(ws[1], 1, body(50, 150, 2));
  }
  return ws;
}

TEST(RxSummary, EndMarkersGiveExactLossIncludingTail) {
  const RxSummary s = summarize(two_workers(true), 0);
  ASSERT_EQ(s.streams.size(), 2u);
  EXPECT_EQ(s.streams[0].stream, 0u);
  EXPECT_EQ(s.streams[0].unique, 92u);
  EXPECT_EQ(s.streams[0].sent, 100u);
  EXPECT_TRUE(s.streams[0].ended);
  EXPECT_EQ(s.streams[0].lost, 8u);
  EXPECT_EQ(s.streams[1].stream, 1u);
  EXPECT_EQ(s.streams[1].lost, 0u);
  EXPECT_EQ(s.streams[1].sent, 50u);
  EXPECT_EQ(s.lost, 8u);
  EXPECT_EQ(s.unique, 142u);
  EXPECT_EQ(s.received, 142u);
  EXPECT_EQ(s.sent_by_markers, 150u);
  EXPECT_TRUE(s.all_ended);
  EXPECT_FALSE(s.lost_from_expect);
}

TEST(RxSummary, SettingsStringComesFromEndMarker) {
  EXPECT_EQ(summarize(two_workers(true), 0).settings, "100-1.5-150-1400");
  // Unbounded run (count 0): '-'.
  auto ws = two_workers(false);
  EndMarkerBody b = body(100, 0, 2);
  b.delay_ns = 0;
  end(ws[0], 0, b);
  EXPECT_EQ(summarize(ws, 0).settings, "100-0---1400");
}

TEST(RxSummary, WithoutEndMarkersLossIsGapsOnly) {
  const RxSummary s = summarize(two_workers(false), 0);
  ASSERT_EQ(s.streams.size(), 2u);
  EXPECT_EQ(s.streams[0].lost, 3u) << "the 5 trailing losses cannot be seen without the marker";
  EXPECT_EQ(s.streams[0].highest_next, 95u);
  EXPECT_EQ(s.streams[1].lost, 0u);
  EXPECT_EQ(s.lost, 3u);
  EXPECT_FALSE(s.all_ended);
  EXPECT_FALSE(s.lost_from_expect);
  EXPECT_EQ(s.sent_by_markers, 0u);
  EXPECT_EQ(s.settings, "?-?-?-1400");
}

TEST(RxSummary, WithExpectAndNoMarkersLostIsExpectMinusUnique) {
  const RxSummary s = summarize(two_workers(false), 150);
  EXPECT_EQ(s.unique, 142u);
  EXPECT_EQ(s.lost, 8u);
  EXPECT_TRUE(s.lost_from_expect);
  EXPECT_FALSE(s.all_ended);
  EXPECT_EQ(s.settings, "?-?-150-1400");
  // An expectation below what arrived never goes negative.
  EXPECT_EQ(summarize(two_workers(false), 100).lost, 0u);
}

TEST(RxSummary, WithExpectButOneMarkerMissingExpectDecides) {
  auto ws = two_workers(false);
  end(ws[0], 0, body(100, 150, 2));  // stream 1 never got its marker
  const RxSummary s = summarize(ws, 150);
  EXPECT_FALSE(s.all_ended);
  EXPECT_TRUE(s.lost_from_expect);
  EXPECT_EQ(s.lost, 150u - 142u);
  EXPECT_EQ(s.streams[0].lost, 8u) << "per stream the marker is still exact";
}

TEST(RxSummary, WithExpectAndAllMarkersMarkersDecide) {
  const RxSummary s = summarize(two_workers(true), 1000);
  EXPECT_TRUE(s.all_ended);
  EXPECT_FALSE(s.lost_from_expect);
  EXPECT_EQ(s.lost, 8u);
}

TEST(RxSummary, TotalsAreSummedOverWorkers) {
  auto ws = two_workers(true);
  ws[0].counters.foreign = 3;
  ws[1].counters.foreign = 4;
  ws[0].counters.malformed = 1;
  ws[1].counters.corrupt = 2;
  ws[0].counters.backend_drops = 10;
  ws[1].counters.backend_drops = 20;
  ws[1].counters.unknown_stream = 5;
  const RxSummary s = summarize(ws, 0);
  EXPECT_EQ(s.totals.frames, 142u);
  EXPECT_EQ(s.totals.data, 142u);
  EXPECT_EQ(s.totals.payload_bytes, 142u * kPayload);
  EXPECT_EQ(s.totals.end_markers, 2u);
  EXPECT_EQ(s.totals.foreign, 7u);
  EXPECT_EQ(s.totals.malformed, 1u);
  EXPECT_EQ(s.totals.corrupt, 2u);
  EXPECT_EQ(s.totals.backend_drops, 30u);
  EXPECT_EQ(s.totals.unknown_stream, 5u);
  EXPECT_EQ(s.totals.stream_count, 2u);
}

TEST(RxSummary, SecondsSpanFirstToLastArrivalOverAllStreams) {
  // Stream 0: 92 arrivals from t=1.0 s, 1 us apart -> last at 1.0 s + 91 us.
  // Stream 1: 50 arrivals from t=1.2 s -> last at 1.2 s + 49 us.
  const RxSummary s = summarize(two_workers(true), 0);
  EXPECT_DOUBLE_EQ(s.seconds, (1'200'049'000.0 - 1'000'000'000.0) / 1e9);
  EXPECT_EQ(s.payload_len, kPayload);
  EXPECT_EQ(s.latency.samples(), 142u);
}

TEST(RxSummary, StreamSplitAcrossWorkersIsMerged) {
  // One stream's packets spread over two workers (RSS): evens on one, odds on the other.
  std::vector<RxResult> ws{worker(2), worker(2)};
  std::set<uint64_t> odds, evens;
  for (uint64_t q = 0; q < 200; ++q) (q % 2 ? odds : evens).insert(q);
  receive(ws[0], 0, 200, odds);   // receives evens
  receive(ws[1], 0, 200, evens);  // receives odds
  ws[1].streams[0].seq.record(7);  // one duplicate
  const RxSummary gaps = summarize(ws, 0);
  ASSERT_EQ(gaps.streams.size(), 1u);
  EXPECT_EQ(gaps.streams[0].unique, 200u);
  EXPECT_EQ(gaps.streams[0].duplicates, 1u);
  EXPECT_EQ(gaps.streams[0].lost, 0u);
  EXPECT_EQ(gaps.streams[0].highest_next, 200u);
  end(ws[1], 0, body(210, 210, 1));
  const RxSummary marked = summarize(ws, 0);
  EXPECT_EQ(marked.streams[0].lost, 10u);
  EXPECT_TRUE(marked.all_ended);
  EXPECT_EQ(marked.sent_by_markers, 210u);
}

TEST(RxSummary, ReorderedAndDuplicatesAreSummed) {
  std::vector<RxResult> ws{worker(), worker()};
  auto& a = ws[0].streams[2];
  a.seen = true;
  for (uint64_t q : {0, 2, 1, 3, 3, 5, 4}) a.seq.record(q);
  auto& b = ws[1].streams[3];
  b.seen = true;
  for (uint64_t q : {1, 0, 0, 0}) b.seq.record(q);
  const RxSummary s = summarize(ws, 0);
  EXPECT_EQ(s.reordered, 3u);
  EXPECT_EQ(s.duplicates, 3u);
  EXPECT_EQ(s.unique, 8u);
  EXPECT_EQ(s.received, 11u);
  EXPECT_EQ(s.lost, 0u);
  ASSERT_EQ(s.streams.size(), 2u);
  EXPECT_EQ(s.streams[0].stream, 2u);
  EXPECT_EQ(s.streams[1].stream, 3u);
}

TEST(RxSummary, CorruptOnlyStreamIsListed) {
  std::vector<RxResult> ws{worker()};
  ws[0].streams[1].corrupt = 4;
  const RxSummary s = summarize(ws, 0);
  ASSERT_EQ(s.streams.size(), 1u);
  EXPECT_EQ(s.streams[0].stream, 1u);
  EXPECT_EQ(s.streams[0].corrupt, 4u);
  EXPECT_EQ(s.streams[0].received, 0u);
  EXPECT_EQ(s.lost, 0u);
}

TEST(RxSummary, NothingReceived) {
  const RxSummary s = summarize({worker(), worker()}, 0);
  EXPECT_TRUE(s.streams.empty());
  EXPECT_FALSE(s.all_ended);
  EXPECT_EQ(s.lost, 0u);
  EXPECT_EQ(s.seconds, 0.0);
  EXPECT_EQ(s.settings, "?-?-?-?");
  const RxSummary e = summarize({worker()}, 1000);
  EXPECT_EQ(e.lost, 1000u);
  EXPECT_TRUE(e.lost_from_expect);
  EXPECT_EQ(e.settings, "?-?-1000-?");
}

TEST(RxSummary, JsonReportsLossBasis) {
  EXPECT_EQ(to_json(summarize(two_workers(true), 0), false)["lost_basis"], "end_markers");
  EXPECT_EQ(to_json(summarize(two_workers(false), 0), false)["lost_basis"], "sequence_gaps");
  EXPECT_EQ(to_json(summarize(two_workers(false), 150), false)["lost_basis"], "expected_count");
  const auto j = to_json(summarize(two_workers(true), 0), false);
  EXPECT_EQ(j["lost"], 8u);
  EXPECT_EQ(j["sent"], 150u);
  EXPECT_EQ(j["received"], 142u);
  EXPECT_EQ(j["streams"].size(), 2u);
  EXPECT_EQ(j["settings"], "100-1.5-150-1400");
}

TEST(RxSummary, TableShowsSettingsAndLoss) {
  const std::string t = format_table(summarize(two_workers(true), 0), false);
  EXPECT_NE(t.find("100-1.5-150-1400"), std::string::npos) << t;
  EXPECT_NE(t.find("exact: end markers"), std::string::npos) << t;
  EXPECT_NE(t.find("loss: 5.3333%"), std::string::npos) << t;  // 8 of 150
}

// A stream the sender announced (stream_count = 2 in the end marker) that
// never arrived at all: its whole share is lost, so the totals are not
// "exact from end markers", and with rx --count the expectation must decide.
TEST(RxSummary, AnnouncedStreamThatNeverArrivedIsNotAllEnded) {
  std::vector<RxResult> ws{worker()};
  receive(ws[0], 0, 100);
  end(ws[0], 0, body(100, 200, 2));  // sender: 2 streams, 200 packets in all
  const RxSummary s = summarize(ws, 200);
  EXPECT_EQ(s.totals.stream_count, 2u);
  EXPECT_FALSE(s.all_ended) << "stream 1 of 2 has no end marker";
  EXPECT_EQ(s.lost, 100u) << "rx --count 200 received 100";
}

// Clock domains: a stream whose stamps are not on rx's clock gives no
// latency (summary, JSON, table) but keeps its counts and jitter.
TEST(RxSummary, ClockSharedOnlyWithAQuickPacketAndNoneFarBehind) {
  using rateline::report::clock_is_shared;
  rateline::stats::LatencyHistogram h;
  EXPECT_FALSE(clock_is_shared(h, 0)) << "no samples: nothing to judge";
  h.record(9'999'999);
  EXPECT_TRUE(clock_is_shared(h, 0));
  EXPECT_TRUE(clock_is_shared(h, 5'000)) << "5 us early: one clock, read a little off (wall-clock kernel stamps)";
  EXPECT_FALSE(clock_is_shared(h, 10'000'000)) << "one packet arrived 10 ms before it was sent";
  rateline::stats::LatencyHistogram slow;
  slow.record(10'000'000);
  slow.record(3'600'000'000'000);
  EXPECT_FALSE(clock_is_shared(slow, 0)) << "even the quickest packet took 10 ms";
}

TEST(RxSummary, StreamOnAnotherClockGivesNoLatency) {
  std::vector<RxResult> ws{worker(2)};
  receive(ws[0], 0, 50);  // 10 us each
  receive(ws[0], 1, 50);
  ws[0].streams[1].key.sender = 7;
  ws[0].streams[1].latency = {};
  ws[0].streams[1].latency.record(3'600'000'000'000);  // its clock is an hour behind ours
  const RxSummary s = summarize(ws, 0);
  EXPECT_EQ(s.streams_clock_unrelated, 1u);
  EXPECT_EQ(s.latency.samples(), 50u) << "stream 0's samples only";
  EXPECT_EQ(s.latency.max(), 10'000u);
  const nlohmann::json j = rateline::report::to_json(s, false);
  EXPECT_EQ(j["streams_clock_unrelated"], 1);
  EXPECT_EQ(j["streams"][0]["clock"], "shared");
  EXPECT_EQ(j["streams"][1]["clock"], "unrelated");
  EXPECT_TRUE(j["streams"][1]["latency_ns"].is_null());
  EXPECT_EQ(j["streams"][1]["received"], 50);
  const std::string t = format_table(s, false);
  EXPECT_NE(t.find("latency: not shown for 1 stream(s) of 1 sender(s) (? #7)"), std::string::npos) << t;
  EXPECT_EQ(t.find("3600000"), std::string::npos) << t;
}

// 50 packets on `stream` whose latency histogram holds one delay: what the
// clock rules read.
void receive_with_delay(RxResult& w, uint16_t stream, uint64_t delay_ns) {
  receive(w, stream, 50);
  w.streams[stream].latency = {};
  w.streams[stream].latency.record(delay_ns);
}

// A sender that names its clock in its end markers is judged by the id, not
// by how its stamps look: the cases the stamp rule gets wrong.
TEST(RxSummary, ClockIdsDecideWhereTheSenderGaveOne) {
  constexpr uint64_t kOurs = 0x1234, kTheirs = 0x9876;
  std::vector<RxResult> ws{worker(3)};
  receive_with_delay(ws[0], 0, 20'000'000);  // ours, but every packet waited 20 ms (a deep queue)
  receive_with_delay(ws[0], 1, 4'000'000);   // another clock that happens to read 4 ms behind ours
  receive_with_delay(ws[0], 2, 4'000'000);   // the same stamps, no id: the stamp rule
  EndMarkerBody ours = body(50, 150, 3), theirs = body(50, 150, 3), none = body(50, 150, 3);
  ours.clock_id = kOurs;
  theirs.clock_id = kTheirs;
  end(ws[0], 0, ours);
  end(ws[0], 1, theirs);
  end(ws[0], 2, none);
  const RxSummary s = summarize(ws, 0, kOurs);
  const nlohmann::json j = rateline::report::to_json(s, false);
  EXPECT_EQ(j["streams"][0]["clock"], "shared");
  EXPECT_EQ(j["streams"][0]["clock_judged_by"], "clock_id");
  EXPECT_EQ(j["streams"][0]["latency_ns"]["min"], 20'000'000);
  EXPECT_EQ(j["streams"][1]["clock"], "unrelated");
  EXPECT_EQ(j["streams"][1]["clock_judged_by"], "clock_id");
  EXPECT_TRUE(j["streams"][1]["latency_ns"].is_null());
  EXPECT_EQ(j["streams"][2]["clock"], "shared") << "no id: 4 ms looks like one clock";
  EXPECT_EQ(j["streams"][2]["clock_judged_by"], "stamps");
  EXPECT_EQ(s.streams_clock_unrelated, 1u);
  EXPECT_EQ(s.latency.samples(), 2u) << "streams 0 and 2";

  // rx that cannot name its own clock judges every stream from its stamps.
  const nlohmann::json unknown = rateline::report::to_json(summarize(ws, 0, 0), false);
  EXPECT_EQ(unknown["streams"][0]["clock"], "unrelated") << "20 ms: the stamp rule's safe side";
  EXPECT_EQ(unknown["streams"][1]["clock"], "shared") << "the stamp rule's blind spot";
  EXPECT_EQ(unknown["streams"][1]["clock_judged_by"], "stamps");
}

// One run, one clock: a stream whose markers were lost takes the id its
// sender's other streams gave; ids that disagree are not lent.
TEST(RxSummary, AStreamWithoutMarkersTakesItsRunsClockId) {
  constexpr uint64_t kOurs = 0x1234, kTheirs = 0x9876;
  std::vector<RxResult> ws{worker(5)};
  for (uint16_t i = 0; i < 5; ++i) {
    receive_with_delay(ws[0], i, 4'000'000);  // another clock 4 ms behind ours: the stamp rule says shared
    ws[0].streams[i].key.sender = i == 2 || i == 3 ? 8 : 7;
  }
  EndMarkerBody theirs = body(50, 150, 2), other = body(50, 150, 2);
  theirs.clock_id = kTheirs;
  other.clock_id = kTheirs + 1;
  end(ws[0], 0, theirs);  // run 7: stream 0 ended with an id; streams 1 and 4 lost their markers
  end(ws[0], 2, theirs);  // run 8: stream 2 with an id; stream 3 lost its markers
  const auto by_stream = [](const nlohmann::json& j, int stream) {
    for (const auto& row : j["streams"])
      if (row["stream"] == stream) return std::make_pair(row["clock"].get<std::string>(), row["clock_judged_by"].get<std::string>());
    return std::make_pair(std::string("missing"), std::string("missing"));
  };
  const nlohmann::json j = rateline::report::to_json(summarize(ws, 0, kOurs), false);
  for (int stream = 0; stream < 5; ++stream)
    EXPECT_EQ(by_stream(j, stream), std::make_pair(std::string("unrelated"), std::string("clock_id"))) << stream;

  end(ws[0], 1, other);  // run 7 now disagrees with itself: its streams without markers get no id from it
  const nlohmann::json k = rateline::report::to_json(summarize(ws, 0, kOurs), false);
  EXPECT_EQ(by_stream(k, 0), std::make_pair(std::string("unrelated"), std::string("clock_id")));
  EXPECT_EQ(by_stream(k, 1), std::make_pair(std::string("unrelated"), std::string("clock_id")));
  EXPECT_EQ(by_stream(k, 4), std::make_pair(std::string("shared"), std::string("stamps")))
      << "the stamp rule's blind spot, as without ids";
  EXPECT_EQ(by_stream(k, 3), std::make_pair(std::string("unrelated"), std::string("clock_id"))) << "run 8 still agrees";
}

// Equal ids are not believed over stamps that arrive 10 ms before they were sent.
TEST(RxSummary, EqualClockIdsWithImpossibleStampsGiveNoLatency) {
  using rateline::report::clock_is_shared_by_id;
  rateline::stats::LatencyHistogram h;
  EXPECT_FALSE(clock_is_shared_by_id(5, 5, h, 0)) << "no samples";
  h.record(50'000'000);
  EXPECT_TRUE(clock_is_shared_by_id(5, 5, h, 0));
  EXPECT_TRUE(clock_is_shared_by_id(5, 5, h, 5'000));
  EXPECT_FALSE(clock_is_shared_by_id(5, 5, h, 10'000'000));
  EXPECT_FALSE(clock_is_shared_by_id(5, 6, h, 0));
}

}  // namespace
