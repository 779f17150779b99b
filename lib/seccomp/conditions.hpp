// SPDX-License-Identifier: Apache-2.0
// The argument conditions of [seccomp] rules (conditions.cc), as rules.cc resolves
// them; private to lib/seccomp.
#pragma once

#include "seccomp/internal.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace agentjail::seccomp::detail {

struct Cond {
    unsigned arg = 0;
    bool any_bit = false;  // "argN & MASK": true when any bit of a is set
    Cmp cmp;               // otherwise the one comparison
    std::string text;      // normalised, for explain
};

// Parses one condition ("arg1 == 5", "arg0 & CLONE_NEWUSER"); an error message, "" on
// success.
std::string parse_condition(std::string_view text, Cond& out);

// False when two ANDed lists of comparisons can never hold together (some argument
// compared in both with no value in common).
bool overlap(const std::vector<Cmp>& x, const std::vector<Cmp>& y);

// A comparison fitted to the width the kernel reads of that argument of `call`.
std::string narrow(Cmp& c, const ArgWidths& w, const std::string& call, bool& never);
// Why an alternative that narrow() found can never match was dropped.
std::string never_text(const Cmp& c, const std::string& call);

// "; did you mean 'near'?", or "" when nothing is near (for unknown names).
std::string did_you_mean(const std::string& near);

}  // namespace agentjail::seccomp::detail
