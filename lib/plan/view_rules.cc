// SPDX-License-Identifier: Apache-2.0
// The view's rules: a name's verdict.
#include "plan/view_rules.hpp"

namespace agentjail::view {

Rule::Rule(std::string_view text)
    : pattern(text), last(pattern.empty() ? std::string_view("**") : std::string_view(pattern.last())),
      any_last(pattern.empty() || pattern.last() == "**") {}

namespace {

std::string_view last_name(std::string_view rel) {
    const auto slash = rel.rfind('/');
    return slash == std::string_view::npos ? rel : rel.substr(slash + 1);
}

// Does any rule match rel? Each is tried only when rel's last name could end it; the
// path is split once, for the first such.
bool any_match(const std::vector<Rule>& rules, std::string_view rel, bool is_dir) {
    const std::string_view last = last_name(rel);
    std::vector<std::string_view> segs;
    bool split = false;
    for (const Rule& r : rules) {
        if (r.pattern.empty() || (!r.any_last && !r.last.may_match(last))) continue;
        if (!split) {
            segs = base::split_path(rel);
            split = true;
        }
        if (r.pattern.match_segments(segs, is_dir)) return true;
    }
    return false;
}

}  // namespace

bool Rules::hides(std::string_view rel, bool is_dir) const {
    return hide_exact.count(std::string(rel)) > 0 || any_match(hide, rel, is_dir);
}

bool Rules::protects(std::string_view rel, bool is_dir) const {
    if (protect_exact.count(std::string(rel))) return true;
    if (is_dir && last_name(rel) == ".git") return false;  // see Rules::protect
    return any_match(protect, rel, is_dir);
}

Rules::Verdict Rules::judge(std::string_view rel, bool is_dir) const {
    if (hides(rel, is_dir)) return Verdict::hidden;
    return protects(rel, is_dir) ? Verdict::protect : Verdict::plain;
}

}  // namespace agentjail::view
