// SPDX-License-Identifier: Apache-2.0
// `agentjail doctor`: prints the host checks of lib/doctor, with a fix for each problem.
#include "commands.hpp"
#include "options.hpp"
#include "verb_args.hpp"

#include "doctor/doctor.hpp"
#include "sys/confinement.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace agentjail::cli {

std::string doctor_help() {
    return "agentjail doctor: probe what this host's kernel offers agentjail (user\n"
           "namespaces, AppArmor's userns restriction, seccomp, cgroups and delegation,\n"
           "Landlock, the mount API, pidfds) by trying each, and say how to fix problems.\n"
           "The first line says where agentjail runs (a container, a seccomp filter it was\n"
           "started under, WSL, the kernel), which decides the fixes (docs/environments.md).\n"
           "Exits 0 when nothing FAILs, 1 otherwise.\n"
           "\nUsage:\n  agentjail doctor [--json]\n"
           "\nOptions:\n  --json   the environment and every check as one JSON object on stdout\n"
           "\nExamples:\n  agentjail doctor\n  agentjail doctor --json\n";
}

namespace {

// Where agentjail runs, in words: what decides the fixes.
std::string environment_text(const sys::Confinement& c) {
    std::string t = c.container.empty() ? "no container detected" : "a " + c.container + " container";
    if (c.seccomp_filter) t += "; started under a seccomp filter";
    if (c.wsl) t += "; WSL";
    t += "; Linux " + std::to_string(c.kernel_major) + "." + std::to_string(c.kernel_minor);
    return t;
}

nlohmann::ordered_json environment_json(const sys::Confinement& c) {
    nlohmann::ordered_json e;
    e["container"] = c.container.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(c.container);
    e["seccomp_filter"] = c.seccomp_filter;
    e["wsl"] = c.wsl;
    e["kernel"] = std::to_string(c.kernel_major) + "." + std::to_string(c.kernel_minor);
    return e;
}

}  // namespace

int cmd_doctor(const std::vector<std::string>& args) {
    VerbArgs parsed;
    if (auto status = parse_or_exit("doctor", doctor_help(), args, parsed, 0)) return *status;
    const bool json = parsed.has("json");
    const sys::Confinement env = sys::confinement();
    const auto checks = doctor::run_checks(env);
    bool failed = false;
    for (const auto& c : checks) failed = failed || c.status == doctor::Check::Status::fail;
    if (json) {
        nlohmann::ordered_json j;
        j["ok"] = !failed;
        j["environment"] = environment_json(env);
        j["checks"] = nlohmann::ordered_json::array();
        for (const auto& c : checks) {
            nlohmann::ordered_json o;
            o["name"] = c.name;
            o["status"] = c.status == doctor::Check::Status::ok     ? "ok"
                          : c.status == doctor::Check::Status::warn ? "warn"
                                                                    : "fail";
            o["detail"] = c.detail;
            o["fix"] = c.fix.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(c.fix);
            j["checks"].push_back(o);
        }
        std::printf("%s\n", j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
        std::fflush(stdout);
        return failed ? 1 : 0;
    }
    std::printf("environment: %s\n", environment_text(env).c_str());
    for (const auto& c : checks) {
        std::printf("%-4s  %s: %s\n", doctor::status_label(c.status), c.name.c_str(), c.detail.c_str());
        if (c.status != doctor::Check::Status::ok && !c.fix.empty()) std::printf("      fix: %s\n", c.fix.c_str());
    }
    std::fflush(stdout);
    return failed ? 1 : 0;
}

}  // namespace agentjail::cli
