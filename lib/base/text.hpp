// SPDX-License-Identifier: Apache-2.0
// Text for messages (the edit distance behind every "did you mean") and the one
// reading of a PATH-like list.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace agentjail::base {

// Levenshtein distance, ASCII letters compared without case.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to word within max_distance edits ("" when none is): the
// first of equally near ones.
std::string closest(std::string_view word, const std::vector<std::string_view>& candidates,
                    std::size_t max_distance = 2);

// The directories of a PATH-like list, in order: the absolute ones only (an empty or
// relative entry would depend on the current directory, so it is skipped).
std::vector<std::string> absolute_path_dirs(std::string_view list);

}  // namespace agentjail::base
