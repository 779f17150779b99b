// SPDX-License-Identifier: Apache-2.0
// Helpers of the overlay-mode tests: a byte-for-byte picture of a directory tree,
// the runs in a fake home's state directory, and a run's change set.
#pragma once

#include "common.hpp"
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

inline std::vector<std::string> run_ids_in(const std::string& dir) {
    std::vector<std::string> ids;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return ids;
    while (const dirent* e = ::readdir(d))
        if (e->d_name[0] != '.') ids.emplace_back(e->d_name);
    ::closedir(d);
    std::sort(ids.begin(), ids.end());
    return ids;
}

inline std::vector<std::string> run_ids(const std::string& home) { return run_ids_in(runs_dir(home)); }

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

// The plan a run recorded (plan.json in its state directory) against what `explain
// --json` prints for the same command line, the run id (every run draws its own) put
// equal: the same plan, where the overlay's layers and the clone come from included.
inline void expect_explain_is_the_run(ajtest::Jail& jail, const std::vector<std::string>& flags,
                               const ajtest::RunOptions& opts, const std::string& runs_dir) {
    std::vector<std::string> ex{"explain", "--json"};
    ex.insert(ex.end(), flags.begin(), flags.end());
    ex.insert(ex.end(), {"--", "true"});
    auto e = jail.run(ex, opts);
    ASSERT_EQ(e.status, 0) << ajit::describe(e);
    auto explained = nlohmann::json::parse(e.out, nullptr, false);
    ASSERT_TRUE(explained.is_object()) << e.out;
    ASSERT_TRUE(explained["run_id"].is_string()) << e.out;
    std::vector<std::string> run = flags;
    run.insert(run.end(), {"--", "true"});
    auto r = jail.run(run, opts);
    ASSERT_EQ(r.status, 0) << ajit::describe(r);
    auto ids = run_ids_in(runs_dir);
    ASSERT_EQ(ids.size(), 1u);
    auto ran = nlohmann::json::parse(ajtest::read_file(runs_dir + "/" + ids[0] + "/plan.json"), nullptr, false);
    ASSERT_TRUE(ran.is_object());
    EXPECT_EQ(ran["run_id"], ids[0]);
    // Control: the recorded plan names where the run's state really is.
    EXPECT_TRUE(ajtest::contains(ran.dump(), ids[0] + "/")) << ran.dump(2);
    std::string text = explained.dump();
    const std::string id = explained["run_id"].get<std::string>();
    for (auto at = text.find(id); at != std::string::npos; at = text.find(id, at)) text.replace(at, id.size(), ids[0]);
    EXPECT_EQ(nlohmann::json::parse(text), ran) << "explain:\n" << explained.dump(2) << "\nthe run:\n" << ran.dump(2);
}

}  // namespace ajov
