// SPDX-License-Identifier: Apache-2.0
// Path patterns with `**`, matched segment by segment against relative paths
// (hide and protect rules over a workspace scan); pure code, no system calls.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace agentjail::base {

// A pattern split at '/': "**" is zero or more directories; within a segment "*"
// is any run, "?" one character, "[...]" a class ("[!...]" or "[^...]" negated,
// ranges "a-z"). A name starting with '.' is matched by "*", "?" or a class only
// when the pattern's segment starts with a literal '.', as in glob(3); "**"
// crosses every directory, dot directories too (a secret under `.config/` is a
// secret all the same). A trailing '/' means: only a directory matches.
class Pattern {
public:
    // `text` relative ("**/.git/hooks", ".env*"); empty segments and "." are dropped.
    explicit Pattern(std::string_view text);

    // rel: a relative path ("packages/api/.env"), no leading or trailing '/'.
    bool match(std::string_view rel, bool is_dir) const;
    // Like match(), for a path already split into its segments.
    bool match_segments(const std::vector<std::string_view>& segs, bool is_dir) const;

    bool has_globstar() const { return globstar_; }
    bool has_wildcards() const { return wildcards_; }
    bool dir_only() const { return dir_only_; }
    const std::vector<std::string>& segments() const { return segs_; }
    // The last segment, and whether it has no wildcard (a name a placeholder can hold).
    const std::string& last() const { return segs_.back(); }
    bool last_literal() const;
    bool empty() const { return segs_.empty(); }

private:
    std::vector<std::string> segs_;
    bool globstar_ = false;
    bool wildcards_ = false;
    bool dir_only_ = false;
};

// One segment against one name (no '/' in either), with the leading-dot rule.
bool match_segment(std::string_view pattern, std::string_view name);

// A quick test that rules out most names before match_segment: the pattern's literal
// head (before its first wildcard or escape) and literal tail (after its last '*',
// when nothing else follows it). may_match() is false only where match_segment is
// false too; the walk of a large workspace tries each `**` rule's last segment on
// every name.
class SegmentPrefilter {
public:
    explicit SegmentPrefilter(std::string_view pattern);
    bool may_match(std::string_view name) const {
        if (literal_) return name == head_;
        return name.size() >= head_.size() + tail_.size() && name.substr(0, head_.size()) == head_ &&
               name.substr(name.size() - tail_.size()) == tail_;
    }

private:
    bool literal_ = false;  // no wildcard at all: the name is the pattern
    std::string head_, tail_;
};

// True when s has '*', '?' or '['.
bool has_wildcard(std::string_view s);

// Splits a relative path at '/', dropping empty parts.
std::vector<std::string_view> split_path(std::string_view rel);

}  // namespace agentjail::base
