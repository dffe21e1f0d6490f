// Chapter 05: the cost model's fit, its file, and its analytic prices.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "../chapters/05_queue_simulation/experiment.h"
#include "../common/lab/calibration.h"
#include "../common/serving/cost_model.h"
#include "tiny_models.h"

using namespace kv;
using kv::ch05::load_cost_model, kv::ch05::save_cost_model;

namespace {

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / name).string();
}

}  // namespace

TEST_CASE("the fit recovers the coefficients of exact data") {
    const double a = 1.5e-3, b = 2.25e-4, c = 3.0e-7;
    std::vector<CalibrationPoint> points;
    for (double x1 : {8.0, 32.0, 96.0, 255.0})
        for (double x2 : {1.0, 1000.0, 60000.0}) {
            CalibrationPoint p;
            p.x1 = x1;
            p.x2 = x2;
            p.seconds = a + b * x1 + c * x2;
            points.push_back(p);
        }
    const LinearFit fit = fit_nonnegative(points);
    CHECK(fit.k[0] == doctest::Approx(a).epsilon(1e-9));
    CHECK(fit.k[1] == doctest::Approx(b).epsilon(1e-9));
    CHECK(fit.k[2] == doctest::Approx(c).epsilon(1e-9));
    CHECK(fit.max_error < 1e-9);
    for (const CalibrationPoint& p : points) CHECK(p.fitted == doctest::Approx(p.seconds));
}

TEST_CASE("the fit never prices work below zero") {
    // Data whose unconstrained best line has a negative slope in x2.
    std::vector<CalibrationPoint> points;
    for (double x1 : {1.0, 2.0, 4.0, 8.0}) {
        CalibrationPoint p;
        p.x1 = x1;
        p.x2 = 100 * x1 * x1;
        p.seconds = 1e-3 * x1 - 1e-7 * p.x2 + 1e-4;
        points.push_back(p);
    }
    const LinearFit fit = fit_nonnegative(points);
    for (double k : fit.k) CHECK(k >= 0);
    CHECK(fit.max_error < 0.5);
}

TEST_CASE("a saved cost model loads back exactly and only for its model") {
    const Config c = test::tiny_config();
    CostModel m = analytic_cost_model(c);
    m.fit_error = 0.125;
    const std::string path = temp_path("kv_book_ch05_cost_model.txt");
    save_cost_model(m, path);
    const CostModel back = load_cost_model(path, c);
    CHECK(back.pass_fixed == m.pass_fixed);
    CHECK(back.pass_per_token == m.pass_per_token);
    CHECK(back.pass_per_token_sq == m.pass_per_token_sq);
    CHECK(back.step_fixed == m.step_fixed);
    CHECK(back.step_per_sequence == m.step_per_sequence);
    CHECK(back.step_per_context == m.step_per_context);
    CHECK(back.fit_error == m.fit_error);

    Config other = c;
    other.n_layers = 3;
    CHECK_THROWS_AS(load_cost_model(path, other), UsageError);
    write_file(path, "model " + c.describe() + "\npass_fixed -1\n");
    CHECK_THROWS_AS(load_cost_model(path, c), UsageError);
    write_file(path, "nonsense\n");
    CHECK_THROWS_AS(load_cost_model(path, c), UsageError);
    std::remove(path.c_str());
    CHECK_THROWS_AS(load_cost_model(path, c), UsageError);
}

TEST_CASE("the analytic model prices what the engine does") {
    const CostModel m = analytic_cost_model(Config{});
    // A batch shares one read of the weights: per token, a step of 32 is
    // cheaper than a step of 1.
    CHECK(m.decode_seconds(32, 32 * 100) / 32 < m.decode_seconds(1, 100));
    // Recomputing a sequence costs more than decoding its next token.
    CHECK(m.prefill_seconds(101) > m.decode_seconds(1, 100));
    // Longer prompts cost more, and more than linearly (attention).
    CHECK(m.prefill_seconds(200) > 2 * m.prefill_seconds(100) - m.pass_fixed);
}

TEST_CASE("calibration on a tiny model gives usable coefficients") {
    const Config c = test::tiny_config();
    Transformer model(c, 3);
    const Calibration cal = calibrate(model, 20, 4);
    CHECK(cal.passes.size() >= 3);
    CHECK(cal.steps.size() >= 3);
    for (double k : {cal.cost.pass_fixed, cal.cost.pass_per_token, cal.cost.pass_per_token_sq,
                     cal.cost.step_fixed, cal.cost.step_per_sequence, cal.cost.step_per_context})
        CHECK((std::isfinite(k) && k >= 0));
    CHECK(cal.cost.prefill_seconds(10) > 0);
    CHECK(cal.cost.decode_seconds(1, 10) > 0);
    CHECK(cal.cost.model == c.describe());
}

TEST_CASE("the analytic step reads the output table when it is the embedding") {
    Config separate = test::hand_sized_config();
    Config shared = separate;
    shared.shared_output = true;
    // Both read the same bytes: the separate table is only looked up, and
    // the shared one is read once, as the output projection.
    const double bytes = double(separate.weight_bytes_read_per_pass());
    CHECK(bytes == 4.0 * 172);
    CHECK(double(shared.weight_bytes_read_per_pass()) == bytes);
    CHECK(analytic_cost_model(separate).step_fixed == bytes / kAnalyticBytesPerSecond);
    CHECK(analytic_cost_model(shared).step_fixed == bytes / kAnalyticBytesPerSecond);
}
