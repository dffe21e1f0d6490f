// make validate: every chapter's checked queues on the real engine and on
// the simulator (validation.h), and one report: each measure
// real against simulated, and whether each operating point is within the
// target. A measurement, not a test: a missed target still exits 0. Only
// requests finished in different orders are an error (exit 1): the
// scheduler is the same code on both sides, so that is a bug, not a price.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "../../common/core/timing.h"
#include "../../common/core/transformer.h"
#include "../../common/kit/files.h"
#include "../../common/kit/output.h"
#include "../../common/kit/program.h"  // Progress
#include "../../common/kit/report.h"
#include "../../common/lab/calibration.h"
#include "../../common/lab/queue_flags.h"
#include "options.h"
#include "validation.h"
#include "vllm_workload.h"

namespace kv {

struct ValidateResults {
    std::string machine;  // this CPU and this build
    Config model;
    StepCalibration pricing;  // the step cost the simulator priced with
    int runs = 0;             // of each queue on the engine
    std::vector<CheckedRow> rows;
    std::vector<std::string> saved_workloads;  // with --save-workloads: the files written
    double seconds = 0;                        // wall time of the whole validation
};

// "05-continuous-cache-128-requests.jsonl"
inline std::string workload_file_name(const CheckedQueue& q) {
    return q.chapter + "-" + file_name_part(q.name) + ".jsonl";
}

// Each queue `runs` times on one engine, with a progress line on a
// terminal ("validate: queue 3/12 run 2/5 ..."), against the simulator.
inline ValidateResults run_validation(const ValidateOptions& o,
                                      const std::vector<CheckedQueue>& queues) {
    const auto start = Clock::now();
    ValidateResults r;
    r.machine = machine_and_build();
    r.model = o.model;
    r.runs = o.runs;
    for (const CheckedQueue& q : queues)  // first: a folder that cannot be written stops it at once
        if (!o.save_workloads.empty()) {
            const std::string path = o.save_workloads + "/" + workload_file_name(q);
            write_file(path, workload_jsonl(q.requests), "--save-workloads");
            r.saved_workloads.push_back(path);
        }
    r.pricing = machine_step_cost(o.model, o.seed, o.calibrate);
    Transformer model(o.model, o.seed);
    Progress progress("validate: queue");
    for (std::size_t i = 0; i < queues.size(); ++i) {
        const CheckedQueue& q = queues[i];
        r.rows.push_back(check_queue_against_engine(q, model, r.pricing.cost, o.runs, [&](int run) {
            progress.update(long(i + 1), long(queues.size()),
                            "run " + std::to_string(run) + "/" + std::to_string(o.runs) + " (" +
                                q.chapter + ": " + q.name + ")");
        }));
    }
    r.seconds = seconds_since(start);
    return r;
}

// ------------------------------------------------------------- the report

// "+4.2%" for an error with its sign.
inline std::string signed_percent(double fraction) {
    const double p = 100 * fraction;
    std::string text = std::signbit(p) ? "" : "+";
    text += fixed(p, 1);
    text += '%';
    return text;
}

// The measures of `row` more than the target off, as "ttft p50 +6.2%".
inline std::vector<std::string> misses(const CheckedRow& row) {
    std::vector<std::string> out;
    for (const Measure& m : kMeasures) {
        const double e = relative_error(row.simulated.*m.value, row.real.*m.value);
        if (!within_target(e)) out.push_back(std::string(m.name) + " " + signed_percent(e));
    }
    return out;
}

// One row per measure, each queue's name on its first: times to first
// token and totals in seconds, times between tokens in milliseconds.
inline Table validation_table(const std::vector<CheckedRow>& rows) {
    Table t(
        {"chapter: queue", "measure", "real", "simulated", "error", "runs spread", "same order"});
    for (const CheckedRow& row : rows) {
        bool first = true;
        for (const Measure& m : kMeasures) {
            const bool ms = std::string(m.name).starts_with("tbt");
            const double real = row.real.*m.value, sim = row.simulated.*m.value;
            const double e = relative_error(sim, real);
            t.add_row(
                {first ? row.chapter + ": " + row.name : "",
                 std::string(m.name) + (ms ? " (ms)" : " (s)"), Cell(ms ? 1e3 * real : real, 3),
                 Cell(ms ? 1e3 * sim : sim, 3), Cell(signed_percent(e), e),
                 first ? Cell(fixed(100 * row.run_spread, 1) + "%", row.run_spread) : Cell(""),
                 first ? (row.same_order ? "yes" : "no") : ""});
            first = false;
        }
    }
    return t;
}

// One line per chapter with an operating point: within the target on all
// four measures, or a warning naming each miss.
inline std::vector<std::string> operating_point_lines(const std::vector<CheckedRow>& rows) {
    std::vector<std::string> chapters, lines;
    for (const CheckedRow& row : rows)
        if (row.operating_point &&
            std::find(chapters.begin(), chapters.end(), row.chapter) == chapters.end())
            chapters.push_back(row.chapter);
    const std::string target = fixed(100 * kTarget, 1) + "%";
    for (const std::string& ch : chapters) {
        std::string missed;
        int queues = 0;
        for (const CheckedRow& row : rows) {
            if (row.chapter != ch || !row.operating_point) continue;
            ++queues;
            const std::vector<std::string> m = misses(row);
            if (m.empty()) continue;
            missed += (missed.empty() ? "" : "; ") + row.name + ":";
            for (std::size_t i = 0; i < m.size(); ++i) missed += (i ? ", " : " ") + m[i];
        }
        const std::string point = "chapter " + ch + "'s operating point (" +
                                  std::to_string(queues) + (queues == 1 ? " queue)" : " queues)");
        lines.push_back(missed.empty() ? point + ": within " + target + " on all four"
                                       : "warning: " + point + " is more than " + target +
                                             " off the engine: " + missed);
    }
    return lines;
}

// The queues whose engine and simulator finished the requests in different orders.
inline std::vector<std::string> order_errors(const std::vector<CheckedRow>& rows) {
    std::vector<std::string> out;
    for (const CheckedRow& row : rows)
        if (!row.same_order)
            out.push_back(
                "error: chapter " + row.chapter + ", " + row.name +
                ": the engine and the simulator finished the requests in different orders");
    return out;
}

inline Json row_json(const CheckedRow& row) {
    Json real, simulated, error;
    for (const Measure& m : kMeasures) {
        std::string key = m.name;
        std::replace(key.begin(), key.end(), ' ', '_');
        real.add(key + "_s", row.real.*m.value);
        simulated.add(key + "_s", row.simulated.*m.value);
        error.add(key, relative_error(row.simulated.*m.value, row.real.*m.value));
    }
    return Json()
        .add("chapter", row.chapter)
        .add("name", row.name)
        .add("operating_point", row.operating_point)
        .add("real", real)
        .add("simulated", simulated)
        .add("error", error)
        .add("run_spread", row.run_spread)
        .add("same_order", row.same_order)
        .add("within_target", within_target(row));
}

inline Json validate_json(const ValidateResults& r) {
    return Json()
        .add("program", "validate")
        .add("machine", r.machine)
        .add("model", r.model.describe())
        .add("step_cost", step_cost_json(r.pricing))
        .add("runs", r.runs)
        .add("target", kTarget)
        .add_each("queues", r.rows, row_json)
        .add_each(
            "operating_points", operating_point_lines(r.rows),
            [](const std::string& line) {
                return Json().add("line", line).add("within_target", !line.starts_with("warning"));
            })
        .add_each("order_errors", order_errors(r.rows),
                  [](const std::string& e) { return Json().add("error", e); })
        .add_each("saved_workloads", r.saved_workloads,
                  [](const std::string& path) { return Json().add("path", path); })
        .add("seconds", r.seconds);
}

inline void print_validation(std::ostream& out, const ValidateResults& r) {
    out << "make validate: the simulator against the real engine, queue by queue\n\n"
        << "machine: " << r.machine << "\n"
        << "model: " << r.model.describe() << "\n"
        << step_cost_text(r.pricing) << "engine: runs of each queue: " << r.runs
        << ", each step timed in the thread's CPU time and kept at its fastest run; "
           "error: simulated / real - 1\n\n";
    validation_table(r.rows).print(out);
    out << "ttft p50: median time to first token; tbt: time between tokens; total: the queue's "
           "whole time;\nruns spread: the slowest run's total against the fastest's; same order: "
           "the "
           "engine finished the requests in the simulator's order\n\n";
    for (const std::string& line : operating_point_lines(r.rows)) out << line << "\n";
    for (const std::string& e : order_errors(r.rows)) out << e << "\n";
    for (const std::string& path : r.saved_workloads) out << "workload saved: " << path << "\n";
    out << "validated " << r.rows.size() << " queues x " << r.runs << " runs in "
        << format_duration(r.seconds) << "\n";
}

// The JSON (with --json) or the text. Exit status 1 if any queue's order
// of finishing differs, else 0, whatever the errors.
inline int validate_report(const ValidateResults& r, const OutputOptions& options) {
    if (!emit(options, validate_json(r))) print_validation(std::cout, r);
    return order_errors(r.rows).empty() ? 0 : 1;
}

}  // namespace kv
