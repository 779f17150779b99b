// SPDX-License-Identifier: Apache-2.0
// The stdio relay: the command never holds the caller's descriptors. It gets pipes
// (or a pty of the sandbox's own where the caller has a terminal), and the relay
// copies between them and the caller's files on the run's event loop.
#pragma once

#include "base/error.hpp"
#include "sys/fd.hpp"
#include "sys/poll_async.hpp"

#include <sys/ioctl.h>
#include <termios.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <chrono>
#include <condition_variable>
#include <string>

#include <poll.h>

#include <vector>

namespace agentjail::tty {

enum class Mode {
    automatic,  // a pty when any of the caller's 0, 1, 2 is a terminal, pipes otherwise
    pipes,      // pipes only, even for a terminal (the command sees no tty)
};

struct Options {
    std::array<int, 3> fds{-1, -1,
                           -1};  // the caller's descriptors for 0, 1, 2 (-1: its own 0, 1, 2)
    Mode mode = Mode::automatic;
    bool raw_output = false;    // pass every escape sequence to the terminal (no filter)
    bool filter_pipes = false;  // filter the output pipes too (unless raw_output)
    bool have_devpts = true;  // the plan mounts a devpts of the sandbox's own
};

// What the sandbox's side gets: for each of 0, 1, 2 a descriptor to dup2 onto it,
// or -1 where the pty's slave goes.
struct ChildSide {
    std::array<int, 3> fd{-1, -1, -1};
    bool pty = false;
    bool have_termios = false;
    termios tio{};  // the caller's terminal settings: copied onto the pty, restored at the end
    bool have_winsize = false;
    winsize ws{};
    // The relay's own ends, which the child must close (it is cloned with copies).
    std::vector<int> relay_fds;
};

class Relay {
public:
    // Decides pty or pipes, makes the pipes, duplicates the caller's descriptors (the
    // caller may close its own right after spawn). Nothing runs yet.
    static Result<std::unique_ptr<Relay>> prepare(const Options& o);
    ~Relay();
    Relay(const Relay&) = delete;
    Relay& operator=(const Relay&) = delete;

    const ChildSide& child() const noexcept { return child_; }
    bool uses_pty() const noexcept { return child_.pty; }

    // After a successful spawn: closes the sandbox's ends here, takes the pty master
    // (when uses_pty()), puts the user's terminal in raw mode and starts copying on
    // `loop` (the run's, which must run until finish() returned).
    // sandbox_pidfd (borrowed, may be -1): the sandbox the relay kills if it fails
    // (an exception): a sandbox nobody reads would block on a full pipe.
    Result<void> start(sys::UniqueFd master, int sandbox_pidfd, boost::asio::io_context& loop);
    // After finish(): why the relay failed; empty if it did not.
    const std::string& failure() const noexcept { return failure_; }
    // Once the sandbox is gone: stops reading the caller's input, copies what the
    // sandbox wrote to the end (bounded wait), restores the terminal. Idempotent.
    void finish();

    // Job control and window size, for the caller's signal handling.
    void resize();            // the terminal's size onto the pty (the kernel sends SIGWINCH inside)
    void suspend_terminal();  // the user's terminal as it was (before stopping agentjail)
    void resume_terminal();   // raw again, the size re-read
    // Whether the user typed the suspend character (^Z) in the last two seconds and
    // since the last call: a ^Z an inner program took as a key does not make a later
    // stop the sandbox causes itself look like the user's.
    bool take_user_suspend() noexcept;

private:
    Relay() = default;
    void wait_next();
    void arm();
    void on_ready(std::vector<pollfd>& fds);
    void copy(std::vector<pollfd>& fds);
    void set_raw();
    void restore();

    struct Channel;
    std::vector<std::unique_ptr<Channel>> channels_;
    ChildSide child_;
    std::vector<sys::UniqueFd> child_ends_;  // closed in start()
    sys::UniqueFd term_in_;                  // the user's terminal, read (a dup)
    sys::UniqueFd term_ctl_;                 // the terminal whose modes and size we use (a dup)
    sys::UniqueFd master_;
    sys::UniqueFd wake_;  // eventfd: finish() or resume_terminal() wakes the relay
    bool raw_set_ = false;
    std::mutex term_mu_;
    std::atomic<std::int64_t> user_suspend_ns_{0};  // steady clock, 0: none pending
    std::atomic<bool> finish_requested_{false};
    std::unique_ptr<sys::AsyncPoll> poll_;  // the relay's waits on the run's loop
    bool finished_ = false;  // the caller's
    int sandbox_pidfd_ = -1;
    // The loop's alone, from start() on:
    std::unique_ptr<char[]> buf_;
    std::string filtered_;
    std::vector<Channel*> who_;  // the channel of each descriptor waited for ([0]: the wake)
    bool draining_ = false;
    std::chrono::steady_clock::time_point deadline_{};
    // Whether this process is the terminal's foreground job: asked once, then again
    // only when woken (resume_terminal() after a SIGCONT) or, while in the
    // background, every 250 ms; not for every chunk of output.
    bool foreground_ = true;
    bool recheck_foreground_ = true;
    bool first_round_ = true;
    std::string failure_;  // written on the loop, read after finish()
};

}  // namespace agentjail::tty
