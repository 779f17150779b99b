// SPDX-License-Identifier: Apache-2.0
// The `**` path pattern matcher (hide and protect rules): segments, classes and
// the leading-dot rule of glob(3).
#include "base/pattern.hpp"

namespace agentjail::base {

namespace {

// Matches one class "[...]" starting at p[i] == '['; sets `end` past the ']'.
// A '[' without a closing ']' is a literal '[' (glob(3) does the same).
bool class_match(std::string_view p, size_t i, char c, size_t& end) {
    size_t j = i + 1;
    bool negate = false;
    if (j < p.size() && (p[j] == '!' || p[j] == '^')) {
        negate = true;
        ++j;
    }
    bool found = false;
    bool first = true;
    while (j < p.size() && (p[j] != ']' || first)) {
        first = false;
        char lo = p[j];
        if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
            char hi = p[j + 2];
            if (lo <= c && c <= hi) found = true;
            j += 3;
        } else {
            if (lo == c) found = true;
            ++j;
        }
    }
    if (j >= p.size()) {  // no closing bracket: a literal '['
        end = i + 1;
        return c == '[';
    }
    end = j + 1;
    return found != negate;
}

bool seg_match(std::string_view p, std::string_view t) {
    size_t pi = 0, ti = 0;
    size_t star_p = std::string_view::npos, star_t = 0;
    while (ti < t.size()) {
        if (pi < p.size()) {
            char pc = p[pi];
            if (pc == '*') {
                star_p = ++pi;
                star_t = ti;
                continue;
            }
            if (pc == '?') {
                ++pi;
                ++ti;
                continue;
            }
            if (pc == '[') {
                size_t end = 0;
                if (class_match(p, pi, t[ti], end)) {
                    pi = end;
                    ++ti;
                    continue;
                }
            } else if (pc == '\\' && pi + 1 < p.size()) {
                if (p[pi + 1] == t[ti]) {
                    pi += 2;
                    ++ti;
                    continue;
                }
            } else if (pc == t[ti]) {
                ++pi;
                ++ti;
                continue;
            }
        }
        if (star_p == std::string_view::npos) return false;
        pi = star_p;
        ti = ++star_t;
    }
    while (pi < p.size() && p[pi] == '*') ++pi;
    return pi == p.size();
}

// segs[si..] against pattern segments pat[pi..]; "**" tries every split.
bool match_from(const std::vector<std::string>& pat, size_t pi,
                const std::vector<std::string_view>& segs, size_t si) {
    while (pi < pat.size()) {
        if (pat[pi] == "**") {
            // Collapse runs of "**"; then try zero, one, two... directories.
            while (pi + 1 < pat.size() && pat[pi + 1] == "**") ++pi;
            if (pi + 1 == pat.size()) return si < segs.size();  // "a/**": something below a
            for (size_t k = si; k < segs.size(); ++k)
                if (match_from(pat, pi + 1, segs, k)) return true;
            return false;
        }
        if (si >= segs.size() || !match_segment(pat[pi], segs[si])) return false;
        ++pi;
        ++si;
    }
    return si == segs.size();
}

}  // namespace

bool has_wildcard(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

std::vector<std::string_view> split_path(std::string_view rel) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < rel.size()) {
        size_t j = rel.find('/', i);
        if (j == std::string_view::npos) j = rel.size();
        if (j > i) out.push_back(rel.substr(i, j - i));
        i = j + 1;
    }
    return out;
}

bool match_segment(std::string_view pattern, std::string_view name) {
    // glob(3): a leading '.' is matched only by a literal '.'.
    if (!name.empty() && name[0] == '.' && (pattern.empty() || pattern[0] != '.')) return false;
    return seg_match(pattern, name);
}

SegmentPrefilter::SegmentPrefilter(std::string_view pattern) {
    const size_t first = pattern.find_first_of("*?[\\");
    if (first == std::string_view::npos) {
        literal_ = true;
        head_ = pattern;
        return;
    }
    head_ = pattern.substr(0, first);
    const size_t star = pattern.rfind('*');
    if (star != std::string_view::npos && star >= first) {
        std::string_view tail = pattern.substr(star + 1);
        if (tail.find_first_of("*?[]\\") == std::string_view::npos) tail_ = tail;
    }
}

Pattern::Pattern(std::string_view text) {
    dir_only_ = !text.empty() && text.back() == '/';
    for (auto s : split_path(text)) {
        if (s == ".") continue;
        if (s == "**")
            globstar_ = true;
        else if (has_wildcard(s))
            wildcards_ = true;
        segs_.emplace_back(s);
    }
    wildcards_ = wildcards_ || globstar_;
}

bool Pattern::last_literal() const { return !segs_.empty() && !has_wildcard(segs_.back()) && segs_.back() != "**"; }

bool Pattern::match_segments(const std::vector<std::string_view>& segs, bool is_dir) const {
    if (dir_only_ && !is_dir) return false;
    return match_from(segs_, 0, segs, 0);
}

bool Pattern::match(std::string_view rel, bool is_dir) const {
    return match_segments(split_path(rel), is_dir);
}

}  // namespace agentjail::base
