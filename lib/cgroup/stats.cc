// SPDX-License-Identifier: Apache-2.0
// Parsers of cgroupfs' flat-keyed and single-value files (memory.events, cpu.stat,
// pids.max, cgroup.controllers...), pure, and the small readers built on them.
#include "cgroup/internal.hpp"

#include <charconv>

namespace agentjail::cgroup::detail {

namespace {

std::optional<std::uint64_t> number(std::string_view s) {
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p == s.data()) return std::nullopt;
    return v;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

}  // namespace

std::optional<std::uint64_t> flat_value(std::string_view text, std::string_view key) {
    while (!text.empty()) {
        size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        size_t sp = line.find(' ');
        if (sp == std::string_view::npos) continue;
        if (line.substr(0, sp) == key) return number(trim(line.substr(sp + 1)));
    }
    return std::nullopt;
}

std::optional<std::uint64_t> single_value(std::string_view text) {
    text = trim(text);
    if (text == "max") return std::nullopt;
    return number(text);
}

std::vector<std::string> words(std::string_view text) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t')) ++i;
        size_t j = i;
        while (j < text.size() && text[j] != ' ' && text[j] != '\n' && text[j] != '\t') ++j;
        if (j > i) out.emplace_back(text.substr(i, j - i));
        i = j;
    }
    return out;
}

std::uint64_t read_flat(const std::string& dir, const char* file, const char* key) {
    auto t = read_text(dir + "/" + file);
    if (!t) return 0;
    return flat_value(*t, key).value_or(0);
}

std::uint64_t read_single(const std::string& dir, const char* file) {
    auto t = read_text(dir + "/" + file);
    if (!t) return 0;
    return single_value(*t).value_or(0);
}

}  // namespace agentjail::cgroup::detail
