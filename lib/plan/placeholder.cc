// SPDX-License-Identifier: Apache-2.0
// Stable secret placeholders: HMAC-SHA256 under a per-user key, over the agent's
// state directory, the secret's name and its sources (never its value, which is
// not read before the sandbox exists). An agent that remembers an approved key by
// its last characters (Claude Code) then asks once, not on every run. The key lives
// in $XDG_STATE_HOME/agentjail/placeholder.key, read without following links,
// made on first use by the run (a host action: lib/run/host_actions.cc), and hidden
// inside every sandbox (plan.cc).
#include "plan/internal.hpp"

#include "util/strings.hpp"
#include "sys/state_dir.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace agentjail::plan::detail {

namespace {

constexpr const char* kKeyName = "placeholder.key";
constexpr std::size_t kKeySize = 32;

bool fill_random(unsigned char* p, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
        ssize_t r = ::getrandom(p + got, n - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        got += static_cast<std::size_t>(r);
    }
    return true;
}

}  // namespace

std::string foreign_state_home(const HostView& view, const std::string& base) {
    // root must not make directories in another user's tree (sudo keeps HOME): they
    // would be root's, and that user's own agentjail would refuse them afterwards.
    if (::geteuid() != 0) return {};
    std::string cur = base + "/agentjail";
    struct stat st {};
    while (view.stat(cur, st) != 0 && errno == ENOENT && cur.size() > 1)
        cur = cur.substr(0, cur.rfind('/') == 0 ? 1 : cur.rfind('/'));
    if (st.st_uid == 0) return {};
    return cur + " belongs to uid " + std::to_string(st.st_uid) + " (a root run with another user's HOME)";
}

Plan::KeptScan kept_scan_place(const HostFacts& host, const HostView& view, const std::string& workspace) {
    Plan::KeptScan k;
    if (workspace.empty() || (host.home.empty() && !env_lookup(host.environ, "XDG_STATE_HOME"))) return k;
    std::string base = sys::state_home(host.environ, host.home);
    if (base.empty() || base[0] != '/' || !foreign_state_home(view, base).empty()) return k;
    // Named as the agent's per-project state is: a name, not a proof (the file names
    // its root).
    k.base = base;
    k.name = project_key(workspace);
    return k;
}

std::string placeholder_key_path(const HostFacts& host) {
    if (host.home.empty() && !env_lookup(host.environ, "XDG_STATE_HOME")) return {};
    std::string base = sys::state_home(host.environ, host.home);
    if (base.empty() || base[0] != '/') return {};
    return util::normalize_path(base + "/agentjail/" + kKeyName);
}

PlaceholderKey placeholder_key(const HostFacts& host, const HostView& view, Plan& plan) {
    PlaceholderKey k;
    k.path = placeholder_key_path(host);
    if (k.path.empty()) {
        k.why_not = "no state directory (HOME and XDG_STATE_HOME are unknown)";
        return k;
    }
    std::string base = sys::state_home(host.environ, host.home);
    if (std::string why = foreign_state_home(view, base); !why.empty()) {
        k.why_not = why;
        return k;
    }
    // A regular file of ours, closed to others, of one link, 32 bytes.
    const HostView::StateFile read = view.read_state_file(base, kKeyName, kKeySize, k.key);
    if (read.missing) {
        // First use: a key of this plan's own, which the run makes (explain shows
        // that it would); until then no name is taken on the host.
        k.key.resize(kKeySize);
        if (!fill_random(reinterpret_cast<unsigned char*>(k.key.data()), kKeySize)) {
            k.key.clear();
            k.why_not = "no random bytes";
            return k;
        }
        HostAction a;
        a.kind = HostAction::Kind::placeholder_key;
        a.path = k.path;
        a.base = base;
        a.text = k.key;
        a.why = "the key of stable secret placeholders, made on first use";
        plan.host_actions.push_back(std::move(a));
        k.made_by_run = true;
        return k;
    }
    if (!read.why.empty()) {
        k.key.clear();
        k.why_not = read.why;
    }
    return k;
}

std::string stable_placeholder(const std::string& key, const std::string& scope,
                               const std::string& name, const std::vector<std::string>& sources) {
    // Each field with its length first, so that no two different inputs meet.
    std::string msg = "agentjail secret placeholder v1";
    auto field = [&](const std::string& f) {
        msg += '\0';
        msg += std::to_string(f.size());
        msg += ':';
        msg += f;
    };
    field(scope);
    field(name);
    for (const auto& s : sources) field(s);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
             reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), mac, &len) == nullptr)
        return {};
    static const char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < 16 && i < len; ++i) {
        out += hex[mac[i] >> 4];
        out += hex[mac[i] & 15];
    }
    return "agentjail-secret-placeholder-" + name + "-" + out;
}

}  // namespace agentjail::plan::detail
