// BoundedQueue: a blocking multi-producer multi-consumer FIFO of fixed
// capacity, the hand-off between the stages of the example workloads.
//
// Thread-safety: every method may be called from any thread. Push blocks
// while the queue is full, Pop while it is empty; after Close, Push drops its
// item and returns false, and Pop returns the remaining items, then nullopt.
#ifndef RINGPROF_EXAMPLES_COMMON_BOUNDED_QUEUE_H_
#define RINGPROF_EXAMPLES_COMMON_BOUNDED_QUEUE_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

namespace ringprof {
namespace examples {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : capacity_(capacity) {}

  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  bool Push(T item) {
    std::unique_lock<std::mutex> lock(mu_);
    not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
    if (closed_) return false;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return true;
  }

  std::optional<T> Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace examples
}  // namespace ringprof

#endif  // RINGPROF_EXAMPLES_COMMON_BOUNDED_QUEUE_H_
