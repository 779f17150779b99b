// SPDX-License-Identifier: Apache-2.0
// A real interactive bash on a pty of the test's own, driven through the master as
// a user at a terminal would: the harness for the terminal and job-control tests.
#pragma once

#include <sys/types.h>

#include <string>

namespace ajtest {

// s as one single-quoted shell word, for the lines a PtyShell types.
std::string shell_quote(const std::string& s);

class PtyShell {
public:
    // Starts `bash --norc --noprofile -i` as the session leader of a new pty with the
    // given size, HOME and the extra environment; waits for its first prompt.
    PtyShell(unsigned short rows, unsigned short cols, const std::string& home,
             const std::string& cwd);
    ~PtyShell();
    PtyShell(const PtyShell&) = delete;
    PtyShell& operator=(const PtyShell&) = delete;

    bool ok() const { return pid_ > 0 && master_ >= 0 && started_; }
    // Writes bytes as typed keys.
    void type(const std::string& keys);
    // Reads until `needle` appears in what arrived since the last mark(); true if it
    // did within timeout_ms. output() holds all of it.
    bool wait_for(const std::string& needle, int timeout_ms = 10000);
    // Forgets what arrived so far, for the next wait_for.
    void mark();
    const std::string& output() const { return out_; }
    // Runs a line in the shell and returns what it printed between two markers.
    std::string run(const std::string& line, int timeout_ms = 15000);
    // The shell's terminal settings as `stty -g` prints them, read from the master.
    std::string stty_g();
    // A new window size (the kernel sends SIGWINCH to the foreground job).
    void resize(unsigned short rows, unsigned short cols);
    pid_t pid() const { return pid_; }
    // The terminal's local modes now (ICANON, ECHO, ISIG...), read from the master.
    unsigned lflag() const;

private:
    void pump(int timeout_ms);
    pid_t pid_ = -1;
    int master_ = -1;
    bool started_ = false;
    std::string out_;
    size_t mark_ = 0;
    int seq_ = 0;
};

}  // namespace ajtest
