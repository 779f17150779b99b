// SPDX-License-Identifier: Apache-2.0
// String helpers: glob matching, errno names, lexical path handling.
#include "util/strings.hpp"

#include <cerrno>
#include <cstring>
#include <vector>

namespace agentjail::util {

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

template <bool Icase>
bool glob(std::string_view p, std::string_view t) {
    auto same = [](char a, char b) { return Icase ? lower(a) == lower(b) : a == b; };
    // Iterative matcher with one backtrack point: linear in practice, no recursion.
    size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
    while (ti < t.size()) {
        if (pi < p.size() && (p[pi] == '?' || same(p[pi], t[ti]))) {
            ++pi;
            ++ti;
        } else if (pi < p.size() && p[pi] == '*') {
            star = pi++;
            mark = ti;
        } else if (star != std::string_view::npos) {
            pi = star + 1;
            ti = ++mark;
        } else {
            return false;
        }
    }
    while (pi < p.size() && p[pi] == '*') ++pi;
    return pi == p.size();
}

}  // namespace

bool glob_match(std::string_view p, std::string_view t) { return glob<false>(p, t); }

bool glob_match_icase(std::string_view p, std::string_view t) { return glob<true>(p, t); }

std::string errno_name(int err) {
    const char* name = strerrorname_np(err);
    if (name != nullptr) return name;
    return "errno " + std::to_string(err);
}

std::string errno_text(int err) {
    return errno_name(err) + " (" + std::strerror(err) + ")";
}

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

std::string normalize_path(std::string_view path) {
    if (path.empty() || path[0] != '/') return {};
    std::vector<std::string_view> parts;
    size_t i = 0;
    while (i < path.size()) {
        while (i < path.size() && path[i] == '/') ++i;
        size_t j = i;
        while (j < path.size() && path[j] != '/') ++j;
        std::string_view part = path.substr(i, j - i);
        if (part.empty() || part == ".") {
        } else if (part == "..") {
            if (!parts.empty()) parts.pop_back();
        } else {
            parts.push_back(part);
        }
        i = j;
    }
    std::string out;
    for (auto part : parts) {
        out += '/';
        out += part;
    }
    return out.empty() ? "/" : out;
}

bool path_within(std::string_view path, std::string_view dir) {
    if (dir == "/") return !path.empty() && path[0] == '/';
    if (!starts_with(path, dir)) return false;
    return path.size() == dir.size() || path[dir.size()] == '/';
}

}  // namespace agentjail::util
