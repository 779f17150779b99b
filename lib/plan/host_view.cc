// SPDX-License-Identifier: Apache-2.0
// plan::HostView: the host's answers, with the names the run's host actions make
// answered as they will be.
#include "plan/host_view.hpp"

#include "sys/state_dir.hpp"
#include "util/strings.hpp"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace agentjail::plan {

namespace {

std::string parent_of(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == 0 || slash == std::string::npos ? std::string("/") : path.substr(0, slash);
}

std::string name_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }

void fake_stat(bool is_dir, struct stat& st) {
    st = {};
    st.st_mode = is_dir ? (S_IFDIR | 0700) : (S_IFREG | 0600);
    st.st_uid = ::geteuid();
    st.st_gid = ::getegid();
    st.st_nlink = is_dir ? 2 : 1;
}

}  // namespace

void HostView::will_make(const std::string& path, bool is_dir) {
    for (auto& m : made_)
        if (m.path == path || m.canonical == path) {
            m.is_dir = is_dir;
            return;
        }
    // The parent as it will be (made by an earlier action, or the host's own, its
    // existing part followed as the user set it up), then this name: the action
    // makes it without following a link.
    std::string rest;
    const std::string parent = parent_of(path);
    std::string canon_parent;
    if (const Made* up = above(parent, rest))
        canon_parent = up->canonical + rest;
    else
        canon_parent = sys::resolve_existing(parent);
    made_.push_back(Made{path, canon_parent == "/" ? "/" + name_of(path) : canon_parent + "/" + name_of(path), is_dir});
}

const HostView::Made* HostView::find(const std::string& path) const {
    for (const auto& m : made_)
        if (m.path == path || m.canonical == path) return &m;
    return nullptr;
}

const HostView::Made* HostView::above(const std::string& path, std::string& rest) const {
    const Made* best = nullptr;
    size_t best_len = 0;
    for (const auto& m : made_)
        for (const std::string* name : {&m.path, &m.canonical})
            if (util::path_within(path, *name) && name->size() >= best_len) {
                best = &m;
                best_len = name->size();
                rest = path.substr(name->size());
            }
    return best;
}

bool HostView::makes(const std::string& path) const { return find(path) != nullptr; }

int HostView::lstat(const std::string& path, struct stat& st) const {
    if (const Made* m = find(path)) {
        fake_stat(m->is_dir, st);
        return 0;
    }
    return ::lstat(path.c_str(), &st);
}

int HostView::stat(const std::string& path, struct stat& st) const {
    if (const Made* m = find(path)) {
        fake_stat(m->is_dir, st);
        return 0;
    }
    if (::stat(path.c_str(), &st) == 0) return 0;
    // Below a directory an action makes, through its canonical name.
    std::string rest;
    if (const Made* up = above(path, rest); up != nullptr && !rest.empty())
        return ::stat((up->canonical + rest).c_str(), &st);
    return -1;
}

std::optional<std::string> HostView::canonical(const std::string& path) const {
    if (const Made* m = find(path)) return m->canonical;
    std::string rest;
    // Below a name an action makes: what the host has there is reached through it
    // as it will be (a link planted at the name is replaced, not followed).
    if (const Made* up = above(path, rest)) {
        const std::string below = up->canonical + rest;
        char buf[PATH_MAX];
        if (::realpath(below.c_str(), buf) == nullptr) return std::nullopt;
        return std::string(buf);
    }
    char buf[PATH_MAX];
    if (::realpath(path.c_str(), buf) == nullptr) return std::nullopt;
    return std::string(buf);
}

}  // namespace agentjail::plan
