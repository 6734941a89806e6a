package httpc

import "time"

// RetryAfter parses a Retry-After header value — delay-seconds or an HTTP
// date, taken relative to now — for callers that schedule their own
// retries, such as a streaming client. ok is false when h is empty or
// malformed. It is the parser Do uses.
func RetryAfter(h string, now time.Time) (d time.Duration, ok bool) { return retryAfter(h, now) }
