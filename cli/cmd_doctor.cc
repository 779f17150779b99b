// SPDX-License-Identifier: Apache-2.0
// `agentjail doctor`: prints the host checks of lib/doctor, with a fix for each problem.
#include "commands.hpp"
#include "options.hpp"

#include "doctor/doctor.hpp"

#include <cstdio>

namespace agentjail::cli {

std::string doctor_help() {
    return "agentjail doctor: probe what this host's kernel offers agentjail (user\n"
           "namespaces, AppArmor's userns restriction, seccomp, cgroups and delegation,\n"
           "Landlock, the mount API, pidfds) by trying each, and say how to fix problems.\n"
           "Exits 0 when nothing FAILs, 1 otherwise.\n"
           "\nUsage:\n  agentjail doctor\n\nExamples:\n  agentjail doctor\n";
}

int cmd_doctor(const std::vector<std::string>& args) {
    std::vector<std::string> operands;
    auto help = parse_simple("doctor", args, "", operands);
    if (!help) return report(help.error());
    if (*help) {
        std::fputs(doctor_help().c_str(), stdout);
        return 0;
    }
    bool failed = false;
    for (const auto& c : doctor::run_checks()) {
        std::printf("%-4s  %s: %s\n", doctor::status_label(c.status), c.name.c_str(),
                    c.detail.c_str());
        if (c.status != doctor::Check::Status::ok && !c.fix.empty())
            std::printf("      fix: %s\n", c.fix.c_str());
        if (c.status == doctor::Check::Status::fail) failed = true;
    }
    std::fflush(stdout);
    return failed ? 1 : 0;
}

}  // namespace agentjail::cli
