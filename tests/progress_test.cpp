// Signs of life from long work: the forward pass's observer (core), the
// progress line (kit) and the two joined (PassesShown).
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../common/core/generation.h"
#include "../common/core/kv_cache.h"
#include "../common/core/transformer.h"
#include "../common/kit/answer_timing.h"
#include "../common/kit/program.h"
#include "tiny_models.h"

using namespace kv;

namespace {

// tiny_config with room for a pass longer than two signs' worth of rows.
Config long_config() {
    Config c = test::tiny_config();
    c.max_seq = 2 * Transformer::kRowsPerSign + 100;
    return c;
}

std::vector<float> copy(std::span<const float> logits) {
    return {logits.begin(), logits.end()};
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("the pass observer is told after each layer in order and changes no logit") {
    const Config c = test::tiny_config();
    Transformer watched(c, 5), plain(c, 5);
    std::vector<PassProgress> seen;
    watched.on_progress = [&](const PassProgress& p) { seen.push_back(p); };
    const std::vector<int> prompt = fixed_prompt(9, c.vocab_size, 3);
    KVCache a(c), b(c);
    CHECK(same_bits(copy(watched.forward(prompt, a)), copy(plain.forward(prompt, b))));
    REQUIRE(seen.size() == std::size_t(c.n_layers));
    for (int l = 0; l < c.n_layers; ++l) {
        CHECK(seen[std::size_t(l)].layer == l);
        CHECK(seen[std::size_t(l)].layers == c.n_layers);
        CHECK(seen[std::size_t(l)].rows_done == 9);
        CHECK(seen[std::size_t(l)].rows == 9);
    }
    // A decode step: one row, again once per layer.
    seen.clear();
    const int token = 7;
    CHECK(same_bits(copy(watched.forward(std::span(&token, 1), a)),
                    copy(plain.forward(std::span(&token, 1), b))));
    REQUIRE(seen.size() == std::size_t(c.n_layers));
    CHECK(seen.back().rows == 1);
}

TEST_CASE("a long pass tells how far each layer's attention has got; all sequences together") {
    const Config c = long_config();
    const int sign = Transformer::kRowsPerSign;
    Transformer watched(c, 8), plain(c, 8);
    std::vector<PassProgress> seen;
    watched.on_progress = [&](const PassProgress& p) { seen.push_back(p); };
    // Two sequences in one pass: 2 sign + 30 rows, the first sign inside the
    // first sequence, the second inside the second.
    const std::vector<std::vector<int>> tokens = {fixed_prompt(sign + 10, c.vocab_size, 1),
                                                  fixed_prompt(sign + 20, c.vocab_size, 2)};
    std::vector<KVCache> with(2, KVCache(c)), without(2, KVCache(c));
    const Matrix& x = watched.forward(tokens, with);
    const std::vector<float> first(x.data.begin(), x.data.end());
    const Matrix& y = plain.forward(tokens, without);
    CHECK(same_bits(first, std::vector<float>(y.data.begin(), y.data.end())));
    const int rows = 2 * sign + 30;
    REQUIRE(seen.size() == std::size_t(3 * c.n_layers));
    for (int l = 0; l < c.n_layers; ++l)
        for (int k = 0; k < 3; ++k) {
            const PassProgress& p = seen[std::size_t(3 * l + k)];
            CAPTURE(l);
            CAPTURE(k);
            CHECK(p.layer == l);
            CHECK(p.rows == rows);
            CHECK(p.rows_done == (k < 2 ? (k + 1) * sign : rows));
        }
}

TEST_CASE("progress writes nothing when stderr is not a terminal") {
    std::ostringstream out;
    {
        Progress progress("working", out, false, std::chrono::milliseconds(0));
        CHECK_FALSE(progress.on_terminal());
        CHECK_FALSE(progress.due());
        progress.update(1, 3, "a note");
        progress.detail("a detail");
    }
    CHECK(out.str().empty());
}

TEST_CASE("progress on a terminal: a new count at once; notes at most every tenth of a second") {
    // Notes held back: an hour between notes, so no pause of a loaded
    // machine can let one through.
    std::ostringstream out;
    {
        Progress progress("working", out, true, std::chrono::milliseconds(0),
                          std::chrono::hours(1));
        progress.update(1, 3);
        CHECK(out.str() == "\rworking 1/3");
        progress.update(1, 3, "a note");  // the same count, at once after: held back
        CHECK_FALSE(progress.due());
        CHECK(out.str() == "\rworking 1/3");
        progress.update(2, 3, "(a warm-up)");  // a new count shows at once
        CHECK(out.str() == "\rworking 1/3\rworking 2/3 (a warm-up)");
        progress.detail("a pass of 300 tokens: layer 1/2");  // held back
        CHECK(out.str() == "\rworking 1/3\rworking 2/3 (a warm-up)");
        out.str("");
    }
    // Leaving, it blanks the longest line it showed and goes back.
    CHECK(out.str() ==
          "\r" + std::string(std::string("working 2/3 (a warm-up)").size(), ' ') + "\r");

    // Once the interval has passed (here none), a note or detail shows.
    std::ostringstream later;
    {
        Progress progress("working", later, true, std::chrono::milliseconds(0),
                          std::chrono::milliseconds(0));
        progress.update(2, 3, "(a warm-up)");
        CHECK(progress.due());
        later.str("");
        progress.detail("a pass of 300 tokens: layer 1/2");
        CHECK(later.str() == "\rworking 2/3 (a warm-up), a pass of 300 tokens: layer 1/2");
        later.str("");
    }
    const std::string blank(
        std::string("working 2/3 (a warm-up), a pass of 300 tokens: layer 1/2").size(), ' ');
    CHECK(later.str() == "\r" + blank + "\r");
    // The book's own Progress waits a tenth of a second between notes.
    Progress book("working", later, true, std::chrono::milliseconds(0));
    book.update(1, 2);
    book.update(1, 2, "a note");
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
    CHECK(book.due());
}

TEST_CASE("progress on a terminal waits out its quiet time; so quick runs show nothing") {
    std::ostringstream out;
    {
        Progress progress("working", out, true, std::chrono::seconds(60));
        CHECK_FALSE(progress.due());
        progress.update(1, 2);
        progress.update(2, 2, "note");
        progress.detail("detail");
    }
    CHECK(out.str().empty());
}

TEST_CASE("PassesShown watches a model only on a terminal; shows long passes and lets go") {
    const Config c = long_config();
    Transformer model(c, 4);
    std::ostringstream out;
    {
        Progress elsewhere("working", out, false, std::chrono::milliseconds(0));
        const PassesShown passes(model, elsewhere);
        CHECK_FALSE(bool(model.on_progress));
    }
    int before = 0;
    model.on_progress = [&](const PassProgress&) { ++before; };
    {
        Progress progress("working", out, true, std::chrono::milliseconds(0));
        const PassesShown passes(model, progress);
        const std::vector<int> prompt =
            fixed_prompt(Transformer::kRowsPerSign + 44, c.vocab_size, 6);
        KVCache cache(c);
        model.forward(prompt, cache);
        // The first sign shows (the line had shown nothing yet); the rest
        // came within a tenth of a second.
        CHECK(out.str().find("\rworking, a pass of 300 tokens: layer 1/2 (256 attended)") == 0);
        CHECK(before == 0);  // the model's own observer was set aside
    }
    const int token = 1;
    KVCache cache(c);
    model.forward(std::span(&token, 1), cache);
    CHECK(before == c.n_layers);  // and is back
}
