// SPDX-License-Identifier: Apache-2.0
// Shared fixture of the integration tier: every test gets a fresh workspace and a
// fake HOME seeded with canaries, and ends with a sweep of all outputs for them.
#pragma once

#include "test_support.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

namespace ajit {

class Sandbox : public ::testing::Test {
protected:
    void TearDown() override { EXPECT_EQ(jail.leaks(), "") << "a canary secret leaked"; }
    ajtest::Jail jail;
};

inline std::string helper(const std::string& name) { return ajtest::helper(name); }

inline std::vector<std::string> words(const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> v;
    std::string w;
    while (in >> w) v.push_back(w);
    return v;
}

// A token unique to this run (not a secret: no canary prefix).
inline std::string unique_name(const std::string& prefix) {
    return prefix + ajtest::canary().substr(10);
}

inline std::string describe(const ajtest::RunOutput& r) {
    return "exit " + std::to_string(r.status) + (r.timed_out ? " (timed out)" : "") +
           "\n--- stdout:\n" + r.out + "\n--- stderr:\n" + r.err;
}

// Value of "key=value" on its own line in out, or "<missing>".
inline std::string field(const std::string& out, const std::string& key) {
    for (const auto& l : ajtest::lines(out))
        if (l.rfind(key + "=", 0) == 0) return l.substr(key.size() + 1);
    return "<missing>";
}

}  // namespace ajit
