// SPDX-License-Identifier: Apache-2.0
// The names a launch makes its placeholders under before it renames them into place
// (lib/guard/placeholder.hpp): ".agentjail-<pid>-<start>-<n>-<i>", unique to one run.
// The form is known here, below both its users: the guard makes such names, and the
// plan passes over another run's, which is no name anything reads.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace agentjail::plan {

// The i-th staged name of the run `tag` ("<pid>-<start>-<n>", guard::Journal::next_tag()).
std::string staged_name(const std::string& tag, std::size_t i);

// Whether name has the form of a staged name.
bool is_staged_name(std::string_view name);

}  // namespace agentjail::plan
