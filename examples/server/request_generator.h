// RequestGenerator: the server example's in-process load generator. Produces
// order requests as JSON text, as a client library would serialise them:
// 8-40 line items with SKUs, prices, tags, and the occasional escaped
// character. Deterministic for a given seed.
//
// Thread-compatible: use one generator per client thread.
#ifndef RINGPROF_EXAMPLES_SERVER_REQUEST_GENERATOR_H_
#define RINGPROF_EXAMPLES_SERVER_REQUEST_GENERATOR_H_

#include <cstdint>
#include <random>
#include <string>

namespace ringprof {
namespace examples {

class RequestGenerator {
 public:
  explicit RequestGenerator(uint64_t seed) : rng_(seed) {}

  // The next request body.
  std::string GenerateRequestBody();

 private:
  int Uniform(int lo, int hi);  // inclusive

  std::mt19937_64 rng_;
  int64_t next_id_ = 1;
};

}  // namespace examples
}  // namespace ringprof

#endif  // RINGPROF_EXAMPLES_SERVER_REQUEST_GENERATOR_H_
