// SPDX-License-Identifier: Apache-2.0
// Secret placement in request headers and the reverse replacement in responses:
// a value goes out only in a credential header and never comes back in clear.
#include "netrules/redact.hpp"
#include "netrules/ascii.hpp"

#include <algorithm>
#include <cctype>

namespace agentjail::net {

namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
    if (from.empty()) return;
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
}

}  // namespace

bool carries_credential(std::string_view header, const std::vector<std::string>& named) {
    // Proxy-Authorization is the client's word to the proxy and is never sent on;
    // these never carry a credential of the origin's even when a policy names them,
    // because origins reflect them into responses as a matter of course.
    for (std::string_view never : {"proxy-authorization", "origin", "referer", "cookie", "host"})
        if (iequals(header, never)) return false;
    if (iequals(header, "authorization") || iequals(header, "x-api-key")) return true;
    return std::any_of(named.begin(), named.end(),
                       [&](const std::string& n) { return iequals(header, n); });
}

std::string put_secrets(std::string_view name, std::string value,
                        const std::vector<SecretUse>& uses) {
    for (const auto& u : uses)
        if (carries_credential(name, u.headers)) replace_all(value, u.placeholder, u.value);
    return value;
}

std::string body_mask(const SecretUse& use) {
    std::string m;
    const std::string& p = use.placeholder.empty() ? std::string("x") : use.placeholder;
    while (m.size() < use.value.size()) m += p;
    m.resize(use.value.size());
    return m;
}

std::string redact_head(std::string head, const std::vector<SecretUse>& uses) {
    for (const auto& u : uses) replace_all(head, u.value, u.placeholder);
    return head;
}

Redactor::Redactor(const std::vector<SecretUse>& uses) {
    for (const auto& u : uses) {
        if (u.value.empty()) continue;
        values_.push_back(u.value);
        masks_.push_back(body_mask(u));
        longest_ = std::max(longest_, u.value.size());
    }
}

std::string Redactor::feed(std::string_view in) {
    if (values_.empty()) return std::string(in);
    pending_.append(in);
    return drain(false);
}

std::string Redactor::finish() { return drain(true); }

std::string Redactor::drain(bool all) {
    std::string out;
    // Only what may be the start of a value waits for the next piece: the longest
    // tail of the bytes that is a proper prefix of some value. Anything else goes
    // on at once, so a streamed response (server-sent events) is not held up.
    size_t keep = 0;
    if (!all) {
        for (size_t k = std::min(pending_.size(), longest_ - 1); k > 0 && keep == 0; --k) {
            std::string_view tail = std::string_view(pending_).substr(pending_.size() - k);
            for (const auto& v : values_)
                if (v.size() > k && std::string_view(v).substr(0, k) == tail) keep = k;
        }
    }
    // Matches are taken only before the kept tail, so that a short value inside a
    // longer one that is still arriving is never replaced on its own (which would
    // let the rest of the longer one through).
    size_t limit = pending_.size() - keep;
    size_t pos = 0;
    for (;;) {
        // The leftmost complete match of any value (the longest one at a tie).
        size_t best = std::string::npos, which = 0;
        for (size_t i = 0; i < values_.size(); ++i) {
            size_t at = pending_.find(values_[i], pos);
            if (at == std::string::npos || at >= limit) continue;
            if (best == std::string::npos || at < best ||
                (at == best && values_[i].size() > values_[which].size())) {
                best = at;
                which = i;
            }
        }
        if (best == std::string::npos) break;
        out.append(pending_, pos, best - pos);
        out += masks_[which];
        pos = best + values_[which].size();
    }
    size_t end = std::max(pos, limit);
    out.append(pending_, pos, end - pos);
    pending_.erase(0, end);
    return out;
}

}  // namespace agentjail::net
