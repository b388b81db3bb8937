// Blocking reads and writes of whole buffers on a data-port connection (sort.proto, "Sockets beside
// gRPC"), which keep asking whether to go on: a connection thread must notice its job failing, the
// server stopping, and a peer that stalls, while it waits for bytes.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/status.h"

namespace gpusort {

// Called while waiting (every 100 ms at most): a non-OK status ends the read or write with it.
using KeepGoingFn = std::function<absl::Status()>;

// Reads exactly `size` bytes. DEADLINE_EXCEEDED after `idle` without a byte; UNAVAILABLE when the
// connection breaks or ends first. With `ended_cleanly` set, a connection that ends before the first
// byte sets it to true and returns UNAVAILABLE (the peer is done, not broken).
absl::Status ReadFully(int fd, std::byte* out, std::size_t size, std::chrono::milliseconds idle,
                       const KeepGoingFn& keep_going, bool* ended_cleanly = nullptr);
// Writes all `size` bytes; DEADLINE_EXCEEDED after `idle` in which the peer took none.
absl::Status WriteFully(int fd, const std::byte* data, std::size_t size, std::chrono::milliseconds idle,
                        const KeepGoingFn& keep_going);

// After a refusal was written: ends the sending side and reads (and drops) what the peer still sends
// until it closes, or `linger` passes, or `stop` is set. Closing a socket with unread bytes in it makes
// the kernel answer with a reset, which can destroy the refusal before the peer has read it; a peer
// that is still sending its keys would then learn only that the connection broke.
void LingerAfterRefusal(int fd, std::chrono::milliseconds linger, const KeepGoingFn& keep_going);
// One non-blocking read of what is there, dropped: false once the peer has closed (or the socket broke).
bool DropPending(int fd);

// The host part of a connected socket's peer, as gRPC names peers ("ipv4:10.0.0.7", "ipv6:[::1]").
std::string SocketPeerHost(int fd);

}  // namespace gpusort
