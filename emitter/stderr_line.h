// StderrLine: one bounded line of text for the emitter's stderr messages,
// built without allocating (longer text is cut at the buffer).
//
// Async-signal-safe, allocation-free; Write() is one write(2) to stderr.
#ifndef RINGPROF_EMITTER_STDERR_LINE_H_
#define RINGPROF_EMITTER_STDERR_LINE_H_

#include <unistd.h>

#include <cstddef>
#include <cstdint>

namespace ringprof {
namespace emitter {

class StderrLine {
 public:
  StderrLine& Add(const char* s) {
    while (*s != '\0' && size_ + 2 < sizeof(buf_)) buf_[size_++] = *s++;
    buf_[size_] = '\0';
    return *this;
  }
  StderrLine& AddInt(int64_t v) {
    char digits[24];
    int n = 0;
    uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : v;
    do {
      digits[n++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0);
    if (v < 0) digits[n++] = '-';
    while (n > 0 && size_ + 2 < sizeof(buf_)) buf_[size_++] = digits[--n];
    buf_[size_] = '\0';
    return *this;
  }
  // The text so far (no newline added).
  const char* c_str() const { return buf_; }
  // The text with a newline at the end.
  const char* Finish() {
    buf_[size_++] = '\n';
    buf_[size_] = '\0';
    return buf_;
  }
  // Finish() written to stderr.
  void Write() {
    Finish();
    ssize_t unused = write(STDERR_FILENO, buf_, size_);
    (void)unused;
  }

 private:
  char buf_[512] = {};
  size_t size_ = 0;
};

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_STDERR_LINE_H_
