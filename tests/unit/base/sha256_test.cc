// base/sha256.h against the FIPS 180-2 appendix B examples and OpenSSL
// (the CLI's digest of the same manifest.json members).
#include <doctest/doctest.h>

#include <openssl/evp.h>

#include <string>

#include "base/sha256.h"

namespace {

std::string openssl_hex(const std::string& s) {
  std::array<uint8_t, 32> d{};
  unsigned int n = 0;
  EVP_Digest(s.data(), s.size(), d.data(), &n, EVP_sha256(), nullptr);
  return sc::to_hex(d);
}

}  // namespace

TEST_CASE("sha256: FIPS 180-2 examples") {
  CHECK(sc::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sc::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sc::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sc::sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256: any split into updates, and every length around the block and padding edges, equals OpenSSL") {
  std::string text;
  for (int i = 0; i < 300; ++i) text += static_cast<char>((i * 131 + 7) & 0xff);
  for (size_t len : {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 300}) {
    CAPTURE(len);
    const std::string part = text.substr(0, len);
    const std::string want = openssl_hex(part);
    CHECK(sc::sha256_hex(part) == want);
    for (size_t cut : {size_t{1}, size_t{13}, size_t{64}, len / 2}) {
      if (cut > len) continue;
      sc::Sha256 h;
      h.update(std::string_view(part).substr(0, cut));
      h.update(std::string_view(part).substr(cut));
      CHECK(sc::to_hex(h.digest()) == want);
    }
  }
}
