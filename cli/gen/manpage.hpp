// SPDX-License-Identifier: Apache-2.0
// The man pages: agentjail(1) from the flag table, the subcommand table and their
// help texts; agentjail-policy(5) from docs/policy-format.md.
#pragma once

#include <string>

namespace agentjail::cli::gen {

// agentjail(1). datadir: where the built-in policies are installed
// (CMAKE_INSTALL_FULL_DATADIR/agentjail), named under FILES.
std::string agentjail_page(const std::string& datadir);
// agentjail-policy(5) from the Markdown of docs/policy-format.md.
std::string policy_page(const std::string& markdown);

}  // namespace agentjail::cli::gen
