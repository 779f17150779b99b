// SPDX-License-Identifier: Apache-2.0
// LogLimiter: decides which lines of a flood reach a log (a few of each kind,
// a bounded rate and total), counting the rest so that a summary can say
// "N more like this". Pure: the caller gives the time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace agentjail::util {

// Seconds on the monotonic clock: the time the limiter is given.
double monotonic_s();

class LogLimiter {
public:
    struct Limits {
        // Generous enough that an ordinary run (a sweep of every system call, a
        // dozen retries of one request) is logged in full; a flood is not.
        std::uint64_t per_kind = 20;      // identical lines written before they are only counted
        std::uint64_t max_lines = 10000;  // lines written per run (summaries: up to twice that)
        double rate = 200;                // lines per second, long-run ...
        double burst = 1000;              // ... and at once
        size_t max_kinds = 1024;          // kinds tracked; the rest share one
        double summary_every_s = 10;      // how often pending counts are due as summaries
    };
    explicit LogLimiter(Limits l);
    LogLimiter() : LogLimiter(Limits{}) {}

    // One event of `kind` (any string naming what makes two lines alike) at time
    // now_s (seconds, monotonic). True: write its line. False: it was counted.
    bool admit(const std::string& kind, double now_s);

    // True when counted events are waiting and a summary is due (now_s past the
    // interval since the last one).
    bool summary_due(double now_s) const;

    // The kinds with events counted but not written since the last drain, with
    // their counts, and resets them. The caller writes one summary line each
    // (budget permitting: summaries past max_lines are dropped, but
    // dropped() still counts every event not written).
    std::vector<std::pair<std::string, std::uint64_t>> drain(double now_s);

    // Whether one more summary line fits in the budget (and takes it).
    bool take_summary_line();

    std::uint64_t written() const { return written_; }
    std::uint64_t dropped() const { return dropped_; }
    static const std::string& other_kind();  // the kind of events past max_kinds

private:
    Limits l_;
    double tokens_;
    double last_ = 0;
    bool started_ = false;
    double last_summary_ = 0;
    std::uint64_t written_ = 0, dropped_ = 0;
    struct Kind {
        std::uint64_t seen = 0;
        std::uint64_t pending = 0;
    };
    std::map<std::string, Kind> kinds_;
    size_t pending_kinds_ = 0;
};

// Writes one summary line for each kind the limiter counted since the last drain:
// `base` (the time, a decision) with the kind's own fields (the JSON the caller gave
// admit() as the kind), the count in "more_like_this", and a "summary" sentence;
// `write` gets each line. Json is nlohmann::json or nlohmann::ordered_json.
template <class Json, class Write>
void write_summaries(LogLimiter& limiter, double now_s, const Json& base, Write&& write) {
    for (auto& [kind, count] : limiter.drain(now_s)) {
        if (!limiter.take_summary_line()) break;
        Json s = base;
        if (kind != LogLimiter::other_kind()) {
            const Json fields = Json::parse(kind);  // named: items() refers into it
            for (const auto& [f, v] : fields.items()) s[f] = v;
        }
        s["more_like_this"] = count;
        s["summary"] =
            std::to_string(count) + " more like this, not written (the log is rate-limited)";
        write(s);
    }
}

}  // namespace agentjail::util
