// Chapter 05's timeline of a small schedule (experiment.h records it,
// report.h draws plots/05_batching_timeline.svg): the stretches it records are what the
// scheduler did, checked on a schedule computed by hand, and on the
// chapter's own queue against the rules of each policy.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../chapters/05_queue_simulation/experiment.h"
#include "../chapters/05_queue_simulation/report.h"
#include "svg_check.h"

using namespace kv;
using ch05::Phase;

namespace {

// Every prefill takes 1 s, every decode step 0.25 s: times a person can add up.
class RoundTimes : public Executor {
  public:
    double run(const StepPlan& plan) override {
        for (const StepRow& row : plan.rows)
            if (row.request->status == RequestStatus::prefilling) return 1.0;
        return 0.25;
    }
};

std::vector<Request> queue_of(const std::vector<int>& answers, int prompt = 4) {
    std::vector<Request> q;
    for (int i = 0; i < int(answers.size()); ++i) {
        Request r;
        r.id = i;
        r.prompt_len = prompt;
        r.answer_len = r.answer_cap = answers[std::size_t(i)];
        q.push_back(r);
    }
    return q;
}

MemoryBudget room_for(std::uint64_t tokens, Reservation reserve) {
    return {tokens, 1, tokens, reserve};
}

struct Want {
    Phase phase;
    double start, end;
};

void check_stretches(const ch05::RequestTimeline& t, const std::vector<Want>& want) {
    CAPTURE(t.id);
    REQUIRE(t.stretches.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        CAPTURE(i);
        CHECK(t.stretches[i].phase == want[i].phase);
        CHECK(t.stretches[i].start == want[i].start);
        CHECK(t.stretches[i].end == want[i].end);
    }
}

// Each request's stretches touch, from its arrival to its end.
void check_contiguous(const ch05::PolicyTimeline& p) {
    for (const ch05::RequestTimeline& t : p.requests) {
        CAPTURE(t.id);
        REQUIRE(!t.stretches.empty());
        CHECK(t.stretches.front().start == t.arrival_s);
        for (std::size_t i = 1; i < t.stretches.size(); ++i)
            CHECK(t.stretches[i].start == doctest::Approx(t.stretches[i - 1].end));
        CHECK(t.stretches.back().end <= p.end_s);
    }
}

}  // namespace

TEST_CASE("the timeline of a schedule computed by hand: three requests in batches of two") {
    // Answers of 1, 3 and 2 tokens; all arrive at 0.
    const std::vector<Request> q = queue_of({1, 3, 2});
    const MemoryBudget budget = room_for(1000, Reservation::whole_context);
    const Policy static_batching{"static", 2, false, true}, continuous{"continuous", 2, true, true};
    RoundTimes round;

    // Static: r0 and r1 form a batch; r0 is answered by its prefill and pads
    // the batch until r1's last token at 2.5 s; only then r2 may start.
    const ch05::PolicyTimeline s = ch05::record_timeline(q, static_batching, budget, round);
    check_stretches(s.requests[0], {{Phase::prefill, 0, 1}, {Phase::padding, 1, 2.5}});
    check_stretches(s.requests[1],
                    {{Phase::waiting, 0, 1}, {Phase::prefill, 1, 2}, {Phase::decode, 2, 2.5}});
    check_stretches(
        s.requests[2],
        {{Phase::waiting, 0, 2.5}, {Phase::prefill, 2.5, 3.5}, {Phase::decode, 3.5, 3.75}});
    CHECK(s.end_s == 3.75);

    // Continuous: r0 leaves at 1 s and r2 takes its slot; r2's prefill runs
    // alone while r1, already answering, stalls.
    const ch05::PolicyTimeline c = ch05::record_timeline(q, continuous, budget, round);
    check_stretches(c.requests[0], {{Phase::prefill, 0, 1}});
    check_stretches(c.requests[1], {{Phase::waiting, 0, 1},
                                    {Phase::prefill, 1, 2},
                                    {Phase::stalled, 2, 3},
                                    {Phase::decode, 3, 3.5}});
    check_stretches(c.requests[2],
                    {{Phase::waiting, 0, 2}, {Phase::prefill, 2, 3}, {Phase::decode, 3, 3.25}});
    CHECK(c.end_s == 3.5);
    CHECK(c.requests[2].first_token_s == 3);

    // The picture draws exactly these stretches, in milliseconds.
    const std::string svg = ch05::batching_timeline_plot({s, c}, "three requests").svg();
    CHECK(test::svg_problem(svg) == "");
    CHECK(test::drawn_bars(svg).size() == 8 + 8);  // each policy's stretches, as above
    CHECK(svg.find("<title>request 1: stalled: another request&#39;s prefill runs alone, 1000.0 "
                   "ms (2000.0 ms to 3000.0 ms)</title>") != std::string::npos);
    CHECK(svg.find(">ttft 2000.0 ms</text>") != std::string::npos);
}

TEST_CASE("a request sent back to the queue waits there; it does not stall") {
    // Room for 8 positions, charged as held: two 4-token prompts fit, but
    // their caches outgrow the room and the newer one is sent back.
    const std::vector<Request> q = queue_of({4, 4}, 3);
    RoundTimes round;
    const ch05::PolicyTimeline c = ch05::record_timeline(
        q, {"continuous", 2, true, true}, room_for(8, Reservation::tokens_held), round);
    check_contiguous(c);
    const std::vector<ch05::Stretch>& r1 = c.requests[1].stretches;
    int prefills = 0;
    bool waited_after_decoding = false;
    for (std::size_t i = 0; i < r1.size(); ++i) {
        prefills += r1[i].phase == Phase::prefill;
        if (r1[i].phase == Phase::waiting && i > 0)
            waited_after_decoding = std::any_of(r1.begin(), r1.begin() + long(i),
                                                [](auto& s) { return s.phase == Phase::decode; });
    }
    CHECK(prefills == 2);  // prefilled again after it was sent back
    CHECK(waited_after_decoding);
}

TEST_CASE("chapter 05's timeline: static batches never start a request before the batch ends") {
    WorkloadOptions w;  // the chapter's queue and budget
    const std::vector<Request> queue = make_workload(w);
    const Config config;
    const MemoryBudget budget = make_budget(config, 16, Reservation::whole_context);
    const std::vector<ch05::PolicyTimeline> both = ch05::batching_timelines(queue, budget, config);
    REQUIRE(both.size() == 2);
    const ch05::PolicyTimeline &s = both[0], &c = both[1];
    CHECK(!s.policy.continuous);
    CHECK(c.policy.continuous);
    REQUIRE(s.requests.size() == std::size_t(ch05::kTimelineRequests));
    check_contiguous(s);
    check_contiguous(c);

    auto prefill_start = [](const ch05::RequestTimeline& t) {
        for (const ch05::Stretch& x : t.stretches)
            if (x.phase == Phase::prefill) return x.start;
        return -1.0;
    };
    // Static: requests 0-3 are one batch, 4-7 the next. Every row of the
    // first stays (decoding or padding) until the batch's longest answer is
    // done, and no request of the second starts before that.
    const int B = ch05::kTimelineBatch;
    double first_batch_end = 0;
    for (int i = 0; i < B; ++i)
        first_batch_end = std::max(first_batch_end, s.requests[i].finished_s);
    for (int i = 0; i < B; ++i) CHECK(s.requests[i].stretches.back().end == first_batch_end);
    for (int i = B; i < 2 * B; ++i) CHECK(prefill_start(s.requests[i]) >= first_batch_end);
    // Continuous: the first request of the second four starts when the
    // first answer of the first four is done, long before that.
    double first_done = 1e300;
    for (int i = 0; i < B; ++i) first_done = std::min(first_done, c.requests[i].finished_s);
    CHECK(prefill_start(c.requests[B]) == first_done);
    CHECK(first_done < first_batch_end);
    CHECK(c.end_s < s.end_s);
    // Both share the scheduler's own records.
    for (const ch05::RequestTimeline& t : c.requests) CHECK(t.stretches.back().end == t.finished_s);
}
