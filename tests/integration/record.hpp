// SPDX-License-Identifier: Apache-2.0
// The result record that `agentjail --json` prints as the last line of stdout, parsed
// for the limits tests (a null json when there is none or it does not parse).
#pragma once

#include "test_support.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace ajit {

inline nlohmann::json record_of(const ajtest::RunOutput& r) {
    auto ls = ajtest::lines(r.out);
    if (ls.empty()) return nlohmann::json();
    auto j = nlohmann::json::parse(ls.back(), nullptr, false);
    return j.is_discarded() ? nlohmann::json() : j;
}

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
