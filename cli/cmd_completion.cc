// SPDX-License-Identifier: Apache-2.0
// `agentjail completion bash|zsh|fish`: prints the shell's completion script, made
// from the same flag table and help texts as --help (completion.hpp).
#include "commands.hpp"
#include "completion.hpp"
#include "options.hpp"
#include "verb_args.hpp"

#include <cstdio>

namespace agentjail::cli {

namespace {

// "bash|zsh|fish"
std::string shell_list() {
    std::string shells;
    for (const auto& s : completion_shells()) shells += (shells.empty() ? "" : "|") + s;
    return shells;
}

}  // namespace

std::string completion_help() {
    const std::string shells = shell_list();
    return "agentjail completion: print the completion script for a shell: every flag and\n"
           "subcommand, with the values some flags take (built-in and your policies, network\n"
           "presets, modes, files and directories). Installed packages put the scripts where\n"
           "each shell finds them; this is for a shell of your own.\n"
           "\n"
           "Usage:\n"
           "  agentjail completion " +
           shells +
           "\n"
           "\n"
           "Examples:\n"
           "  source <(agentjail completion bash)           # in ~/.bashrc\n"
           "  source <(agentjail completion zsh)            # in ~/.zshrc, after compinit\n"
           "  agentjail completion fish > ~/.config/fish/completions/agentjail.fish\n";
}

int cmd_completion(const std::vector<std::string>& args) {
    VerbArgs parsed;
    if (auto status = parse_or_exit("completion", completion_help(), args, parsed)) return *status;
    const std::vector<std::string>& operands = parsed.operands;
    if (operands.size() != 1)
        return usage_error("completion: name one shell (usage: agentjail completion " +
                           shell_list() + ")");
    auto script = completion_script(operands.front());
    if (!script) return report(script.error());
    std::fputs(script->c_str(), stdout);
    return 0;
}

}  // namespace agentjail::cli
