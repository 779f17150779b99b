// SPDX-License-Identifier: Apache-2.0
// The subcommand table (verbs.hpp).
#include "verbs.hpp"

#include "commands.hpp"

namespace agentjail::cli {

const std::vector<Subcommand>& subcommands() {
    // learn is a run that proposes a policy afterwards: it takes run's flags and
    // prints run's help.
    static const std::vector<Subcommand> table = {
        {"explain", cmd_explain, explain_help, Verb::explain},
        {"check", cmd_check, check_help, std::nullopt},
        {"doctor", cmd_doctor, doctor_help, std::nullopt},
        {"policies", cmd_policies, policies_help, std::nullopt},
        {"gc", cmd_gc, gc_help, std::nullopt},
        {"apply", cmd_apply, apply_help, std::nullopt},
        {"runs", cmd_runs, runs_help, std::nullopt},
        {"discard", cmd_discard, discard_help, std::nullopt},
        {"log", cmd_log, log_help, std::nullopt},
        {"learn", cmd_learn, global_help, Verb::run},
        {"secret", cmd_secret, secret_help, std::nullopt},
        {"trust", cmd_trust, trust_help, std::nullopt},
        {"completion", cmd_completion, completion_help, std::nullopt},
    };
    return table;
}

const Subcommand* find_subcommand(const std::string& name) {
    for (const auto& s : subcommands())
        if (name == s.name) return &s;
    return nullptr;
}

}  // namespace agentjail::cli
