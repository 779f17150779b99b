// SPDX-License-Identifier: Apache-2.0
// The caller as agentjail sees it, by one rule for the CLI and the planner alike:
// its home directory and its working directory, canonical.
#pragma once

#include "base/error.hpp"

#include <sys/types.h>

#include <string>
#include <utility>

namespace agentjail::sys {

// The login name and home directory of uid from the passwd database ("" each when
// it has no entry).
std::pair<std::string, std::string> passwd_of(uid_t uid);

// $HOME when it is an absolute path to a directory, else the passwd entry's home;
// canonical (links resolved) where it exists; "" when neither says.
std::string caller_home();

// The working directory, canonical.
Result<std::string> caller_cwd();

// The working directory as the caller's shell names it ($PWD, what `pwd -L` prints)
// when $PWD is an absolute, normalised path to this very directory; else cwd (the
// canonical one). Through a link it is not canonical: what a relative -C DIR means.
std::string caller_pwd(const std::string& cwd);

}  // namespace agentjail::sys
