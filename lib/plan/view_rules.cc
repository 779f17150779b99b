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

void Rules::prepare() {
    hide_last.clear();
    protect_last.clear();
    for (const auto& p : hide) hide_last.emplace_back(p.empty() ? std::string("**") : p.last());
    for (const auto& p : protect) protect_last.emplace_back(p.empty() ? std::string("**") : p.last());
}

namespace {

// Does any of `patterns` match rel? Each is tried only when rel's last name could end
// it (quick[i], when prepare() made it); the path is split once, for the first such.
bool any_match(const std::vector<base::Pattern>& patterns, const std::vector<base::SegmentPrefilter>& quick,
               std::string_view rel, bool is_dir) {
    const auto slash = rel.rfind('/');
    const std::string_view last = slash == std::string_view::npos ? rel : rel.substr(slash + 1);
    std::vector<std::string_view> segs;
    bool split = false;
    for (std::size_t i = 0; i < patterns.size(); ++i) {
        const base::Pattern& p = patterns[i];
        if (p.empty()) continue;
        if (i < quick.size() && p.last() != "**" && !quick[i].may_match(last)) continue;
        if (!split) {
            segs = base::split_path(rel);
            split = true;
        }
        if (p.match_segments(segs, is_dir)) return true;
    }
    return false;
}

}  // namespace

bool Rules::hides(std::string_view rel, bool is_dir) const {
    if (hide_exact.count(std::string(rel))) return true;
    return any_match(hide, hide_last, rel, is_dir);
}

bool Rules::protects(std::string_view rel, bool is_dir) const {
    if (protect_exact.count(std::string(rel))) return true;
    // A .git directory is never read-only whole (its objects, refs and index are how
    // the agent commits): "**/.git" protects a .git file, which names a git directory.
    const auto slash = rel.rfind('/');
    if (is_dir && (slash == std::string_view::npos ? rel : rel.substr(slash + 1)) == ".git") return false;
    return any_match(protect, protect_last, rel, is_dir);
}

Rules::Verdict Rules::judge(std::string_view rel, bool is_dir) const {
    if (hides(rel, is_dir)) return Verdict::hidden;
    return protects(rel, is_dir) ? Verdict::protect : Verdict::plain;
}

}  // namespace agentjail::view
