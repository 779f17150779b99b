// SPDX-License-Identifier: Apache-2.0
// JSON lines written whole, inert and without SIGPIPE (see json_lines.hpp).
#include "sys/json_lines.hpp"

#include "util/strings.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace agentjail::sys {

void drain_sigpipe() {
    sigset_t pipe_only;
    ::sigemptyset(&pipe_only);
    ::sigaddset(&pipe_only, SIGPIPE);
    sigset_t pending;
    ::sigemptyset(&pending);
    if (::sigpending(&pending) != 0 || ::sigismember(&pending, SIGPIPE) != 1) return;
    timespec zero{0, 0};
    while (::sigtimedwait(&pipe_only, nullptr, &zero) == SIGPIPE) {
    }
}

bool write_json_line(int fd, std::string_view json_text) {
    if (fd < 0) return false;
    const std::string line = util::inert_json(json_text) + "\n";
    sigset_t pipe_only, old;
    ::sigemptyset(&pipe_only);
    ::sigaddset(&pipe_only, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
    const char* p = line.data();
    size_t left = line.size();
    bool broke = false;
    while (left > 0) {
        ssize_t n = ::write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EPIPE) broke = true;
        if (n <= 0) break;
        p += n;
        left -= static_cast<size_t>(n);
    }
    if (broke) drain_sigpipe();
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return left == 0;
}

}  // namespace agentjail::sys
