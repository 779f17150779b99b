// SPDX-License-Identifier: Apache-2.0
// The stdio relay, on the run's loop: one poll-shaped state machine that copies the caller's input into the
// sandbox and the sandbox's output back, with back-pressure (a side is read only
// when what was read before has been written) and without ever blocking on a
// caller's descriptor, so a reader that stopped reading cannot hang agentjail.
#include "tty/relay.hpp"

#include "tty/filter.hpp"
#include "util/fault.hpp"
#include "util/strings.hpp"
#include "util/thread_guard.hpp"
#include "sys/poll_async.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

namespace agentjail::tty {

namespace {

Error sys_error(int err, const std::string& what) {
    return Error(ErrorKind::setup, err, "stdio relay: " + what + ": " + util::errno_text(err));
}

// How the relay moves bytes through a caller's descriptor without blocking on it.
enum class Io {
    plain,   // a descriptor of our own with O_NONBLOCK (a pipe end, a reopened tty or FIFO)
    socket,  // the caller's socket: recv/send with MSG_DONTWAIT
    file,    // a regular file: never blocks for long; read with pread (see Channel::pos)
    blocking,  // the caller's own description of a pipe or terminal we may not reopen
               // (another user's): used only once poll says it is ready, and written
               // in small pieces, so that it does not hold up the loop
    none,    // nothing there (the caller's descriptor was closed): read EOF, discard writes
};

struct Endpoint {
    sys::UniqueFd fd;
    Io io = Io::none;
};

// The caller's descriptor as one we may use without blocking and without touching
// its open file description's flags (the shell shares it): pipes, FIFOs and
// terminals are reopened through /proc with O_NONBLOCK (a new description of the
// same object), sockets use per-call flags, regular files are duplicated.
Endpoint caller_endpoint(int fd, bool for_write) {
    Endpoint e;
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) return e;
    if (S_ISSOCK(st.st_mode)) {
        e.fd.reset(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
        e.io = e.fd ? Io::socket : Io::none;
        return e;
    }
    if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
        std::string path = "/proc/self/fd/" + std::to_string(fd);
        int flags = (for_write ? O_WRONLY : O_RDONLY) | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
        e.fd.reset(::open(path.c_str(), flags));
        if (e.fd) {
            e.io = Io::plain;
            return e;
        }
    }
    // A regular file, or an object we may not reopen (another user's FIFO or
    // terminal): the caller's own description, which for the latter may block.
    e.fd.reset(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
    if (e.fd) e.io = S_ISREG(st.st_mode) ? Io::file : Io::blocking;
    return e;
}

bool same_object(int a, int b) {
    struct stat sa {
    }, sb{};
    if (::fstat(a, &sa) != 0 || ::fstat(b, &sb) != 0) return false;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

bool valid_fd(int fd) { return fd >= 0 && ::fcntl(fd, F_GETFD) >= 0; }

constexpr size_t kBuf = 64 * 1024;
// A stdin that is not a regular file cannot be given back what the command did not
// read: keep the read-ahead small (the pipe's minimum and one chunk).
constexpr size_t kStreamChunk = 4096;
// What is written at once to a caller's description that may block (Io::blocking)
// once poll said it has room: a terminal or pipe takes that much without waiting.
constexpr size_t kBlockingPiece = 256;

}  // namespace

struct Relay::Channel {
    bool input = false;  // caller -> sandbox
    bool pty = false;    // the pty master is the sandbox side
    Endpoint caller;     // input: the source; output: the destination
    sys::UniqueFd
        ours;  // input: the pipe's write end or the master; output: the read end or the master
    bool filter = false;
    OutputFilter f;
    std::string pending;  // read, not yet written
    size_t off = 0;
    bool done = false;
    size_t chunk = kBuf;
    // A regular-file stdin is read with pread from where the caller's offset stood,
    // and at the end the offset is set to just past what the command consumed, so a
    // `while read` loop around agentjail loses no line to the relay's read-ahead.
    bool positional = false;
    off_t start = 0;
    std::uint64_t written = 0;
    sys::UniqueFd reader_copy;  // the pipe's read end, to count what is still unread
    // An output pipe to a caller's file or pipe moves in the kernel (splice), with no
    // copy through the relay; off after the first EINVAL (an O_APPEND file on some
    // kernels, a device that does not take it). wait_dst: the caller's pipe is full.
    bool splice = false;
    bool wait_dst = false;
};

Result<std::unique_ptr<Relay>> Relay::prepare(const Options& o) {
    std::unique_ptr<Relay> r(new Relay());
    int fds[3];
    bool tty[3];
    bool any_tty = false;
    for (int i = 0; i < 3; ++i) {
        fds[i] = o.fds[static_cast<size_t>(i)] >= 0 ? o.fds[static_cast<size_t>(i)] : i;
        tty[i] = valid_fd(fds[i]) && ::isatty(fds[i]) == 1;
        any_tty = any_tty || tty[i];
    }
    ChildSide& c = r->child_;
    c.pty = o.mode == Mode::automatic && any_tty && o.have_devpts;
    if (!c.pty) std::fill(std::begin(tty), std::end(tty), false);

    auto keep_child_end = [&](int fd) {
        r->child_ends_.emplace_back(fd);
        return fd;
    };

    if (c.pty) {
        // The terminal whose modes and size the pty copies: stdin's, else the output's.
        int ctl = tty[0] ? fds[0] : tty[1] ? fds[1] : fds[2];
        r->term_ctl_.reset(::fcntl(ctl, F_DUPFD_CLOEXEC, 3));
        if (!r->term_ctl_) return sys_error(errno, "dup of the terminal");
        if (::tcgetattr(ctl, &c.tio) == 0) {
            c.have_termios = true;
        }
        if (::ioctl(ctl, TIOCGWINSZ, &c.ws) == 0) c.have_winsize = true;
        // Keystrokes: only when stdin is the terminal.
        if (tty[0]) {
            auto ch = std::make_unique<Channel>();
            ch->input = true;
            ch->pty = true;
            ch->caller = caller_endpoint(fds[0], false);
            r->channels_.push_back(std::move(ch));
        }
        auto ch = std::make_unique<Channel>();
        ch->pty = true;
        int out = tty[1] ? fds[1] : tty[2] ? fds[2] : fds[0];
        ch->caller = caller_endpoint(out, true);
        ch->filter = !o.raw_output;
        r->channels_.push_back(std::move(ch));
    }

    // stdin through a pipe.
    if (!tty[0]) {
        int p[2];
        if (::pipe2(p, O_CLOEXEC) < 0) return sys_error(errno, "pipe");
        c.fd[0] = keep_child_end(p[0]);
        auto ch = std::make_unique<Channel>();
        ch->input = true;
        ch->ours.reset(p[1]);
        ::fcntl(p[1], F_SETFL, O_NONBLOCK);
        ch->caller = caller_endpoint(valid_fd(fds[0]) ? fds[0] : -1, false);
        if (ch->caller.io == Io::none) {
            ch->ours.reset();  // nothing to read: the command sees EOF at once, as from /dev/null
            ch->done = true;
        } else if (ch->caller.io == Io::file) {
            off_t pos = ::lseek(ch->caller.fd.get(), 0, SEEK_CUR);
            struct stat st {};
            if (pos >= 0 && ::fstat(ch->caller.fd.get(), &st) == 0 && S_ISREG(st.st_mode)) {
                ch->positional = true;
                ch->start = pos;
                ch->reader_copy.reset(::fcntl(p[0], F_DUPFD_CLOEXEC, 3));
            } else {
                ch->chunk = kStreamChunk;
                ::fcntl(p[1], F_SETPIPE_SZ, static_cast<int>(kStreamChunk));
            }
        } else {
            ch->chunk = kStreamChunk;
            ::fcntl(p[1], F_SETPIPE_SZ, static_cast<int>(kStreamChunk));
        }
        r->channels_.push_back(std::move(ch));
    }
    // stdout and stderr through pipes; one pipe for both when the caller sent them
    // to the same place (2>&1), so their order is kept exactly.
    int shared_out = -1;
    for (int i = 1; i <= 2; ++i) {
        if (tty[i]) continue;
        if (i == 2 && shared_out >= 0 && valid_fd(fds[1]) && valid_fd(fds[2]) &&
            same_object(fds[1], fds[2])) {
            c.fd[2] = shared_out;
            continue;
        }
        int p[2];
        if (::pipe2(p, O_CLOEXEC) < 0) return sys_error(errno, "pipe");
        c.fd[i] = keep_child_end(p[1]);
        if (i == 1) shared_out = p[1];
        auto ch = std::make_unique<Channel>();
        ch->ours.reset(p[0]);
        ::fcntl(p[0], F_SETFL, O_NONBLOCK);
        ch->caller = caller_endpoint(valid_fd(fds[i]) ? fds[i] : -1, true);
        // Filtered output is read and written by the relay; unfiltered moves in the kernel.
        ch->filter = o.filter_pipes && !o.raw_output;
        ch->splice = !ch->filter && (ch->caller.io == Io::plain || ch->caller.io == Io::file);
        r->channels_.push_back(std::move(ch));
    }
    for (const auto& ch : r->channels_) {
        if (ch->ours) c.relay_fds.push_back(ch->ours.get());
        if (ch->reader_copy) c.relay_fds.push_back(ch->reader_copy.get());
        if (ch->caller.fd) c.relay_fds.push_back(ch->caller.fd.get());
    }
    if (r->term_ctl_) c.relay_fds.push_back(r->term_ctl_.get());
    r->wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!r->wake_) return sys_error(errno, "eventfd");
    c.relay_fds.push_back(r->wake_.get());
    // Raw before the command starts: keys typed while it starts (a ^C) already go
    // to the sandbox's pty, not to agentjail as signals.
    r->set_raw();
    return r;
}

Relay::~Relay() { finish(); }

namespace {

// Only the foreground job may change or read the terminal: a background agentjail
// (`agentjail -- make &`) leaves the user's terminal alone until it is brought back.
bool in_foreground(int fd) {
    pid_t fg = ::tcgetpgrp(fd);
    return fg >= 0 && fg == ::getpgrp();
}

// tcsetattr from a background job raises SIGTTOU unless it is blocked.
template <typename F>
void without_sigttou(F f) {
    sigset_t s, old;
    sigemptyset(&s);
    sigaddset(&s, SIGTTOU);
    pthread_sigmask(SIG_BLOCK, &s, &old);
    f();
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace

void Relay::set_raw() {
    std::lock_guard<std::mutex> lock(term_mu_);
    if (!child_.have_termios || !term_ctl_ || channels_.empty() || !channels_[0]->input ||
        !channels_[0]->pty)
        return;
    if (!in_foreground(term_ctl_.get())) return;
    termios raw = child_.tio;
    cfmakeraw(&raw);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    without_sigttou([&] {
        if (::tcsetattr(term_ctl_.get(), TCSADRAIN, &raw) == 0) raw_set_ = true;
    });
}

void Relay::restore() {
    std::lock_guard<std::mutex> lock(term_mu_);
    if (!raw_set_) return;
    without_sigttou([&] { (void)::tcsetattr(term_ctl_.get(), TCSADRAIN, &child_.tio); });
    raw_set_ = false;
}

void Relay::resize() {
    if (!master_ || !term_ctl_) return;
    winsize ws{};
    if (::ioctl(term_ctl_.get(), TIOCGWINSZ, &ws) == 0) ::ioctl(master_.get(), TIOCSWINSZ, &ws);
}

void Relay::suspend_terminal() { restore(); }

bool Relay::take_user_suspend() noexcept {
    std::int64_t at = user_suspend_ns_.exchange(0);
    if (at == 0) return false;
    auto age = std::chrono::steady_clock::now().time_since_epoch() -
               std::chrono::steady_clock::duration(at);
    return age < std::chrono::seconds(2);
}

void Relay::resume_terminal() {
    set_raw();
    resize();
    // The relay may be waiting to learn that it is in the foreground again.
    std::uint64_t one = 1;
    (void)!::write(wake_.get(), &one, sizeof one);
}

Result<void> Relay::start(sys::UniqueFd master, int sandbox_pidfd, boost::asio::io_context& loop) {
    child_ends_.clear();
    sandbox_pidfd_ = sandbox_pidfd;
    if (child_.pty) {
        if (!master)
            return Error(ErrorKind::internal, EINVAL, "stdio relay: the sandbox sent no pty");
        master_ = std::move(master);
        ::fcntl(master_.get(), F_SETFL, O_NONBLOCK);
    }
    buf_.reset(new char[kBuf]);
    poll_ = std::make_unique<sys::AsyncPoll>(loop);
    wait_next();
    return {};
}

void Relay::finish() {
    if (finished_) return;
    finished_ = true;
    if (poll_) {
        finish_requested_ = true;
        std::uint64_t one = 1;
        (void)!::write(wake_.get(), &one, sizeof one);
        // Drained, or its time is up: nothing of the relay waits on the loop any
        // more. Its registration goes now, while the loop is still there.
        poll_->wait_idle();
        poll_.reset();
    }
    restore();
    for (auto& ch : channels_) {
        if (!ch->positional || !ch->caller.fd) continue;
        // Give the caller's stdin back its offset: past what the command read.
        int unread = 0;
        std::uint64_t in_pipe = 0;
        if (ch->reader_copy && ::ioctl(ch->reader_copy.get(), FIONREAD, &unread) == 0 && unread > 0)
            in_pipe = static_cast<std::uint64_t>(unread);
        std::uint64_t consumed = ch->written >= in_pipe ? ch->written - in_pipe : 0;
        (void)::lseek(ch->caller.fd.get(), ch->start + static_cast<off_t>(consumed), SEEK_SET);
    }
    channels_.clear();
    master_.reset();
}

// A failure here stops the sandbox (nobody would read its output) and is said in
// the result (util/thread_guard.hpp).
void Relay::wait_next() {
    const char* fault_point = first_round_ ? "relay.throw" : nullptr;
    first_round_ = false;
    // Not armed (done, or failed): the relay has ended; finish() sees it.
    (void)util::run_or_stop("the terminal and stdio relay", fault_point, sandbox_pidfd_, failure_,
                            [this] { arm(); });
}

void Relay::on_ready(std::vector<pollfd>& fds) {
    if (util::run_or_stop("the terminal and stdio relay", nullptr, sandbox_pidfd_, failure_, [&] { copy(fds); }))
        wait_next();
}

// The next wait: which side of each channel is waited for. None once the relay is
// done (finish() asked, and every output was copied or its time is up).
void Relay::arm() {
    auto sandbox_fd = [this](const Channel& ch) { return ch.pty ? master_.get() : ch.ours.get(); };
    std::vector<pollfd> fds;
    who_.clear();
    auto add = [&](int fd, short events, Channel* ch) {
        fds.push_back({fd, events, 0});
        who_.push_back(ch);
    };
    add(wake_.get(), POLLIN, nullptr);
    bool background_input = false;
    bool outputs_left = false;
    bool immediate = false;
    for (auto& chp : channels_) {
        Channel& ch = *chp;
        if (ch.done) continue;
        if (ch.input && draining_) {
            ch.done = true;
            continue;
        }
        if (!ch.input) outputs_left = true;
        if (ch.off < ch.pending.size()) {
            // Regular files are always writable: no poll (-1, handled at once).
            int dst = ch.input ? sandbox_fd(ch) : ch.caller.fd.get();
            bool file = !ch.input && ch.caller.io == Io::file;
            immediate = immediate || file;
            add(file ? -1 : dst, file ? 0 : POLLOUT, &ch);
            continue;
        }
        if (ch.wait_dst) {
            add(ch.caller.fd.get(), POLLOUT, &ch);
            continue;
        }
        if (ch.input && ch.pty) {
            if (recheck_foreground_) foreground_ = in_foreground(ch.caller.fd.get());
            recheck_foreground_ = !foreground_;
            if (!foreground_) {
                background_input = true;
                continue;
            }
        }
        if (ch.input && ch.caller.io == Io::file) {
            // A regular file is always readable; wait for room in the pipe instead.
            add(ch.ours.get(), POLLOUT, &ch);
            continue;
        }
        add(ch.input ? ch.caller.fd.get() : sandbox_fd(ch), POLLIN, &ch);
    }
    if (draining_ && !outputs_left) return;
    int timeout = immediate ? 0 : background_input ? 250 : -1;
    if (draining_) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now())
                        .count();
        if (left <= 0) return;  // what a wedged reader did not take is dropped
        if (timeout < 0 || timeout > left) timeout = static_cast<int>(left);
    }
    poll_->wait(std::move(fds), timeout, [this](std::vector<pollfd>& ready) { on_ready(ready); });
}

// What the wait found ready: one step of each channel (a write of what is pending,
// or a read of a chunk).
void Relay::copy(std::vector<pollfd>& fds) {
    auto sandbox_fd = [this](const Channel& ch) { return ch.pty ? master_.get() : ch.ours.get(); };
    char* buf = buf_.get();
    if (fds[0].revents & POLLIN) {
        std::uint64_t v = 0;
        (void)!::read(wake_.get(), &v, sizeof v);
        recheck_foreground_ = true;
    }
    if (finish_requested_ && !draining_) {
        draining_ = true;
        deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    }
    for (size_t i = 1; i < fds.size(); ++i) {
        Channel& ch = *who_[i];
        const bool file_ready = fds[i].fd < 0;
        if (!file_ready && fds[i].revents == 0) continue;
        if (ch.off < ch.pending.size()) {
            // Write what is pending.
            int dst = ch.input ? sandbox_fd(ch) : ch.caller.fd.get();
            const char* p = ch.pending.data() + ch.off;
            size_t len = ch.pending.size() - ch.off;
            if (!ch.input && ch.caller.io == Io::blocking) len = std::min(len, kBlockingPiece);
            ssize_t w;
            if (!ch.input && ch.caller.io == Io::socket)
                w = ::send(dst, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
            else
                w = ::write(dst, p, len);
            if (w > 0) {
                ch.off += static_cast<size_t>(w);
                if (ch.input) ch.written += static_cast<std::uint64_t>(w);
                if (ch.off == ch.pending.size()) {
                    ch.pending.clear();
                    ch.off = 0;
                }
            } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
                // Not ready after all: poll again.
            } else {
                // The other side is gone: an input's command closed its stdin, or the
                // caller's reader went away. For an output, closing our read end
                // gives the command EPIPE, as a pipeline would.
                ch.pending.clear();
                ch.off = 0;
                if (ch.input) {
                    ch.done = true;
                    if (!ch.pty) ch.ours.reset();
                } else if (ch.pty) {
                    ch.caller.io = Io::none;  // keep reading the master, discard
                } else {
                    ch.done = true;
                    ch.ours.reset();
                }
            }
            continue;
        }
        if (ch.wait_dst) {
            ch.wait_dst = false;  // room again: read (splice) on the next round
            continue;
        }
        // Read a chunk.
        if (!ch.input) (void)fault::hit("relay.copy");
        ssize_t r;
        if (!ch.input && ch.splice) {
            r = ::splice(ch.ours.get(), nullptr, ch.caller.fd.get(), nullptr, kBuf,
                         SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
            if (r > 0) {
                // While the command keeps the pipe full, a few more at once: fewer
                // waits on the loop per byte. Anything else the next round sees.
                for (int more = 0; more < 15 && r == static_cast<ssize_t>(kBuf); ++more)
                    r = ::splice(ch.ours.get(), nullptr, ch.caller.fd.get(), nullptr, kBuf,
                                 SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
                continue;
            }
            if (r < 0 && errno == EAGAIN) {
                // Our pipe was readable, so it is the caller's side that is full.
                ch.wait_dst = true;
                continue;
            }
            if (r < 0 && (errno == EINVAL || errno == ENOSYS)) {
                ch.splice = false;
                continue;
            }
            if (r < 0 && errno != EINTR) {
                ch.done = true;  // the caller's reader is gone: the command gets EPIPE
                ch.ours.reset();
                ch.caller.fd.reset();
                continue;
            }
            if (r < 0) continue;
        } else if (ch.input) {
            int src = ch.caller.fd.get();
            if (ch.positional)
                r = ::pread(src, buf, ch.chunk, ch.start + static_cast<off_t>(ch.written));
            else if (ch.caller.io == Io::socket)
                r = ::recv(src, buf, ch.chunk, MSG_DONTWAIT);
            else
                r = ::read(src, buf, ch.chunk);
        } else {
            r = ::read(sandbox_fd(ch), buf, kBuf);
        }
        if (r > 0) {
            auto len = static_cast<size_t>(r);
            if (ch.input && ch.pty) {
                // The user's own ^Z (never something the sandbox can type): the
                // one stop of the command that agentjail follows by stopping too.
                const unsigned char susp = child_.have_termios ? child_.tio.c_cc[VSUSP] : 0x1a;
                if (std::memchr(buf, 0x1a, len) != nullptr ||
                    (susp != 0 && std::memchr(buf, susp, len) != nullptr))
                    user_suspend_ns_ =
                        std::chrono::steady_clock::now().time_since_epoch().count();
            }
            if (ch.filter) {
                filtered_.clear();
                ch.f.feed(buf, len, filtered_);
                ch.pending.swap(filtered_);
            } else {
                ch.pending.assign(buf, len);
            }
            ch.off = 0;
            if (!ch.input && ch.caller.io == Io::none) ch.pending.clear();
            continue;
        }
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        // The user's terminal answers EIO to a background reader (SIGTTIN is
        // blocked here): agentjail was put in the background, not hung up.
        if (r < 0 && errno == EIO && ch.input && ch.pty && !in_foreground(ch.caller.fd.get())) {
            foreground_ = false;
            continue;
        }
        // EOF (or EIO: the pty's last slave closed, the user's terminal hung up).
        ch.done = true;
        if (ch.input) {
            if (!ch.pty) ch.ours.reset();  // the command reads EOF
            if (!ch.positional) ch.caller.fd.reset();
        } else {
            // Every writer inside is gone: the caller's reader sees EOF now, as it
            // would have with its own descriptor, not only once wait() is called.
            ch.caller.fd.reset();
            ch.caller.io = Io::none;
        }
    }
}

}  // namespace agentjail::tty
