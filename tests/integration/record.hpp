// SPDX-License-Identifier: Apache-2.0
// The result record that `agentjail --json` writes as the last line of stderr, read
// the documented way (a null json when there is none or it does not parse).
#pragma once

#include "test_support.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace ajit {

// The reader of docs/limits.md ("Reading the record"): the last line of stderr, and
// only when the line just before it is the delimiter. Anything else is the command's.
inline nlohmann::json record_in(const std::string& err) {
    auto ls = ajtest::lines(err);
    if (ls.size() < 2 || ls[ls.size() - 2] != "--- agentjail result ---") return nlohmann::json();
    auto j = nlohmann::json::parse(ls.back(), nullptr, false);
    return j.is_discarded() || !j.is_object() ? nlohmann::json() : j;
}

inline nlohmann::json record_of(const ajtest::RunOutput& r) { return record_in(r.err); }

// One run of agentjail with a limit, asked once per test binary: whether (and how)
// a cgroup can be made for this caller. ok: the record; else the refusal, without
// its "To fix" advice, for skip messages.
struct CgroupProbe {
    bool ok = false;
    nlohmann::json record;
    std::string refusal;
};
inline const CgroupProbe& cgroup_probe() {
    static const CgroupProbe p = [] {
        CgroupProbe c;
        auto r = ajtest::agentjail({"--policy", "minimal", "--pids", "64", "--json", "--", "/bin/true"});
        c.record = record_of(r);
        c.ok = r.status == 0 && c.record.is_object();
        if (!c.ok) c.refusal = r.err.substr(0, r.err.find(". To fix"));
        return c;
    }();
    return p;
}

}  // namespace ajit
