// SPDX-License-Identifier: Apache-2.0
// The bash, zsh and fish completion scripts, made from the command line as data
// (usage.hpp): the flag table, the subcommand table and their help texts.
#pragma once

#include "base/error.hpp"

#include <string>
#include <vector>

namespace agentjail::cli {

// The shells there is a script for, in the order `agentjail completion --help` names them.
const std::vector<std::string>& completion_shells();
// The completion script for `shell`; invalid_input for a shell with none.
Result<std::string> completion_script(const std::string& shell);

}  // namespace agentjail::cli
