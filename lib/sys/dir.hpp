// SPDX-License-Identifier: Apache-2.0
// The names in a directory open as a descriptor, read once (readdir through a
// duplicate, so the caller's descriptor and its offset are untouched).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace agentjail::sys {

// Every name but "." and "..", in the order readdir gives them; nullopt when the
// directory cannot be read (errno says why).
std::optional<std::vector<std::string>> dir_names(int dirfd);

}  // namespace agentjail::sys
