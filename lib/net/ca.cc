// SPDX-License-Identifier: Apache-2.0
// The per-run CA with OpenSSL: key generation, the CA certificate, leaf
// certificates per intercepted host, and their server contexts (HTTP/1.1 only).
#include <utility>

#include "net/ca.hpp"

#include "netrules/address.hpp"
#include "util/strings.hpp"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <boost/asio/ssl/context.hpp>

#include <cerrno>
#include <map>

namespace agentjail::net {

namespace {

struct X509Free {
    void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
    void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

// A CA can live for a long agent session; leaves expire with it.
constexpr long ca_days = 30;
constexpr size_t max_cached_leaves = 4096;

std::string openssl_error(const char* what) {
    unsigned long e = ERR_get_error();
    char buf[256] = {};
    if (e != 0) ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    return std::string(what) + (e != 0 ? std::string(": ") + buf : "");
}

KeyPtr new_key() { return KeyPtr(EVP_EC_gen("P-256")); }

bool random_serial(X509* x) {
    BIGNUM* bn = BN_new();
    bool ok = bn != nullptr && BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
              BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != nullptr;
    BN_free(bn);
    return ok;
}

bool add_ext(X509* x, X509* issuer, int nid, const char* value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, x, nullptr, nullptr, 0);
    X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    if (e == nullptr) return false;
    bool ok = X509_add_ext(x, e, -1) == 1;
    X509_EXTENSION_free(e);
    return ok;
}

// Only HTTP/1.1 is offered: the proxy parses HTTP/1.1 requests; a client that
// asks for h2 alone gets no ALPN answer and speaks HTTP/1.1 or gives up.
int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void*) {
    static const unsigned char h11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    unsigned char* sel = nullptr;
    unsigned char sel_len = 0;
    if (SSL_select_next_proto(&sel, &sel_len, h11, sizeof h11, in, inlen) ==
        OPENSSL_NPN_NEGOTIATED) {
        *out = sel;
        *outlen = sel_len;
        return SSL_TLSEXT_ERR_OK;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

}  // namespace

struct Ca::Impl {
    KeyPtr ca_key;
    X509Ptr ca_cert;
    KeyPtr leaf_key;  // one key for every leaf: minting stays cheap
    std::string pem;
    std::map<std::string, std::unique_ptr<boost::asio::ssl::context>> leaves;
};

Ca::Ca(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Ca::~Ca() = default;

const std::string& Ca::cert_pem() const { return impl_->pem; }

Result<std::unique_ptr<Ca>> Ca::create() {
    auto fail = [](const char* what) {
        return Error(ErrorKind::setup, EIO, "network proxy: CA: " + openssl_error(what));
    };
    auto impl = std::make_unique<Impl>();
    impl->ca_key = new_key();
    impl->leaf_key = new_key();
    if (!impl->ca_key || !impl->leaf_key) return fail("key generation");
    impl->ca_cert.reset(X509_new());
    X509* x = impl->ca_cert.get();
    if (x == nullptr || X509_set_version(x, 2) != 1 || !random_serial(x))
        return fail("certificate");
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), ca_days * 86400);
    unsigned char id[6];
    if (RAND_bytes(id, sizeof id) != 1) return fail("random");
    std::string cn = "agentjail run CA " + util::hex(id, sizeof id);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("agentjail"), -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
    if (X509_set_issuer_name(x, name) != 1 || X509_set_pubkey(x, impl->ca_key.get()) != 1)
        return fail("certificate");
    if (!add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
        !add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") ||
        !add_ext(x, x, NID_subject_key_identifier, "hash"))
        return fail("certificate extensions");
    if (X509_sign(x, impl->ca_key.get(), EVP_sha256()) <= 0) return fail("signing");
    BIO* bio = BIO_new(BIO_s_mem());
    if (bio == nullptr || PEM_write_bio_X509(bio, x) != 1) {
        BIO_free(bio);
        return fail("PEM");
    }
    char* data = nullptr;
    long len = BIO_get_mem_data(bio, &data);
    impl->pem.assign(data, static_cast<size_t>(len));
    BIO_free(bio);
    return std::unique_ptr<Ca>(new Ca(std::move(impl)));
}

boost::asio::ssl::context* Ca::server_context(const std::string& host, std::string& why) {
    auto it = impl_->leaves.find(host);
    if (it != impl_->leaves.end()) return it->second.get();
    if (impl_->leaves.size() >= max_cached_leaves) impl_->leaves.erase(impl_->leaves.begin());
    X509Ptr leaf(X509_new());
    X509* x = leaf.get();
    X509* ca = impl_->ca_cert.get();
    auto fail = [&](const char* what) -> boost::asio::ssl::context* {
        why = "minting a certificate for " + host + ": " + openssl_error(what);
        return nullptr;
    };
    if (x == nullptr || X509_set_version(x, 2) != 1 || !random_serial(x))
        return fail("certificate");
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    // Not past the CA's own end.
    if (X509_set1_notAfter(x, X509_get0_notAfter(ca)) != 1) return fail("validity");
    X509_NAME* name = X509_get_subject_name(x);
    std::string cn = host.size() <= 64 ? host : host.substr(0, 64);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
    if (X509_set_issuer_name(x, X509_get_subject_name(ca)) != 1 ||
        X509_set_pubkey(x, impl_->leaf_key.get()) != 1)
        return fail("certificate");
    std::string san = (parse_numeric_host(host) ? "IP:" : "DNS:") + host;
    if (!add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE") ||
        !add_ext(x, ca, NID_key_usage, "critical,digitalSignature") ||
        !add_ext(x, ca, NID_ext_key_usage, "serverAuth") ||
        !add_ext(x, ca, NID_subject_key_identifier, "hash") ||
        !add_ext(x, ca, NID_authority_key_identifier, "keyid:always") ||
        !add_ext(x, ca, NID_subject_alt_name, san.c_str()))
        return fail("certificate extensions");
    if (X509_sign(x, impl_->ca_key.get(), EVP_sha256()) <= 0) return fail("signing");
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == nullptr) return fail("context");
    auto owned = std::make_unique<boost::asio::ssl::context>(ctx);  // owns ctx from here
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate(ctx, x) != 1 ||
        SSL_CTX_use_PrivateKey(ctx, impl_->leaf_key.get()) != 1)
        return fail("context certificate");
    SSL_CTX_set_alpn_select_cb(ctx, select_alpn, nullptr);
    auto* raw = owned.get();
    impl_->leaves.emplace(host, std::move(owned));
    return raw;
}

}  // namespace agentjail::net
