// SPDX-License-Identifier: Apache-2.0
// Shared fixture of the escape tier: the integration fixture (workspace, fake HOME
// seeded with canaries, canary sweep of every output after each test) under the
// name the escape tests use, plus probes of the host side.
#pragma once

#include "../integration/common.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace ajesc {

class Escape : public ajit::Sandbox {};

using ajit::describe;
using ajit::field;
using ajit::helper;
using ajit::unique_name;
using ajit::words;

inline std::string host_link(const std::string& path) {
    char buf[4096];
    ssize_t n = readlink(path.c_str(), buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// The state letter of a host process (R, S, T, Z...), or '\0' when it is gone.
inline char process_state(pid_t pid) {
    std::string stat = ajtest::read_file("/proc/" + std::to_string(pid) + "/stat");
    auto close = stat.rfind(')');
    return close == std::string::npos || close + 2 >= stat.size() ? '\0' : stat[close + 2];
}

inline bool alive_and_running(pid_t pid) {
    char s = process_state(pid);
    return kill(pid, 0) == 0 && s != '\0' && s != 'T' && s != 't' && s != 'Z' && s != 'X';
}

// Every byte as \xHH, for a shell's printf (a SOCKS5 exchange sent by a script).
inline std::string hex_escaped(const std::string& bytes) {
    std::string out;
    char buf[8];
    for (unsigned char c : bytes) {
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
    }
    return out;
}

inline std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// Clean-up after a failed test: kill what this test started.
inline void kill_marked(const std::string& marker) {
    for (int pid : ajtest::pids_with_marker(marker)) kill(pid, SIGKILL);
}

}  // namespace ajesc
