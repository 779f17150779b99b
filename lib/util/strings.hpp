// SPDX-License-Identifier: Apache-2.0
// Small string helpers shared by the pure modules (no system calls here).
#pragma once

#include "base/error.hpp"

#include <cstddef>
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

// "SIGSEGV"-style name of a signal ("signal 99" when unknown).
std::string signal_name(int sig);
// An Error of `kind` for a failed system call: "what: ENOENT (No such file or directory)".
Error errno_error(ErrorKind kind, int err, const std::string& what);

bool starts_with(std::string_view s, std::string_view prefix);
// n bytes as lowercase hexadecimal, two digits each.
std::string hex(const unsigned char* p, std::size_t n);

// Lexically normalises an absolute path: collapses //, removes . and resolves ..
// without touching the filesystem. Returns "" for a relative path.
std::string normalize_path(std::string_view path);

// The last component of a path as written ("claude" of "/usr/bin/claude"; "" for
// "/usr/bin/"): how a command's name is matched against an agent preset's.
inline std::string_view base_name(std::string_view path) {
    auto slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// True when `path` equals `dir` or lies beneath it (both normalised, absolute).
bool path_within(std::string_view path, std::string_view dir);


// `s` made safe to print on a terminal in agentjail's own messages: control
// characters (C0, DEL, C1 whether as raw bytes or UTF-8) and bytes that are not
// UTF-8 become \xNN, a backslash becomes \\; everything else is kept. A file name
// with ESC sequences or a newline then cannot act on the user's terminal or fake a line.
// keep_newlines: for a multi-line text (explain's), where '\n' ends its lines.
std::string printable(std::string_view s, bool keep_newlines = false);

// A JSON text (pure ASCII, as nlohmann's dump(ensure_ascii) makes it) with every
// shell metacharacter inside its strings ($ ` ; | & < > ' " ( ) !) and DEL written as
// \u00XX. Still the same JSON value; the line is inert wherever it lands (a shell
// startup file, a terminal, a log viewer). Text outside strings is left as is.
std::string inert_json(std::string_view json);

}  // namespace agentjail::util
