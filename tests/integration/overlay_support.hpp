// SPDX-License-Identifier: Apache-2.0
// Helpers of the overlay-mode tests: a byte-for-byte picture of a directory tree,
// the runs in a fake home's state directory, and a run's change set.
#pragma once

#include "test_support.hpp"

#include <nlohmann/json.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ajov {

// Every entry below dir: "file 0644 <bytes>", "dir 0755", "link -> <text>", by
// relative path; nothing is followed.
inline void tree_into(const std::string& dir, const std::string& rel, std::map<std::string, std::string>& out) {
    DIR* d = ::opendir((dir + (rel.empty() ? "" : "/" + rel)).c_str());
    if (d == nullptr) return;
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d))
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") names.emplace_back(e->d_name);
    ::closedir(d);
    for (const auto& n : names) {
        const std::string r = rel.empty() ? n : rel + "/" + n;
        const std::string full = dir + "/" + r;
        struct stat st {};
        if (::lstat(full.c_str(), &st) != 0) continue;
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
        if (S_ISLNK(st.st_mode)) {
            char buf[4096];
            ssize_t k = ::readlink(full.c_str(), buf, sizeof buf);
            out[r] = "link -> " + std::string(buf, k > 0 ? static_cast<size_t>(k) : 0);
        } else if (S_ISDIR(st.st_mode)) {
            out[r] = std::string("dir ") + mode;
            tree_into(dir, r, out);
        } else if (S_ISREG(st.st_mode)) {
            // A hidden file may be unreadable to the test user: its identity stands in.
            std::string content = ::access(full.c_str(), R_OK) == 0 ? ajtest::read_file(full) : "<unreadable>";
            out[r] = std::string("file ") + mode + " " + content;
        } else {
            out[r] = std::string("other ") + mode;
        }
    }
}

inline std::map<std::string, std::string> tree(const std::string& dir) {
    std::map<std::string, std::string> out;
    tree_into(dir, "", out);
    return out;
}

inline std::string runs_dir(const std::string& home) { return home + "/.local/state/agentjail/runs"; }

inline std::vector<std::string> run_ids(const std::string& home) {
    std::vector<std::string> ids;
    DIR* d = ::opendir(runs_dir(home).c_str());
    if (d == nullptr) return ids;
    while (const dirent* e = ::readdir(d))
        if (e->d_name[0] != '.') ids.emplace_back(e->d_name);
    ::closedir(d);
    std::sort(ids.begin(), ids.end());
    return ids;
}

// The change set as "kind type path" lines (changes.json of the run).
inline std::set<std::string> change_lines(const std::string& home, const std::string& id) {
    std::set<std::string> out;
    auto j = nlohmann::json::parse(ajtest::read_file(runs_dir(home) + "/" + id + "/changes.json"), nullptr, false);
    if (!j.is_array()) return {"<no change set>"};
    for (const auto& c : j)
        out.insert(c.at("kind").get<std::string>() + " " + c.at("type").get<std::string>() + " " +
                   c.at("path").get<std::string>() + (c.at("protected").get<bool>() ? " protected" : ""));
    return out;
}

inline nlohmann::json run_record(const std::string& home, const std::string& id) {
    return nlohmann::json::parse(ajtest::read_file(runs_dir(home) + "/" + id + "/run.json"), nullptr, false);
}

}  // namespace ajov
