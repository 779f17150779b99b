// SPDX-License-Identifier: Apache-2.0
// Small string helpers shared by the pure modules (no system calls here).
#pragma once

#include <string>
#include <string_view>

namespace agentjail::util {

// fnmatch-style glob over a whole string: '*' any run, '?' one char, no classes.
bool glob_match(std::string_view pattern, std::string_view text);

// The same, ignoring ASCII case: for deny lists, where `*_TOKEN` must also catch
// `LC_github_token` and `npm_config__authToken` (the program reading a variable
// decides its spelling, and some read them case-insensitively).
bool glob_match_icase(std::string_view pattern, std::string_view text);

// "EPERM"-style name of an errno value ("errno 1234" when unknown).
std::string errno_name(int err);

// "EPERM (Operation not permitted)".
std::string errno_text(int err);

bool starts_with(std::string_view s, std::string_view prefix);

// Lexically normalises an absolute path: collapses //, removes . and resolves ..
// without touching the filesystem. Returns "" for a relative path.
std::string normalize_path(std::string_view path);

// True when `path` equals `dir` or lies beneath it (both normalised, absolute).
bool path_within(std::string_view path, std::string_view dir);

}  // namespace agentjail::util
