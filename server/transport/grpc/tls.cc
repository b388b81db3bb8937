#include "server/transport/grpc/tls.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <grpcpp/security/server_credentials.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

namespace gpusort {
namespace {

absl::StatusOr<std::string> ReadPemFile(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot read " + flag + " " + path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError("error reading " + flag + " " + path);
  return text.str();
}

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Bio = std::unique_ptr<BIO, BioDeleter>;
using Certificate = std::unique_ptr<X509, X509Deleter>;

Bio MemoryBio(const std::string& pem) { return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))); }

// The certificates in `pem`, in order; INVALID_ARGUMENT when there is none or one does not parse.
absl::StatusOr<std::vector<Certificate>> ParseCertificates(const std::string& flag, const std::string& path,
                                                           const std::string& pem) {
  std::vector<Certificate> certificates;
  Bio bio = MemoryBio(pem);
  for (;;) {
    Certificate c(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (c == nullptr) break;
    certificates.push_back(std::move(c));
  }
  // The loop ends at the end of the data (PEM_R_NO_START_LINE) or at a block that does not parse.
  const unsigned long error = ERR_peek_last_error();
  ERR_clear_error();
  if (certificates.empty())
    return absl::InvalidArgumentError(flag + " " + path + " holds no PEM certificate");
  if (error != 0 && ERR_GET_REASON(error) != PEM_R_NO_START_LINE)
    return absl::InvalidArgumentError(flag + " " + path + ": a certificate does not parse");
  return certificates;
}

absl::Status CheckKeyMatches(const std::string& key_path, const std::string& key_pem, X509* certificate,
                             const std::string& cert_path) {
  Bio bio = MemoryBio(key_pem);
  std::unique_ptr<EVP_PKEY, KeyDeleter> key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (key == nullptr)
    return absl::InvalidArgumentError("--tls-key " + key_path + " holds no PEM private key (or it is encrypted)");
  if (X509_check_private_key(certificate, key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("--tls-key " + key_path + " is not the key of the certificate in --tls-cert " +
                                      cert_path);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ServerTls> MakeServerTls(const ServerConfig& config) {
  const bool tls = !config.tls_cert.empty() || !config.tls_key.empty();
  if (!tls) {
    if (!config.tls_client_ca.empty())
      return absl::InvalidArgumentError("--tls-client-ca (mutual TLS) needs --tls-cert and --tls-key");
    return ServerTls{grpc::InsecureServerCredentials(), "plaintext"};
  }
  if (config.tls_cert.empty() || config.tls_key.empty())
    return absl::InvalidArgumentError("TLS needs both --tls-cert and --tls-key");

  auto cert_pem = ReadPemFile("--tls-cert", config.tls_cert);
  if (!cert_pem.ok()) return cert_pem.status();
  auto key_pem = ReadPemFile("--tls-key", config.tls_key);
  if (!key_pem.ok()) return key_pem.status();
  auto chain = ParseCertificates("--tls-cert", config.tls_cert, *cert_pem);
  if (!chain.ok()) return chain.status();
  if (absl::Status s = CheckKeyMatches(config.tls_key, *key_pem, chain->front().get(), config.tls_cert); !s.ok())
    return s;

  std::string client_ca;
  if (!config.tls_client_ca.empty()) {
    auto ca = ReadPemFile("--tls-client-ca", config.tls_client_ca);
    if (!ca.ok()) return ca.status();
    auto parsed = ParseCertificates("--tls-client-ca", config.tls_client_ca, *ca);
    if (!parsed.ok()) return parsed.status();
    client_ca = std::move(*ca);
  }

  grpc::SslServerCredentialsOptions options(client_ca.empty()
                                                ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                                : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = client_ca;
  options.pem_key_cert_pairs.push_back({*key_pem, *cert_pem});
  return ServerTls{grpc::SslServerCredentials(options), client_ca.empty() ? "TLS" : "mutual TLS"};
}

}  // namespace gpusort
