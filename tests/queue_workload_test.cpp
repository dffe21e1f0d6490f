// Chapter 05: the workload is what its flags say, and the same everywhere.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "../chapters/05_queue_simulation/experiment.h"
#include "../common/serving/workload.h"
#include "validate/vllm_workload.h"

using namespace kv;

namespace {

double mean_answer(const std::vector<Request>& queue) {
    double sum = 0;
    for (const Request& r : queue) sum += r.answer_len;
    return sum / double(queue.size());
}

}  // namespace

TEST_CASE("workload lengths stay in their ranges and average what they should") {
    WorkloadOptions w;
    w.requests = 20000;
    for (const std::string dist : {"geometric", "uniform"}) {
        w.answer_dist = dist;
        const std::vector<Request> queue = make_workload(w);
        int shortest_prompt = 1 << 30, longest_prompt = 0, longest_answer = 0;
        for (std::size_t i = 0; i < queue.size(); ++i) {
            const Request& r = queue[i];
            CHECK(r.id == int(i));
            CHECK(r.arrival_s == 0);
            CHECK(r.answer_len >= 1);
            CHECK(r.answer_len <= r.answer_cap);
            CHECK(r.answer_cap == w.answer_max);
            shortest_prompt = std::min(shortest_prompt, r.prompt_len);
            longest_prompt = std::max(longest_prompt, r.prompt_len);
            longest_answer = std::max(longest_answer, r.answer_len);
        }
        CHECK(shortest_prompt == w.prompt_min);
        CHECK(longest_prompt == w.prompt_max);
        // Geometric with mean 48 cut at 192: the mean is (1 - (47/48)^192) x 48.
        const double expected = dist == "uniform" ? 48.0 : 48.0 * (1 - std::pow(47.0 / 48.0, 192));
        INFO(dist << ": mean answer " << mean_answer(queue) << ", expected " << expected);
        CHECK(std::fabs(mean_answer(queue) - expected) < 1.0);
        CHECK(longest_answer == (dist == "uniform" ? 95 : 192));
    }
}

TEST_CASE("poisson arrivals are in order and average the asked rate") {
    WorkloadOptions w;
    w.requests = 20000;
    w.rate = 5.0;
    const std::vector<Request> queue = make_workload(w);
    for (std::size_t i = 1; i < queue.size(); ++i)
        CHECK(queue[i].arrival_s >= queue[i - 1].arrival_s);
    const double mean_gap = queue.back().arrival_s / double(queue.size());
    CHECK(mean_gap == doctest::Approx(1 / w.rate).epsilon(0.03));
}

TEST_CASE("portable_log agrees with std::log") {
    double worst = 0;
    for (double x = 1e-12; x <= 1.0; x *= 1.37)
        worst = std::max(worst, std::fabs(portable_log(x) - std::log(x)) /
                                    std::max(1.0, std::fabs(std::log(x))));
    CHECK(portable_log(1.0) == 0.0);
    CHECK(worst < 1e-14);
}

TEST_CASE("the same seed gives the same workload") {
    WorkloadOptions w;
    w.rate = 3.0;
    const std::vector<Request> a = make_workload(w), b = make_workload(w);
    w.seed = 2;
    const std::vector<Request> c = make_workload(w);
    bool same = true, differs = false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        same = same && a[i].arrival_s == b[i].arrival_s && a[i].prompt_len == b[i].prompt_len &&
               a[i].answer_len == b[i].answer_len;
        differs = differs || a[i].answer_len != c[i].answer_len;
    }
    CHECK(same);
    CHECK(differs);
}

TEST_CASE("workload options that make no sense are errors naming the flag") {
    auto error_of = [](WorkloadOptions w) -> std::string {
        ch05::Experiment e;  // the model's context: 512 positions
        e.queue.workload = w;
        try {
            e.check();
        } catch (const UsageError& error) {
            return error.what();
        }
        return "";
    };
    WorkloadOptions w;
    w.requests = 0;
    CHECK(error_of(w).find("--requests") != std::string::npos);
    w = {};
    w.prompt_max = 4;  // below prompt_min 8
    CHECK(error_of(w).find("--prompt-max") != std::string::npos);
    w = {};
    w.answer_max = 20;  // below the mean
    CHECK(error_of(w).find("--answer-max") != std::string::npos);
    w = {};
    w.prompt_max = 400;  // 400 + 192 - 1 > 512
    CHECK(error_of(w).find("--max-seq") != std::string::npos);
    w = {};
    w.answer_dist = "uniform";
    w.answer_max = 60;  // uniform draws up to 95
    CHECK(error_of(w).find("--answer-dist") != std::string::npos);
    w = {};
    w.rate = -1;
    CHECK(error_of(w).find("--rate") != std::string::npos);
    CHECK(error_of(WorkloadOptions{}).empty());
}

// ------------------------------------------- the file vllm bench serve reads

TEST_CASE("the saved workload is one JSON object per request with vLLM's custom fields") {
    kv::WorkloadOptions w;
    w.requests = 40;
    const std::vector<kv::Request> queue = kv::make_workload(w);
    const std::string text = kv::workload_jsonl(queue);
    std::istringstream lines(text);
    std::string line;
    int count = 0;
    while (std::getline(lines, line)) {
        const kv::Request& r = queue[std::size_t(count)];
        // {"prompt": "r<id> w2 ... w<len>", "output_tokens": <answer>, "request_id": <id>}
        REQUIRE(line.front() == '{');
        REQUIRE(line.back() == '}');
        const std::string prompt_key = "{\"prompt\": \"";
        REQUIRE(line.rfind(prompt_key, 0) == 0);
        const std::size_t prompt_end = line.find('"', prompt_key.size());
        const std::string prompt = line.substr(prompt_key.size(), prompt_end - prompt_key.size());
        std::istringstream words(prompt);
        int n = 0;
        for (std::string word; words >> word;) ++n;
        CHECK(n == r.prompt_len);  // one word per prompt token
        std::string first_word = "r";
        first_word += std::to_string(r.id);
        CHECK(prompt.substr(0, prompt.find(' ')) == first_word);
        std::string rest = "\", \"output_tokens\": ";
        rest += std::to_string(r.answer_len);
        rest += ", \"request_id\": ";
        rest += std::to_string(r.id);
        rest += "}";
        CHECK(line.substr(prompt_end) == rest);
        ++count;
    }
    CHECK(count == w.requests);
    CHECK(text.back() == '\n');
}

TEST_CASE("every arrival rate above 0 draws the same lengths") {
    kv::WorkloadOptions w;
    w.requests = 300;
    w.rate = 5;
    const std::vector<kv::Request> slow = kv::make_workload(w);
    w.rate = 500;
    const std::vector<kv::Request> fast = kv::make_workload(w);
    for (std::size_t i = 0; i < slow.size(); ++i) {
        CHECK(slow[i].prompt_len == fast[i].prompt_len);
        CHECK(slow[i].answer_len == fast[i].answer_len);
        CHECK(slow[i].arrival_s == doctest::Approx(fast[i].arrival_s * 100));  // only the scale
    }
}
