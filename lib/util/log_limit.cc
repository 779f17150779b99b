// SPDX-License-Identifier: Apache-2.0
// The log limiter: a token bucket and a total cap over all lines, a per-kind cap
// over lines that repeat, and counts for summaries (see log_limit.hpp).
#include "util/log_limit.hpp"

#include <chrono>

#include <algorithm>

namespace agentjail::util {

double monotonic_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

LogLimiter::LogLimiter(Limits l) : l_(l), tokens_(l.burst) {}

const std::string& LogLimiter::other_kind() {
    static const std::string k = "(other kinds)";
    return k;
}

bool LogLimiter::admit(const std::string& kind, double now_s) {
    if (!started_) {
        started_ = true;
        last_ = now_s;
        last_summary_ = now_s;
    }
    if (now_s > last_) {
        tokens_ = std::min(l_.burst, tokens_ + (now_s - last_) * l_.rate);
        last_ = now_s;
    }
    // A sandbox that makes every event a new kind (a fresh host name each time)
    // cannot grow the table: past max_kinds they all count as one.
    auto it = kinds_.find(kind);
    if (it == kinds_.end()) {
        const std::string& k = kinds_.size() < l_.max_kinds ? kind : other_kind();
        it = kinds_.try_emplace(k).first;
    }
    Kind& k = it->second;
    ++k.seen;
    if (k.seen <= l_.per_kind && written_ < l_.max_lines && tokens_ >= 1) {
        tokens_ -= 1;
        ++written_;
        return true;
    }
    if (k.pending++ == 0) ++pending_kinds_;
    ++dropped_;
    return false;
}

bool LogLimiter::summary_due(double now_s) const {
    return pending_kinds_ > 0 && now_s - last_summary_ >= l_.summary_every_s;
}

std::vector<std::pair<std::string, std::uint64_t>> LogLimiter::drain(double now_s) {
    std::vector<std::pair<std::string, std::uint64_t>> out;
    last_summary_ = now_s;
    if (pending_kinds_ == 0) return out;
    for (auto& [name, k] : kinds_) {
        if (k.pending == 0) continue;
        out.emplace_back(name, k.pending);
        k.pending = 0;
    }
    pending_kinds_ = 0;
    return out;
}

bool LogLimiter::take_summary_line() {
    // Summaries have room of their own past max_lines, so the totals still reach
    // the log after a flood used up the lines; all lines together stay under
    // twice max_lines.
    if (written_ >= 2 * l_.max_lines) return false;
    ++written_;
    return true;
}

}  // namespace agentjail::util
