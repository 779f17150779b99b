// SPDX-License-Identifier: Apache-2.0
// The view's rules: a name's verdict, and the id maps' text.
#include "plan/view_rules.hpp"

#include <algorithm>
#include <cstdio>

namespace agentjail::view {

std::vector<IdRange> parse_id_map(std::string_view text) {
    std::vector<IdRange> out;
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t nl = text.find('\n', at);
        if (nl == std::string_view::npos) nl = text.size();
        const std::string line(text.substr(at, nl - at));
        at = nl + 1;
        unsigned long a = 0, b = 0, c = 0;
        if (std::sscanf(line.c_str(), "%lu %lu %lu", &a, &b, &c) == 3)
            out.push_back({static_cast<std::uint32_t>(a), static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(c)});
    }
    return out;
}

bool Rules::hides(std::string_view rel, bool is_dir) const {
    if (hide_exact.count(std::string(rel))) return true;
    const auto segs = base::split_path(rel);
    return std::any_of(hide.begin(), hide.end(), [&](const base::Pattern& p) { return p.match_segments(segs, is_dir); });
}

bool Rules::protects(std::string_view rel, bool is_dir) const {
    if (protect_exact.count(std::string(rel))) return true;
    const auto segs = base::split_path(rel);
    // A .git directory is never read-only whole (its objects, refs and index are how
    // the agent commits): "**/.git" protects a .git file, which names a git directory.
    if (is_dir && !segs.empty() && segs.back() == ".git") return false;
    return std::any_of(protect.begin(), protect.end(),
                       [&](const base::Pattern& p) { return p.match_segments(segs, is_dir); });
}

Rules::Verdict Rules::judge(std::string_view rel, bool is_dir) const {
    if (hides(rel, is_dir)) return Verdict::hidden;
    return protects(rel, is_dir) ? Verdict::protect : Verdict::plain;
}

}  // namespace agentjail::view
