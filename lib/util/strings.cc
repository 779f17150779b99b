// SPDX-License-Identifier: Apache-2.0
// String helpers: glob matching, errno names, lexical path handling.
#include "util/strings.hpp"

#include <cerrno>
#include <csignal>
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

Error errno_error(ErrorKind kind, int err, const std::string& what) {
    return Error(kind, err, what + ": " + errno_text(err));
}

std::string errno_text(int err) {
    return errno_name(err) + " (" + std::strerror(err) + ")";
}

std::string signal_name(int sig) {
    const char* abbrev = ::sigabbrev_np(sig);
    return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string hex(const unsigned char* p, std::size_t n) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
        out += digits[p[i] >> 4];
        out += digits[p[i] & 15];
    }
    return out;
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

namespace {

constexpr char kHex[] = "0123456789abcdef";

void hex_byte(std::string& out, unsigned char c) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
}

// Length of the well-formed UTF-8 sequence at s[i], or 0.
size_t utf8_length(std::string_view s, size_t i) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    if (len == 0 || i + len > s.size()) return 0;
    for (size_t k = 1; k < len; ++k)
        if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
    auto c1 = static_cast<unsigned char>(s[i + 1]);
    if (c == 0xe0 && c1 < 0xa0) return 0;   // overlong
    if (c == 0xed && c1 >= 0xa0) return 0;  // surrogate
    if (c == 0xf0 && c1 < 0x90) return 0;   // overlong
    if (c == 0xf4 && c1 >= 0x90) return 0;  // past U+10FFFF
    return len;
}

}  // namespace

std::string printable(std::string_view s, bool keep_newlines) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        auto c = static_cast<unsigned char>(s[i]);
        if (c == '\\') {
            out += "\\\\";
            ++i;
        } else if (c == '\n' && keep_newlines) {
            out += '\n';
            ++i;
        } else if (c < 0x20 || c == 0x7f) {
            hex_byte(out, c);
            ++i;
        } else if (c < 0x80) {
            out += static_cast<char>(c);
            ++i;
        } else if (size_t len = utf8_length(s, i); len == 0) {
            hex_byte(out, c);
            ++i;
        } else if (c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) {
            // U+0080..U+009F: the C1 controls (CSI, OSC, DCS...) in UTF-8.
            hex_byte(out, c);
            hex_byte(out, static_cast<unsigned char>(s[i + 1]));
            i += 2;
        } else {
            out.append(s.substr(i, len));
            i += len;
        }
    }
    return out;
}

std::string inert_json(std::string_view json) {
    std::string out;
    out.reserve(json.size() + json.size() / 8);
    bool in_string = false;
    for (size_t i = 0; i < json.size(); ++i) {
        char c = json[i];
        if (!in_string) {
            if (c == '"') in_string = true;
            out += c;
            continue;
        }
        if (c == '"') {
            in_string = false;
            out += c;
        } else if (c == '\\' && i + 1 < json.size()) {
            // An escape already: \" is the one that keeps a quote character.
            if (json[i + 1] == '"') {
                out += "\\u0022";
            } else {
                out += c;
                out += json[i + 1];
            }
            ++i;
        } else if (std::string_view("$`;|&<>'()!\x7f").find(c) != std::string_view::npos) {
            auto u = static_cast<unsigned char>(c);
            out += "\\u00";
            out += kHex[u >> 4];
            out += kHex[u & 15];
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace agentjail::util
