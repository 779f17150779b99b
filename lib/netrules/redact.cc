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
    size_t longest = 0;
    for (const auto& u : uses) {
        if (u.value.empty()) continue;
        values_.push_back(u.value);
        masks_.push_back(body_mask(u));
        longest = std::max(longest, u.value.size());
    }
    if (longest > 0) window_ = longest - 1;
}

std::string Redactor::feed(std::string_view in) {
    if (values_.empty()) return std::string(in);
    pending_.append(in);
    // The same count whatever the bytes are: all but the last window_.
    return release(pending_.size() > window_ ? pending_.size() - window_ : 0);
}

std::string Redactor::finish() { return release(pending_.size()); }

std::string Redactor::release(size_t limit) {
    // A value that starts before `limit` ends within pending_ (limit + window_ <=
    // size), so it is there whole. One that starts in the held tail may still be
    // growing: a short value inside a longer one that is still arriving is never
    // replaced on its own (which would let the rest of the longer one through).
    size_t pos = scanned_;
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
        // In place: the mask is as long as the value, so what goes out now is still
        // exactly `limit` bytes, and a mask that reaches into the held tail goes later.
        pending_.replace(best, values_[which].size(), masks_[which]);
        pos = best + values_[which].size();
    }
    scanned_ = std::max(pos, limit) - limit;
    std::string out = pending_.substr(0, limit);
    pending_.erase(0, limit);
    return out;
}

}  // namespace agentjail::net
