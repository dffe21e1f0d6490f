// What the closing table prints: the published figures beside this run's,
// then the shapes that must hold on any machine; or both as JSON.
#pragma once

#include <cmath>
#include <iostream>
#include <string>

#include "../../common/kit/output.h"
#include "../../common/kit/report.h"
#include "experiment.h"

namespace kv::ch06 {

// Whole numbers print whole ("128 KiB"); others to about 3 significant digits.
inline std::string figure_text(double value, const char* unit) {
    const int decimals = value == std::floor(value) ? 0 : value < 10 ? 2 : 1;
    return fixed(value, decimals) + " " + unit;
}

// Returns the exit status.
inline int report(const Results& r, const OutputOptions& out) {
    Table table({"claim", "published", "this run", "this run / published"});
    Json json;
    for (const Figure& f : r.figures) {
        const Published& p = f.published;
        table.add_row({p.claim, fixed(p.value, 0) + " " + p.unit, figure_text(f.measured, p.unit),
                       Cell(f.measured / p.value, 2)});
        json.add(p.key, f.measured);
    }
    Table shapes({"shape", "published", "this run"});
    for (const Shape& s : r.shapes)
        shapes.add_row({s.what, std::isnan(s.published) ? "n/a" : fixed(s.published, 1) + " x",
                        fixed(s.measured, 1) + " x"});
    json.add("figures", table).add("shapes", shapes);
    if (emit(out, json)) return 0;

    std::cout << "The book's closing table: the published figures and this run's\n\n";
    table.print(std::cout);
    std::cout << "\nThe shapes that must hold on any machine:\n\n";
    shapes.print(std::cout);
    return 0;
}

}  // namespace kv::ch06
