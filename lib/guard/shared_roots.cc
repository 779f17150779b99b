// SPDX-License-Identifier: Apache-2.0
// The setup lock and users mark of the directories runs share (shared_roots.hpp).
#include "guard/shared_roots.hpp"

#include "guard/leftovers.hpp"
#include "util/strings.hpp"
#include "sys/state_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

namespace agentjail::guard {

namespace {

// "<dev>-<ino>" of dir, "" when it cannot be looked at.
std::string key_of(const std::string& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return {};
    return std::to_string(static_cast<unsigned long long>(st.st_dev)) + "-" +
           std::to_string(static_cast<unsigned long long>(st.st_ino));
}

// <state home>/agentjail/roots, opened (made as the other state directories are:
// owned, closed to others, no links); an invalid fd when there is none to be had.
sys::UniqueFd roots_dir() {
    const std::string base = state_base();
    if (base.empty()) return {};
    auto d = sys::open_own_state_dir(base, {"agentjail", "roots"});
    return d ? std::move(*d) : sys::UniqueFd();
}

sys::UniqueFd open_lock_file(int dfd, const std::string& name) {
    return sys::UniqueFd(::openat(dfd, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
}

bool try_flock(int fd, int op) {
    while (::flock(fd, op | LOCK_NB) != 0) {
        if (errno != EINTR) return false;
    }
    return true;
}

// flock with a deadline: a run stuck in its setup (a stalled bind source) must not
// hang every other run of the directory without a word.
bool flock_within(int fd, int op, double timeout_s) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    auto pause = std::chrono::microseconds(200);
    for (;;) {
        if (try_flock(fd, op)) return true;
        if (errno != EWOULDBLOCK) return false;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(20000));
    }
}

}  // namespace

Result<RootUsers> RootUsers::enter(std::vector<std::string> roots, double timeout_s) {
    RootUsers out;
    out.timeout_s_ = timeout_s;
    std::sort(roots.begin(), roots.end());
    roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
    if (roots.empty()) return out;
    sys::UniqueFd dfd = roots_dir();
    if (!dfd) return out;
    for (auto& dir : roots) {
        Root r;
        r.key = key_of(dir);
        if (r.key.empty()) continue;  // not there: the launch says so when it gets to it
        r.dir = std::move(dir);
        out.roots_.push_back(std::move(r));
    }
    // One order for every run: by key, which two names of one directory share.
    std::sort(out.roots_.begin(), out.roots_.end(), [](const Root& a, const Root& b) { return a.key < b.key; });
    for (size_t i = 0; i < out.roots_.size(); ++i) {
        Root& r = out.roots_[i];
        if (i > 0 && r.key == out.roots_[i - 1].key) continue;
        r.lock = open_lock_file(dfd.get(), r.key + ".lock");
        r.users = open_lock_file(dfd.get(), r.key + ".users");
        if (!r.lock || !r.users)
            return Error(ErrorKind::setup, errno,
                         "the lock of " + r.dir + " shared with other runs (under " + state_base() +
                             "/agentjail/roots): " + util::errno_text(errno));
        if (!flock_within(r.lock.get(), LOCK_EX, timeout_s)) {
            // A state directory on a filesystem without locks (NFS with no lock
            // manager: ENOLCK): the run goes on unshared, as without a state directory.
            if (errno != EWOULDBLOCK) return RootUsers();
            return Error(ErrorKind::setup, ETIMEDOUT,
                         "another run in " + r.dir + " has held its setup lock for more than " +
                             std::to_string(static_cast<int>(timeout_s)) +
                             " s (a run whose setup hangs on a stalled file system?); nothing was started");
        }
        r.locked = true;
        // Shared with every other live run's: never waits on one that merely runs.
        if (!flock_within(r.users.get(), LOCK_SH, timeout_s)) return RootUsers();
    }
    return out;
}

void RootUsers::setup_done() noexcept {
    for (auto& r : roots_) {
        if (r.locked) (void)::flock(r.lock.get(), LOCK_UN);
        r.locked = false;
    }
}

bool RootUsers::leave() noexcept {
    bool alone = true;
    for (auto& r : roots_) {
        if (!r.lock) continue;  // a second name of a directory already counted
        if (!r.locked) {
            r.locked = flock_within(r.lock.get(), LOCK_EX, timeout_s_);
            // Never had it back: some run is stuck in its setup there; leave the
            // placeholders to it (it uses them) and to the next sweep.
            if (!r.locked) {
                alone = false;
                continue;
            }
        }
        // Our shared mark becomes exclusive only when no other run holds one.
        r.alone = try_flock(r.users.get(), LOCK_EX);
        alone = alone && r.alone;
    }
    return alone;
}

void RootUsers::done() noexcept { roots_.clear(); }

bool RootUsers::holds_alone(const std::string& dir) const {
    const std::string key = key_of(dir);
    for (const auto& r : roots_)
        if (r.key == key && r.lock && r.locked && r.alone) return true;
    return false;
}

IdleRoot::IdleRoot(const std::string& dir) {
    const std::string key = key_of(dir);
    if (key.empty()) {
        ok_ = true;  // gone: nobody can be using it
        return;
    }
    sys::UniqueFd dfd = roots_dir();
    if (!dfd) {
        ok_ = true;
        return;
    }
    lock_ = open_lock_file(dfd.get(), key + ".lock");
    users_ = open_lock_file(dfd.get(), key + ".users");
    ok_ = lock_ && users_ && try_flock(lock_.get(), LOCK_EX) && try_flock(users_.get(), LOCK_EX);
}

}  // namespace agentjail::guard
