// SHA-256 (FIPS 180-4), for the archive manifest's member digests: the
// request layer (and so the browser) computes the same manifest.json as
// the CLI, which hashes with OpenSSL. Portable, no dependencies.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace sc {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  std::array<uint8_t, 32> digest();  // finishes; the object is spent

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t used_ = 0;     // bytes in buf_
  uint64_t total_ = 0;  // bytes hashed
};

// 64 lowercase hex digits.
std::string sha256_hex(std::string_view bytes);
std::string to_hex(const std::array<uint8_t, 32>& digest);

}  // namespace sc
