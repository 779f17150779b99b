// SPDX-License-Identifier: Apache-2.0
// Parsers for sizes, durations, CPU counts and whole counts, and their human forms;
// pure code, shared by the policy parser, the command-line flags and messages.
#include "base/units.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace agentjail::units {

namespace {

Error bad(const std::string& what, const std::string& s, const std::string& expected) {
    return Error(ErrorKind::invalid_input, EINVAL, "bad " + what + " '" + s + "': expected " + expected);
}

// A plain decimal number ("12", "1.5", ".5"): digits and at most one dot; no sign,
// no exponent, no hex (strtod alone would take "inf", "0x10" and "1e3").
bool decimal_prefix(const std::string& s, size_t& end, double& value) {
    size_t i = 0;
    bool digits = false, dot = false;
    for (; i < s.size(); ++i) {
        if (s[i] >= '0' && s[i] <= '9') {
            digits = true;
        } else if (s[i] == '.' && !dot) {
            dot = true;
        } else {
            break;
        }
    }
    if (!digits) return false;
    std::string num = s.substr(0, i);
    errno = 0;
    value = std::strtod(num.c_str(), nullptr);
    if (errno != 0 || !std::isfinite(value)) return false;
    end = i;
    return true;
}

}  // namespace

bool is_unlimited_word(const std::string& s) {
    return s == "max" || s == "none" || s == "unlimited";
}

Result<std::uint64_t> parse_size(const std::string& s) {
    const std::string expected =
        "a number of bytes, optionally with a suffix k, M, G or T (powers of 1024), e.g. 512M or 1.5G";
    size_t end = 0;
    double n = 0;
    if (!decimal_prefix(s, end, n)) return bad("size", s, expected);
    std::string unit = s.substr(end);
    // "512MB", "512MiB" and "512M" mean the same: memory sizes here are binary.
    if (unit.size() == 3 && (unit[1] == 'i' || unit[1] == 'I') && (unit[2] == 'b' || unit[2] == 'B'))
        unit.resize(1);
    else if (unit.size() == 2 && (unit[1] == 'b' || unit[1] == 'B'))
        unit.resize(1);
    double mult = 1;
    if (unit.empty() || unit == "b" || unit == "B") {
        mult = 1;
    } else if (unit.size() == 1) {
        switch (unit[0]) {
            case 'k': case 'K': mult = 1024.0; break;
            case 'm': case 'M': mult = 1024.0 * 1024; break;
            case 'g': case 'G': mult = 1024.0 * 1024 * 1024; break;
            case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; break;
            default: return bad("size", s, expected);
        }
    } else {
        return bad("size", s, expected);
    }
    double bytes = std::floor(n * mult);
    // 2^63: beyond that the kernel's own files say "max" anyway.
    if (bytes >= 9.2e18) return bad("size", s, "a size below 8E");
    // A fraction of a byte ("0.5") is a typo, not a size.
    if (mult == 1 && bytes != n) return bad("size", s, "a whole number of bytes");
    return static_cast<std::uint64_t>(bytes);
}

Result<double> parse_duration(const std::string& s) {
    const std::string expected =
        "a duration such as 90s, 30m, 1h30m, 500ms or 1.5s (a bare number is seconds)";
    if (s.empty()) return bad("duration", s, expected);
    double total = 0;
    size_t i = 0;
    bool bare_allowed = true;
    while (i < s.size()) {
        std::string rest = s.substr(i);
        size_t end = 0;
        double n = 0;
        if (!decimal_prefix(rest, end, n)) return bad("duration", s, expected);
        i += end;
        double mult = 0;
        if (i == s.size()) {
            // "90" is 90 seconds, but "1h30" is not (30 what?).
            if (!bare_allowed) return bad("duration", s, expected);
            mult = 1;
        } else if (s.compare(i, 2, "ms") == 0) {
            mult = 0.001;
            i += 2;
        } else {
            switch (s[i]) {
                case 's': mult = 1; break;
                case 'm': mult = 60; break;
                case 'h': mult = 3600; break;
                case 'd': mult = 86400; break;
                default: return bad("duration", s, expected);
            }
            ++i;
        }
        bare_allowed = false;
        total += n * mult;
    }
    if (!std::isfinite(total) || total > 1e9) return bad("duration", s, "a duration below 30 years");
    return total;
}

Result<double> parse_cpus(const std::string& s) {
    size_t end = 0;
    double n = 0;
    const std::string expected = "a number of CPUs greater than 0, e.g. 0.5, 1.5 or 4";
    if (!decimal_prefix(s, end, n) || end != s.size()) return bad("CPU count", s, expected);
    // cpu.max takes a quota of at least 1 ms per period: 0.01 CPU at a 100 ms period.
    if (n < 0.01) return bad("CPU count", s, "at least 0.01");
    if (n > 1024) return bad("CPU count", s, "at most 1024");
    return n;
}

Result<std::uint64_t> parse_count(const std::string& s) {
    const std::string expected = "a whole number greater than 0";
    if (s.empty() || s.size() > 18) return bad("count", s, expected);
    std::uint64_t n = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return bad("count", s, expected);
        n = n * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (n == 0) return bad("count", s, expected);
    return n;
}

std::string format_size(std::uint64_t bytes) {
    static const char* units[] = {"", "k", "M", "G", "T"};
    int u = 0;
    std::uint64_t v = bytes;
    while (u < 4 && v != 0 && v % 1024 == 0) {
        v /= 1024;
        ++u;
    }
    if (u > 0 || bytes < 1024) return std::to_string(v) + units[u];
    // Not a round number of any unit: bytes, exact.
    return std::to_string(bytes);
}

std::string format_duration(double seconds) {
    char buf[64];
    if (seconds >= 60 && std::fmod(seconds, 60) == 0) {
        if (std::fmod(seconds, 3600) == 0)
            std::snprintf(buf, sizeof buf, "%.0fh", seconds / 3600);
        else
            std::snprintf(buf, sizeof buf, "%.0fm", seconds / 60);
    } else {
        std::snprintf(buf, sizeof buf, "%gs", seconds);
    }
    return buf;
}

std::string format_number(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

}  // namespace agentjail::units
