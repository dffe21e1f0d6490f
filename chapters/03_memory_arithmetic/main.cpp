// Chapter 03: what the KV cache costs in memory, and what that caps.
// Prices the cache of any model shape factor by factor, compares attention
// layouts and number widths, counts the conversations a memory budget holds,
// and checks the formula against the bytes the demo model's cache really
// uses.
#include <iostream>

#include "../../common/core/config.h"
#include "../../common/kit/model_flags.h"
#include "../../common/kit/output.h"
#include "../../common/kit/program.h"
#include "../../common/kit/report.h"
#include "measured_cache.h"
#include "memory_arithmetic.h"
#include "memory_report.h"
#include "price_flags.h"

using namespace kv;

int main(int argc, char** argv) {
    return run_program("03_memory_arithmetic", [&] {
        PriceOptions price;           // the shape priced, its context and the budget
        int measure_tokens = 16384;   // positions of the cache whose resident memory is measured
        const int prompt_len = 16;    // the demo answer of chapters 01-02: 16-token prompt...
        const int decode_steps = 48;  // ...then one decode step per answer token
        OutputOptions out;

        Flags flags("03_memory_arithmetic",
                    "KV cache memory: bytes per token, per conversation, and how many fit.");
        add_price_flags(flags, price);
        flags.add("measure-tokens", measure_tokens, 1, 1 << 24,
                  "positions of the demo model's cache whose resident memory is measured");
        add_output_flags(flags, out);
        if (!flags.parse(argc, argv)) return 0;
        check_price_options(price);
        const std::uint64_t budget = gib_to_bytes(price.budget_gib);
        const Config demo;  // the book's demo model (common/core/config.h)
        const std::uint64_t measure_bytes = demo.kv_bytes(std::uint64_t(measure_tokens));
        if (physical_memory_bytes() != 0 && measure_bytes > physical_memory_bytes() / 4)
            throw UsageError("--measure-tokens " + std::to_string(measure_tokens) + " needs " +
                             format_bytes(measure_bytes) + ", more than a quarter of this " +
                             "machine's " + format_bytes(physical_memory_bytes()));

        // Resident memory first, while the process is fresh (see measured_cache.h).
        const ResidentGrowth resident = measure_resident_growth(demo, measure_tokens);
        const std::vector<CacheReading> readings =
            read_cache_while_decoding(demo, prompt_len, decode_steps, 1);
        bool all_agree = true;
        for (const CacheReading& r : readings) all_agree = all_agree && r.agree();

        const std::uint64_t per_token = bytes_per_token(price.shape);
        const std::uint64_t per_conversation = cache_bytes(price.shape, price.context);
        const BudgetFit fit = fit_budget(price.shape, budget, price.context, price.mean_tokens);
        const Table layouts = layout_table(price);
        const Table budgets = budget_table(price, budget);
        const Table demo_readings = reading_table(readings);
        const std::string plot_path =
            write_price_plot(price, budget, out.plot_dir + "/03_cache_bytes.svg");

        if (emit(out, Json()
                          .add("chapter", "03_memory_arithmetic")
                          .add("layers", price.shape.layers)
                          .add("heads", price.heads)
                          .add("kv_heads", price.shape.kv_heads)
                          .add("head_size", price.shape.head_size)
                          .add("bytes_per_number", price.shape.bytes_per_number)
                          .add("context", price.context)
                          .add("bytes_per_token", per_token)
                          .add("bytes_per_conversation", per_conversation)
                          .add("derivation", derivation_table(price.shape))
                          .add("layouts", layouts)
                          .add("budget_bytes", budget)
                          .add("mean_len", price.mean_tokens)
                          .add("budget", budgets)
                          .add("demo_model", demo.describe())
                          .add("demo_bytes_per_token", demo.kv_bytes_per_token())
                          .add("demo_cache", demo_readings)
                          .add("demo_cache_agrees", all_agree)
                          .add("resident", resident_json(resident))
                          .add("plot", plot_path)))
            return all_agree ? 0 : 1;

        std::cout << "Chapter 03: what the KV cache costs in memory\n\n"
                  << "Priced shape: " << price.shape.layers << " layers, " << price.shape.kv_heads
                  << " KV heads (" << price.heads << " query heads), head size "
                  << price.shape.head_size << ", " << bits_name(price.shape.bytes_per_number)
                  << " numbers, context " << with_commas(price.context) << " tokens\n\n"
                  << "Bytes of cache per token, one factor at a time, then per conversation:\n";
        print_derivation(std::cout, price.shape, price.context);
        std::cout << "\nEvery attention layout and number width, context "
                  << with_commas(price.context) << " tokens:\n";
        layouts.print(std::cout);
        std::cout << "\nBudget: " << size_words(budget) << " for the cache.\n"
                  << "A conversation may use " << with_commas(price.context)
                  << " tokens; on average it holds " << with_commas(price.mean_tokens) << ".\n";
        budgets.print(std::cout);
        std::cout << "Reserving the whole context, " << with_commas(fit.fit_reserving)
                  << " conversations fit; holding only their tokens, "
                  << with_commas(fit.fit_holding) << ".\n"
                  << "A reservation of " << with_commas(price.context) << " positions holds "
                  << with_commas(price.mean_tokens)
                  << " tokens on average: " << Cell(fit.waste_percent, 1).text
                  << "% of it unused.\nEither way the count is capped: "
                  << "every conversation in a batch keeps its cache in memory\nwhile it runs, "
                  << "and the budget holds only so many.\nThis cap is why a server cannot "
                  << "batch without limit.\n\n"
                  << "The demo model (common/core/config.h): " << demo.describe() << "\n"
                  << "float32 cache: " << factors_text(cache_shape_of(demo)) << " = "
                  << with_commas(demo.kv_bytes_per_token()) << " bytes per token\n";
        demo_readings.print(std::cout);
        std::cout << "\nResident memory when a " << with_commas(resident.tokens)
                  << "-token cache is allocated and filled:\n";
        print_resident_growth(std::cout, resident);
        std::cout << "  expected: the allocation rounded up to whole pages, plus a page or two "
                  << "per array\n  (keys, values) for the allocator's header and for code run "
                  << "the first time\n"
                  << "plot: " << plot_path << "\n\n"
                  << format_bytes(per_token) << " per token\n"
                  << format_bytes(per_conversation) << " per " << with_commas(price.context)
                  << "-token conversation\n";
        return all_agree ? 0 : 1;
    });
}
