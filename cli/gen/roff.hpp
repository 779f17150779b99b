// SPDX-License-Identifier: Apache-2.0
// Text as roff for the man pages: escaping, help texts (as --help prints them) and
// the Markdown that docs/ is written in (the subset it uses).
#pragma once

#include <string>
#include <string_view>

namespace agentjail::cli::gen {

// Text as roff: a backslash as \e, '-' as \- (so that flags copy as typed, not as
// hyphens), and any character outside ASCII as \[uXXXX], which needs no input
// encoding. Leaves a leading '.' or '\'' to roff_lines().
std::string roff_escape(std::string_view text);
// An argument of a macro line (.SH "..."): escaped, '"' as \(dq.
std::string roff_arg(std::string_view text);
// Escaped text made into input lines: each line that would start with '.' or '\''
// (a request to roff) gets \& in front; ends with a newline.
std::string roff_lines(std::string_view escaped);

// A help text as a man page body: its paragraphs filled; lines indented by spaces
// (usage lines, option lists, examples) kept as they are.
std::string help_to_roff(std::string_view help);

// Markdown as a man page body: "## " headings as .SH, "### " as .SS, paragraphs,
// "- " lists, fenced code as .EX/.EE, `code` in bold, *emphasis* in italics,
// [text](link) as its text, and tables as one tagged paragraph per row. The "# "
// title is left out (it is the page's NAME).
std::string markdown_to_roff(std::string_view markdown);
// Markdown's inline text (code, emphasis, links) as escaped roff.
std::string markdown_inline(std::string_view text);

}  // namespace agentjail::cli::gen
