#include "program.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace kv {

Progress::Progress(std::string label) : label_(std::move(label)), enabled_(isatty(STDERR_FILENO)) {}

Progress::~Progress() {
    if (enabled_) std::cerr << "\r" << std::string(label_.size() + 30, ' ') << "\r" << std::flush;
}

void Progress::update(long done, long total) {
    if (enabled_) std::cerr << "\r" << label_ << " " << done << "/" << total << std::flush;
}

void write_file(const std::string& path, const std::string& text) {
    const std::filesystem::path p(path);
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace kv
