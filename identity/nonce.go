package identity

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxNonce is the largest nonce, 2^53−1.
const MaxNonce = 1<<53 - 1

// MaxNonceJump bounds how far a Max-Seen-Nonce header may move the local
// sequence. Identity §6.2 bounds one header: at most 2^32 beyond
// max(next nonce, now in ms). This SDK also bounds the sum of all headers:
// a header above now + 2^32 ms is refused however the sequence got where it
// is, so the sequence never runs more than about 50 days ahead of the clock.
const MaxNonceJump = 1 << 32

// ErrNonceJump reports a Max-Seen-Nonce header beyond the 2^32 bound; the
// header is ignored and the sequence is unchanged.
var ErrNonceJump = errors.New("identity: Max-Seen-Nonce jumps more than 2^32 ahead")

// ErrNonceAhead reports a Max-Seen-Nonce header that is within the
// one-header bound but would move the sequence more than 2^32 ms ahead of
// the clock: repeated headers, each within 2^32 of the last, would
// otherwise exhaust the 2^53 sequence after about 2^21 answers. The header
// is ignored and the sequence is unchanged. It wraps ErrNonceJump, so
// errors.Is(err, ErrNonceJump) holds for both refusals.
var ErrNonceAhead = fmt.Errorf("%w: the sequence would run more than 2^32 ms ahead of the clock", ErrNonceJump)

// ErrNonceExhausted reports that the nonce sequence reached 2^53−1.
var ErrNonceExhausted = errors.New("identity: nonce sequence exhausted")

// NonceStore persists the last nonce a NonceSource issued, so a restart
// never reuses one. Save must be durable before it returns: the source only
// hands out a nonce after it is saved.
//
// One Agent ID has one nonce sequence across all protocols and services;
// every process signing for the same key must share one store (or use
// disjoint clocks, which the clock-derived rule tolerates).
type NonceStore interface {
	// Load returns the last issued nonce, or 0 if none was ever issued.
	Load(ctx context.Context) (int64, error)
	// Save records n as the last issued nonce.
	Save(ctx context.Context, n int64) error
}

// MemoryNonceStore is a NonceStore that lives only in memory: enough for
// tests and for keys that never outlive the process. It is safe for
// concurrent use.
type MemoryNonceStore struct {
	mu   sync.Mutex
	last int64
}

// Load implements NonceStore.
func (m *MemoryNonceStore) Load(context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last, nil
}

// Save implements NonceStore.
func (m *MemoryNonceStore) Save(_ context.Context, n int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = n
	return nil
}

// NonceSource issues strictly increasing nonces with the clock-derived rule
// nonce = max(last + 1, now_ms), which stays monotonic across restarts,
// restored backups and several devices sharing a key. It is safe for
// concurrent use.
type NonceSource struct {
	mu     sync.Mutex
	store  NonceStore
	loaded bool
	next   int64 // lower bound for the next nonce (last issued + 1)
	now    func() time.Time
}

// NonceOptions configures a NonceSource. A nil *NonceOptions means defaults.
type NonceOptions struct {
	// Store persists the sequence; nil means a MemoryNonceStore.
	Store NonceStore
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// NewNonceSource returns a source backed by opts.Store. The store is read
// lazily on first use, so construction does no I/O.
func NewNonceSource(opts *NonceOptions) *NonceSource {
	s := &NonceSource{store: &MemoryNonceStore{}, now: time.Now}
	if opts != nil {
		if opts.Store != nil {
			s.store = opts.Store
		}
		if opts.Now != nil {
			s.now = opts.Now
		}
	}
	return s
}

func (s *NonceSource) load(ctx context.Context) error {
	if s.loaded {
		return nil
	}
	last, err := s.store.Load(ctx)
	if err != nil {
		return fmt.Errorf("identity: loading nonce state: %w", err)
	}
	if last < 0 || last > MaxNonce {
		return fmt.Errorf("identity: stored nonce %d out of range", last)
	}
	s.next, s.loaded = last+1, true
	return nil
}

// Next issues the nonce for an event created at createdAt:
// max(last + 1, createdAt in ms). The nonce is saved before it is returned.
func (s *NonceSource) Next(ctx context.Context, createdAt time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(ctx); err != nil {
		return 0, err
	}
	n := max(s.next, createdAt.UnixMilli())
	if n > MaxNonce {
		return 0, ErrNonceExhausted
	}
	if err := s.store.Save(ctx, n); err != nil {
		return 0, fmt.Errorf("identity: saving nonce state: %w", err)
	}
	s.next = n + 1
	return n, nil
}

// Peek returns the lower bound for the next nonce without issuing it.
func (s *NonceSource) Peek(ctx context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(ctx); err != nil {
		return 0, err
	}
	return s.next, nil
}

// ObserveMaxSeen applies a Max-Seen-Nonce response header (decimal text)
// by the rule of AdvanceNonce: a header at or above the next nonce and at
// most now + 2^32 (in ms) moves the sequence to header + 1. A header beyond
// max(next, now) + 2^32 returns ErrNonceJump; one within that but above
// now + 2^32 returns ErrNonceAhead (which also matches ErrNonceJump). A
// refused or malformed header returns an error and changes nothing.
func (s *NonceSource) ObserveMaxSeen(ctx context.Context, header string) error {
	seen, err := ParseMaxSeenNonce(header)
	if err != nil {
		return err
	}
	return s.ObserveMaxSeenNonce(ctx, seen)
}

// ObserveMaxSeenNonce is ObserveMaxSeen for a value already parsed, such
// as identity.Error.MaxSeenNonce.
func (s *NonceSource) ObserveMaxSeenNonce(ctx context.Context, seen int64) error {
	if seen < 1 || seen > MaxNonce {
		return fmt.Errorf("identity: Max-Seen-Nonce %d out of range", seen)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(ctx); err != nil {
		return err
	}
	next, err := AdvanceNonce(s.next, s.now().UnixMilli(), seen)
	if err != nil || next == s.next {
		return err
	}
	if err := s.store.Save(ctx, next-1); err != nil {
		return fmt.Errorf("identity: saving nonce state: %w", err)
	}
	s.next = next
	return nil
}

// AdvanceNonce is the pure Max-Seen-Nonce rule: given the next nonce, the
// current time in ms and a header value, it returns the new next nonce or
// an error, leaving next unchanged:
//
//   - seen > max(next, nowMs) + 2^32, or seen ≥ 2^53−1: ErrNonceJump (the
//     per-header bound of Identity §6.2);
//   - seen < next: next (the header is behind the sequence);
//   - seen > nowMs + 2^32: ErrNonceAhead (this SDK's bound on the
//     cumulative advance: after any number of headers the last nonce seen
//     or issued because of one is at most 2^32 ms ahead of the clock);
//   - otherwise seen + 1.
func AdvanceNonce(next, nowMs, seen int64) (int64, error) {
	if seen > max(next, nowMs)+MaxNonceJump || seen >= MaxNonce {
		return next, ErrNonceJump
	}
	if seen < next {
		return next, nil
	}
	if seen > nowMs+MaxNonceJump {
		return next, ErrNonceAhead
	}
	return seen + 1, nil
}

// ParseMaxSeenNonce parses a Max-Seen-Nonce header: a decimal positive
// safe integer.
func ParseMaxSeenNonce(header string) (int64, error) {
	h := strings.TrimSpace(header)
	if h == "" || len(h) > 16 || strings.TrimLeft(h, "0123456789") != "" || (len(h) > 1 && h[0] == '0') {
		return 0, fmt.Errorf("identity: malformed Max-Seen-Nonce %.32q", header)
	}
	n, err := strconv.ParseInt(h, 10, 64)
	if err != nil || n < 1 || n > MaxNonce {
		return 0, fmt.Errorf("identity: Max-Seen-Nonce %.32q out of range", header)
	}
	return n, nil
}
