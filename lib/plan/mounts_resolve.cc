// SPDX-License-Identifier: Apache-2.0
// The Builder's second half (mounts_builder.hpp): the mounts asked for resolved into
// the final list: replacements and duplicates, hidden paths masked wherever a bind
// shows them ("deny wins"), protections and rename locks, the guards the supervisor
// watches, the order, and the checks that no mount point has to be created on the host.
#include "plan/mounts_builder.hpp"

#include "util/strings.hpp"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <map>

namespace agentjail::plan::detail {

namespace {

std::string label(const MountOp& op) {
    switch (op.kind) {
    case MountKind::bind: return std::string(op.read_only ? "ro" : "rw") + " bind " + op.dst;
    case MountKind::mask_dir:
    case MountKind::mask_file: return "mask " + op.dst;
    default: return std::string(kind_name(op.kind)) + " " + op.dst;
    }
}

std::string label_why(const MountOp& op) {
    return op.why.empty() ? label(op) : label(op) + " (" + op.why + ")";
}

bool same_op(const MountOp& a, const MountOp& b) {
    return a.kind == b.kind && a.src == b.src && a.dst == b.dst && a.read_only == b.read_only &&
           (a.kind != MountKind::tmpfs || (a.size_bytes == b.size_bytes && a.mode == b.mode));
}

// What kind of mount point an op needs: a directory, or a file.
bool needs_dir(const MountOp& op) {
    switch (op.kind) {
    case MountKind::bind:
    case MountKind::readonly: return op.is_dir;
    case MountKind::mask_file: return false;
    default: return true;
    }
}

}  // namespace

// A read-only bind of a name over itself inside a writable bind (`--ro
// {workspace}/.git/config`) is a protection of that name: the supervisor watches
// it like a mask (the host replacing the name drops the bind).
void Builder::protected_guards(const std::vector<MountOp>& ops) {
    for (size_t i = 0; i < ops.size(); ++i) {
        const MountOp& op = ops[i];
        if (op.kind != MountKind::bind || !op.read_only || op.src != op.dst) continue;
        auto slash = op.dst.rfind('/');
        auto parent = covering_op(ops, slash == 0 ? std::string("/") : op.dst.substr(0, slash));
        if (!parent || ops[*parent].kind != MountKind::bind || ops[*parent].read_only) continue;
        if (std::any_of(plan_.guards.begin(), plan_.guards.end(),
                        [&](const Guard& g) { return g.host == op.src; }))
            continue;
        Guard g;
        g.kind = Guard::Kind::protected_ro;
        g.host = op.src;
        g.inside = op.dst;
        g.is_dir = op.is_dir;
        struct stat st {};
        if (ctx_.view->lstat(g.host, st) == 0) {
            g.dev = st.st_dev;
            g.ino = st.st_ino;
        }
        g.why = op.why;
        plan_.guards.push_back(std::move(g));
    }
}

// Exact duplicates go; a different op on the same dst replaces the earlier one
// (the later layer, a flag or the workspace, is what the user asked for last).
void Builder::replace_same_dst() {
    std::vector<Entry> out;
    for (auto& e : entries_) {
        auto it = std::find_if(out.begin(), out.end(),
                               [&](const Entry& o) { return o.op.dst == e.op.dst; });
        if (it == out.end()) {
            out.push_back(std::move(e));
            continue;
        }
        if (same_op(it->op, e.op)) {
            it->derived = it->derived && e.derived;
            it->workspace = it->workspace || e.workspace;
            continue;
        }
        plan_.notes.push_back(label_why(e.op) + " replaces " + label_why(it->op));
        out.erase(it);
        out.push_back(std::move(e));
    }
    entries_ = std::move(out);
}

void Builder::drop_covered_derived() {
    std::vector<Entry> out;
    for (size_t i = 0; i < entries_.size(); ++i) {
        const Entry& d = entries_[i];
        bool covered = false;
        if (d.derived) {
            for (size_t j = 0; j < entries_.size() && !covered; ++j) {
                const MountOp& b = entries_[j].op;
                covered = j != i && b.kind == MountKind::bind && b.src == b.dst &&
                          b.read_only == d.op.read_only && b.dst != d.op.dst &&
                          util::path_within(d.op.dst, b.dst);
            }
        }
        if (!covered) out.push_back(d);
    }
    entries_ = std::move(out);
}

Result<void> Builder::find_hidden() {
    for (const auto& rule : policy_.hide) {
        // {workspace}/.env* hides nothing when no workspace is mounted.
        if (ctx_.workspace.empty() && uses_workspace(rule.pattern)) continue;
        if (uses_globstar(rule.pattern)) continue;  // workspace.cc: one scan for all of them
        auto pattern = expand_glob(rule.pattern, ctx_, rule.origin);
        if (!pattern) return std::move(pattern).error();
        std::vector<std::string> matches = ctx_.view->glob(*pattern);
        // A name without wildcards that a host action makes (an empty credentials
        // file in the agent's state) is hidden though the host has none yet.
        if (matches.empty() && rule.pattern.find_first_of("*?[") == std::string::npos) {
            auto plain = expand(rule.pattern, ctx_, rule.origin);
            if (plain && ctx_.view->makes(*plain)) matches.push_back(*plain);
        }
        for (const auto& match : matches) {
            // The canonical path is what a bind shows: hiding a symlink's
            // name alone would leave its target readable (THREATS FS-04).
            auto canon = ctx_.view->canonical(match);
            struct stat st {};
            if (!canon || ctx_.view->stat(*canon, st) != 0) continue;
            Hidden h;
            h.path = *canon;
            h.is_dir = S_ISDIR(st.st_mode);
            h.pattern = rule.pattern;
            h.why = describe(rule.origin);
            h.dev = st.st_dev;
            h.ino = st.st_ino;
            h.nlink = st.st_nlink;
            h.regular = S_ISREG(st.st_mode);
            if (std::none_of(hidden_.begin(), hidden_.end(), [&](const Hidden& o) { return o.path == h.path; }))
                hidden_.push_back(std::move(h));
        }
    }
    auto found = plan_workspace(policy_, ctx_, hidden_, plan_);
    if (!found) return std::move(found).error();
    findings_ = std::move(*found);
    return {};
}

Result<void> Builder::drop_hidden_binds() {
    std::vector<Entry> out;
    for (auto& e : entries_) {
        const Hidden* by = nullptr;
        if (e.op.kind == MountKind::bind) {
            for (const auto& h : hidden_) {
                if (util::path_within(e.op.src, h.path)) {
                    by = &h;
                    break;
                }
            }
        }
        if (by == nullptr) {
            out.push_back(std::move(e));
            continue;
        }
        // Deny wins even over the workspace; running without it would only
        // fail later and more obscurely.
        if (e.workspace)
            return invalid(by->why, "workspace " + e.op.src + " is hidden by " + by->pattern +
                                        ": a hidden path cannot be the workspace");
        std::string what = "dropped " + label_why(e.op) + ": " + e.op.src + " is hidden by " + by->pattern +
                           (by->why.empty() ? "" : " (" + by->why + ")");
        // Asked for on the command line, it is said at every run, not only by
        // explain (issue 27: `--ro ~/.ssh` went silently): deny wins.
        if (util::starts_with(e.op.why, "command line"))
            plan_.warnings.push_back(what + "; a hidden path stays hidden whatever binds it (deny wins; a "
                                            "policy of your own without that rule would show it)");
        else
            plan_.notes.push_back(std::move(what));
    }
    entries_ = std::move(out);
    return {};
}

// Direct mode: the rename locks (a read-write bind of each ancestor over itself)
// and the protected paths, read-only wherever a writable bind shows them (a
// --rw of a parent at another path must not lift the protection).
void Builder::workspace_locks() {
    auto has_dst = [this](const std::string& dst) {
        return std::any_of(entries_.begin(), entries_.end(),
                           [&](const Entry& e) { return e.op.dst == dst; });
    };
    const std::string ws_why = "workspace: the directories above a hidden or protected name cannot be renamed";
    for (const auto& a : findings_.ancestors) {
        if (has_dst(a)) continue;  // a mount point already
        MountOp op;
        op.src = a;
        op.dst = a;
        op.read_only = false;
        op.is_dir = true;
        op.why = ws_why;
        op.lock_only = true;
        add(std::move(op));
    }
    std::vector<MountOp> ops;
    ops.reserve(entries_.size());
    for (const auto& e : entries_) ops.push_back(e.op);
    for (size_t k = 0; k < findings_.protect.size(); ++k) {
        const Protected& p = findings_.protect[k];
        for (size_t i = 0; i < ops.size(); ++i) {
            const MountOp& b = ops[i];
            if (b.kind != MountKind::bind || b.read_only || !util::path_within(p.path, b.src)) continue;
            const std::string dst = join(b.dst, relative_to(p.path, b.src));
            auto top = covering_op(ops, dst);
            if (!top || *top != i) continue;
            MountOp op;
            op.src = p.path;
            op.dst = dst;
            op.read_only = true;
            op.is_dir = p.is_dir;
            op.placeholder = p.placeholder;
            op.why = p.why.empty() ? "protected by " + p.pattern : p.why + " (protect " + p.pattern + ")";
            auto same = std::find_if(entries_.begin(), entries_.end(),
                                     [&](const Entry& e) { return e.op.dst == dst; });
            if (same != entries_.end()) {
                // Protection wins over a read-write bind aimed at the same place.
                if (same->op.kind == MountKind::bind && !same->op.read_only) {
                    plan_.notes.push_back(label_why(op) + " replaces " + label_why(same->op));
                    entries_.erase(same);
                } else {
                    continue;  // read-only or something else is shown there already
                }
            }
            add(std::move(op));
            entries_.back().protect = static_cast<int>(k);
        }
    }
}

namespace {

// A guard of what the scan found at a protected or hidden name (the fields both have).
template <class Found>
Guard guard_of(Guard::Kind kind, const Found& f, const std::string& inside) {
    Guard g;
    g.kind = kind;
    g.host = f.path;
    g.inside = inside;
    g.is_dir = f.is_dir;
    g.dev = f.dev;
    g.ino = f.ino;
    g.pattern = f.pattern;
    g.why = f.why;
    g.link_of = f.link_of;
    return g;
}

}  // namespace

void Builder::protect_guard(const Protected& p, const MountOp& op) {
    Guard g = guard_of(Guard::Kind::protected_ro, p, op.dst);
    g.placeholder = p.placeholder;
    g.socket = p.socket;
    plan_.guards.push_back(std::move(g));
}

void Builder::sort_by_depth(std::vector<Entry>& v) {
    std::stable_sort(v.begin(), v.end(), [](const Entry& a, const Entry& b) {
        return depth(a.op.dst) < depth(b.op.dst);
    });
}

// A mask wherever a bind shows a hidden path: at the bind's dst plus the part
// of the hidden path below the bind's src. Only where that bind is what the
// sandbox shows there (a deeper tmpfs already hides it).
std::vector<MountOp> Builder::make_masks() {
    std::vector<MountOp> ops;
    ops.reserve(entries_.size());
    for (const auto& e : entries_) ops.push_back(e.op);
    std::vector<MountOp> masks;
    if (std::any_of(ops.begin(), ops.end(), [](const MountOp& o) {
            return o.kind == MountKind::proc && o.dst == "/proc";
        }))
        masks = proc_masks_;
    // The hidden path each mask is for: a mask over a name in a host directory
    // is watched for the run (a Guard), since replacing the name drops the mount.
    std::map<std::string, const Hidden*> mask_src;
    for (const auto& h : hidden_) {
        for (size_t i = 0; i < ops.size(); ++i) {
            const MountOp& b = ops[i];
            if (b.kind != MountKind::bind || !util::path_within(h.path, b.src)) continue;
            std::string dst = join(b.dst, relative_to(h.path, b.src));
            auto top = covering_op(ops, dst);
            if (!top || *top != i) continue;
            MountOp m;
            m.kind = h.is_dir ? MountKind::mask_dir : MountKind::mask_file;
            m.dst = dst;
            m.read_only = true;
            m.is_dir = h.is_dir;
            m.mode = 0;
            m.why = h.why;
            mask_src.emplace(m.dst, &h);
            masks.push_back(std::move(m));
        }
    }
    std::stable_sort(masks.begin(), masks.end(), [](const MountOp& a, const MountOp& b) {
        return depth(a.dst) < depth(b.dst);
    });
    // A mask inside another mask (or the same one twice) adds nothing.
    std::vector<MountOp> out;
    for (auto& m : masks) {
        bool inside = std::any_of(out.begin(), out.end(), [&](const MountOp& o) {
            return util::path_within(m.dst, o.dst);
        });
        if (inside) continue;
        if (auto it = mask_src.find(m.dst); it != mask_src.end()) hidden_guard(*it->second, m);
        out.push_back(std::move(m));
    }
    return out;
}

void Builder::hidden_guard(const Hidden& h, const MountOp& mask) {
    plan_.guards.push_back(guard_of(Guard::Kind::hidden, h, mask.dst));
}

// Nothing is mounted under a mask: deny wins over an op aimed inside a hidden path.
void Builder::drop_under_masks(const std::vector<MountOp>& masks) {
    std::vector<Entry> out;
    for (auto& e : entries_) {
        auto it = std::find_if(masks.begin(), masks.end(), [&](const MountOp& m) {
            return util::path_within(e.op.dst, m.dst);
        });
        if (it == masks.end()) {
            out.push_back(std::move(e));
            continue;
        }
        plan_.notes.push_back("dropped " + label_why(e.op) + ": " + it->dst + " is hidden" +
                              (it->why.empty() ? "" : " (" + it->why + ")"));
    }
    entries_ = std::move(out);
}

// Every mount point must exist already unless a tmpfs (or the new root) holds
// it: the launcher may create directories on its own tmpfs, never on the host.
Result<void> Builder::check_mount_points(std::vector<MountOp>& ops) {
    for (size_t i = 0; i < ops.size(); ++i) {
        const MountOp& op = ops[i];
        std::optional<size_t> parent;
        for (size_t j = i; j-- > 0;) {
            if (ops[j].dst != op.dst && util::path_within(op.dst, ops[j].dst)) {
                parent = j;
                break;
            }
        }
        if (!parent) continue;  // on the new root, a tmpfs
        const MountOp& p = ops[*parent];
        ops[i].in_host_dir = p.kind == MountKind::bind || p.kind == MountKind::overlay ||
                             p.kind == MountKind::view || p.kind == MountKind::proc;
        switch (p.kind) {
        case MountKind::tmpfs: continue;
        case MountKind::bind:
        case MountKind::overlay:
        case MountKind::view: break;  // the lower layer, or the host's directory, is what is there
        case MountKind::symlink:
            return invalid(op.why, "cannot mount " + op.dst + " under the symlink " + p.dst);
        case MountKind::proc:
            // Kernel files, the same on the host's /proc: only the hardening
            // ops go there, onto paths that exist.
            if (op.kind == MountKind::readonly || op.kind == MountKind::mask_dir ||
                op.kind == MountKind::mask_file) {
                struct stat st {};
                if (ctx_.view->lstat(op.dst, st) == 0 && S_ISDIR(st.st_mode) == needs_dir(op))
                    continue;
            }
            return invalid(op.why, "cannot create mount point " + op.dst + " inside " + p.dst);
        case MountKind::devpts:
        case MountKind::readonly:
            return invalid(op.why, "cannot create mount point " + op.dst + " inside " + p.dst);
        case MountKind::mask_dir:
        case MountKind::mask_file:
            return invalid(op.why, "cannot mount " + op.dst + " under the hidden " + p.dst);
        }
        auto r = check_in_bind(op, p);
        if (!r) return std::move(r).error();
        if (*r != InBind::mount) {
            plan_.notes.push_back(*r == InBind::present
                                      ? "the bind of " + p.dst + " already has " + label(op)
                                      : label(op) + ": gone from the host since it was matched, "
                                                    "nothing to " + (op.lock_only ? "keep" : "hide"));
            ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(i));
            --i;
        }
    }
    return {};
}

Result<Builder::InBind> Builder::check_in_bind(const MountOp& op, const MountOp& bind) {
    const std::string rel = relative_to(op.dst, bind.dst);
    std::string host = bind.src;
    std::string inside = bind.dst;
    size_t i = 0;
    while (i < rel.size()) {
        size_t j = rel.find('/', i);
        if (j == std::string::npos) j = rel.size();
        const std::string part = rel.substr(i, j - i);
        i = j + 1;
        const bool last = i > rel.size();
        host = join(host, part);
        inside = join(inside, part);
        struct stat st {};
        if (ctx_.view->lstat(host, st) != 0) {
            // A placeholder is made by the launcher, in a directory checked here.
            if (last && op.placeholder && errno == ENOENT) return InBind::mount;
            if (last && errno == ENOENT &&
                (op.kind == MountKind::mask_file || op.kind == MountKind::mask_dir))
                return InBind::gone;
            if (errno == ENOENT && op.lock_only) return InBind::gone;
            return invalid(op.why, "cannot create mount point " + op.dst +
                                       " inside the bind of " + bind.dst +
                                       " (it does not exist there)");
        }
        if (S_ISLNK(st.st_mode)) {
            if (last && op.kind == MountKind::symlink) {
                auto text = ctx_.view->readlink(host);
                if (text && *text == op.src) return InBind::present;
                return invalid(op.why, "cannot create the symlink " + op.dst +
                                           " inside the bind of " + bind.dst +
                                           " (a different symlink is there)");
            }
            // Mounting there would follow a link someone may have planted on
            // the host: refuse rather than mount onto where it points.
            return invalid(op.why, "cannot mount over " + op.dst + ": " + inside +
                                       " is a symlink in the bind of " + bind.dst);
        }
        if (!last && !S_ISDIR(st.st_mode))
            return invalid(op.why, "cannot create mount point " + op.dst +
                                       " inside the bind of " + bind.dst + " (" + inside +
                                       " is not a directory there)");
        if (last) {
            if (op.kind == MountKind::symlink)
                return invalid(op.why, "cannot create the symlink " + op.dst +
                                           " inside the bind of " + bind.dst +
                                           " (something else is there)");
            const bool dir = S_ISDIR(st.st_mode);
            if (dir != needs_dir(op))
                return invalid(op.why, "cannot create mount point " + op.dst +
                                           " inside the bind of " + bind.dst + " (it is " +
                                           (dir ? "a directory" : "not a directory") +
                                           " there, the mount needs " +
                                           (needs_dir(op) ? "a directory" : "a file") + ")");
        }
    }
    return InBind::mount;
}

}  // namespace agentjail::plan::detail
