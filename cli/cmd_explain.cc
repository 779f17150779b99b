// SPDX-License-Identifier: Apache-2.0
// `agentjail explain`: prints the effective policy and the plan that `run` with
// the same arguments would carry out (text, or JSON with --json); runs nothing.
#include "commands.hpp"
#include "options.hpp"

#include "plan/plan.hpp"
#include "util/strings.hpp"

#include <cstdio>
#include <cstdlib>

namespace agentjail::cli {

int cmd_explain(const std::vector<std::string>& args) {
    auto ctx = current_context();
    if (!ctx) return report(ctx.error());
    auto inv = parse_invocation(Verb::explain, args, *ctx);
    if (!inv) return report(inv.error());
    if (inv->policy) apply_stored_secrets(inv->policy->raw());
    for (const auto& w : inv->warnings) say(w);
    if (inv->help) {
        std::fputs(explain_help().c_str(), stdout);
        return 0;
    }
    std::string defaulted;
    if (inv->command.empty()) {
        const char* shell = std::getenv("SHELL");
        if (shell != nullptr && shell[0] != '\0') {
            inv->command = {shell};
            defaulted = "no command given: $SHELL";
        } else {
            inv->command = {"sh"};
            defaulted = "no command given and no $SHELL: sh";
        }
    }
    auto host = plan::HostFacts::current();
    if (!host) return report(host.error());
    const policy::Policy& p = inv->policy->raw();
    // The plan a run would carry out; what it makes on the host it only lists
    // (plan.host_actions), so explain changes nothing there.
    auto plan = plan::build(p, inv->command, *host);
    if (!plan) return report(plan.error());

    if (inv->json) {
        std::string json = plan::to_json(*plan);
        if (json.empty() || json.back() != '\n') json += '\n';
        std::fputs(json.c_str(), stdout);
        return 0;
    }
    // The plan's text starts with the policy and its layers; what the command
    // line changed on top of them comes after the command it applies to.
    if (!defaulted.empty()) std::printf("(%s)\n", defaulted.c_str());
    // Paths come from the filesystem: no control character of theirs reaches the terminal.
    std::fputs(util::printable(plan::to_text(*plan), true).c_str(), stdout);
    auto overrides = describe_overrides(p);
    std::printf("\noverrides from the command line:%s\n", overrides.empty() ? " none" : "");
    for (const auto& o : overrides) std::printf("  %s\n", util::printable(o).c_str());
    return 0;
}

}  // namespace agentjail::cli
