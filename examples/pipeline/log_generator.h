// LogGenerator: the pipeline example's input, synthetic HTTP access-log text
// (the kind of data real pipelines tokenize and compress): repetitive enough
// to compress about 3-5x, varied enough to keep a tokenizer's dictionary busy.
// Deterministic for a given seed. Thread-compatible.
#ifndef RINGPROF_EXAMPLES_PIPELINE_LOG_GENERATOR_H_
#define RINGPROF_EXAMPLES_PIPELINE_LOG_GENERATOR_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>

namespace ringprof {
namespace examples {

class LogGenerator {
 public:
  explicit LogGenerator(uint64_t seed) : rng_(seed) {}

  // Whole lines, at least `min_bytes` in total.
  std::string GenerateLogBlock(size_t min_bytes);

 private:
  int Uniform(int lo, int hi);  // inclusive

  std::mt19937_64 rng_;
  int64_t clock_seconds_ = 1700000000;
};

}  // namespace examples
}  // namespace ringprof

#endif  // RINGPROF_EXAMPLES_PIPELINE_LOG_GENERATOR_H_
