// SPDX-License-Identifier: Apache-2.0
// PtyShell: fork, setsid, the pty's slave as controlling terminal, exec bash.
#include "pty_shell.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace ajtest {

std::string shell_quote(const std::string& s) {
    std::string o = "'";
    for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return o + "'";
}

PtyShell::PtyShell(unsigned short rows, unsigned short cols, const std::string& home,
                   const std::string& cwd) {
    master_ = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master_ < 0 || grantpt(master_) != 0 || unlockpt(master_) != 0) return;
    const char* name = ptsname(master_);
    if (name == nullptr) return;
    std::string slave_name = name;
    winsize ws{};
    ws.ws_row = rows;
    ws.ws_col = cols;
    ioctl(master_, TIOCSWINSZ, &ws);
    pid_ = fork();
    if (pid_ == 0) {
        setsid();
        int s = open(slave_name.c_str(), O_RDWR);
        if (s < 0) _exit(127);
        ioctl(s, TIOCSCTTY, 0);
        dup2(s, 0);
        dup2(s, 1);
        dup2(s, 2);
        if (s > 2) close(s);
        if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(127);
        setenv("HOME", home.c_str(), 1);
        setenv("TERM", "xterm", 1);
        setenv("PS1", "$ ", 1);
        unsetenv("PROMPT_COMMAND");
        signal(SIGINT, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        signal(SIGTSTP, SIG_DFL);
        signal(SIGTTIN, SIG_DFL);
        signal(SIGTTOU, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        execl("/bin/bash", "bash", "--norc", "--noprofile", "-i", static_cast<char*>(nullptr));
        _exit(127);
    }
    if (pid_ < 0) return;
    // The first prompt: bash is reading commands.
    type("PS1='$ '; bind 'set enable-bracketed-paste off' 2>/dev/null; echo ready-$((6*7))\n");
    started_ = wait_for("ready-42", 15000);
    mark();
}

PtyShell::~PtyShell() {
    if (pid_ > 0) {
        // The whole session: bash, and any job it left (agentjail under test).
        kill(-pid_, SIGKILL);
        kill(pid_, SIGKILL);
        int st = 0;
        waitpid(pid_, &st, 0);
    }
    if (master_ >= 0) close(master_);
}

void PtyShell::type(const std::string& keys) {
    size_t off = 0;
    while (off < keys.size()) {
        ssize_t n = write(master_, keys.data() + off, keys.size() - off);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) continue;
            return;
        }
        off += static_cast<size_t>(n);
    }
}

void PtyShell::pump(int timeout_ms) {
    pollfd p{master_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return;
    char buf[4096];
    ssize_t n = read(master_, buf, sizeof buf);
    if (n > 0) out_.append(buf, static_cast<size_t>(n));
}

bool PtyShell::wait_for(const std::string& needle, int timeout_ms) {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        if (out_.find(needle, mark_) != std::string::npos) return true;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        end - std::chrono::steady_clock::now())
                        .count();
        if (left <= 0) return false;
        pump(static_cast<int>(left > 100 ? 100 : left));
    }
}

void PtyShell::mark() { mark_ = out_.size(); }

std::string PtyShell::run(const std::string& line, int timeout_ms) {
    ++seq_;
    // The markers are built by the shell from pieces, so the echo of the typed line
    // never matches them.
    std::string a = "@@b" + std::to_string(seq_), z = "@@e" + std::to_string(seq_);
    mark();
    type("echo '@@''b" + std::to_string(seq_) + "'; " + line + "; echo '@@''e" +
         std::to_string(seq_) + "'\n");
    if (!wait_for(z + "\r\n", timeout_ms)) return "<timeout>";
    size_t b = out_.find(a + "\r\n", mark_);
    size_t e = out_.find(z + "\r\n", mark_);
    if (b == std::string::npos || e == std::string::npos || e < b) return "<garbled>";
    std::string body = out_.substr(b + a.size() + 2, e - b - a.size() - 2);
    std::string clean;
    for (char c : body)
        if (c != '\r') clean += c;
    return clean;
}

std::string PtyShell::stty_g() {
    std::string s = run("stty -g");
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

unsigned PtyShell::lflag() const {
    termios t{};
    tcgetattr(master_, &t);
    return t.c_lflag;
}

void PtyShell::resize(unsigned short rows, unsigned short cols) {
    winsize ws{};
    ws.ws_row = rows;
    ws.ws_col = cols;
    ioctl(master_, TIOCSWINSZ, &ws);
}

}  // namespace ajtest
