// SPDX-License-Identifier: Apache-2.0
// Units in policies, flags and messages: sizes ("2G"), durations ("1h30m"), CPU
// counts, whole counts, and their human forms. Pure code, no system call.
#pragma once

#include "base/error.hpp"

#include <cstdint>
#include <string>

namespace agentjail::units {

// "512M", "2G", "1.5G", "100k", "4096" (bytes). Suffixes k M G T, powers of 1024,
// either case, an optional trailing B ("512MB", "2GiB" too). Errors say what is accepted.
Result<std::uint64_t> parse_size(const std::string& s);
// "90s", "30m", "1h", "1h30m", "500ms", "1.5s", "2d"; a bare number is seconds.
Result<double> parse_duration(const std::string& s);
// "1.5", "0.2", "2": more than 0 and at most 1024.
Result<double> parse_cpus(const std::string& s);
// A positive integer count (pids, nofile).
Result<std::uint64_t> parse_count(const std::string& s);

// True for the words that lift a limit a lower layer set: "max", "none", "unlimited".
bool is_unlimited_word(const std::string& s);

// Human forms for messages and explain: "2G", "1.5 s", "0.2".
std::string format_size(std::uint64_t bytes);
std::string format_duration(double seconds);
std::string format_number(double v);  // "1.5", "0.2", "2"

}  // namespace agentjail::units
