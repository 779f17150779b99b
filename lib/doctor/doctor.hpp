// SPDX-License-Identifier: Apache-2.0
// Host diagnostics as data: each check probes one kernel facility agentjail needs
// (by trying it, never by comparing kernel versions); `agentjail doctor` prints them.
#pragma once

#include "sys/confinement.hpp"

#include <string>
#include <vector>

namespace agentjail::doctor {

struct Check {
    enum class Status { ok, warn, fail };
    std::string name;  // "user namespaces"
    Status status = Status::ok;
    std::string detail;  // what was found
    std::string fix;     // what to do about it; empty when nothing is to be done
};

// Runs every check. Forks short-lived probe children (for the user namespace
// probe); prints nothing.
std::vector<Check> run_checks();
// The same, with where agentjail runs read already (agentjail doctor prints it too).
std::vector<Check> run_checks(const sys::Confinement& env);

// "ok", "warn", "FAIL".
const char* status_label(Check::Status s);

}  // namespace agentjail::doctor
