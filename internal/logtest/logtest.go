// Package logtest captures what a component logs through a *slog.Logger,
// so tests can assert that a failure the component otherwise swallows is
// reported.
package logtest

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"

	"github.com/agentprotocols/go-sdk/internal/pulse"
)

// Record is one captured log record as slog's JSON handler writes it:
// "level" and "msg", the attributes by key, groups as nested objects.
type Record map[string]any

// Message returns the record's message.
func (r Record) Message() string { s, _ := r[slog.MessageKey].(string); return s }

// Level returns the record's level name ("ERROR", "WARN", …).
func (r Record) Level() string { s, _ := r[slog.LevelKey].(string); return s }

// String returns the top-level attribute key as a string ("" if absent).
func (r Record) String(key string) string {
	switch v := r[key].(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// Recorder keeps every record a logger from [New] writes. It is safe for
// concurrent use.
type Recorder struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written pulse.Pulse // fired on each write
}

// New returns a logger at debug level whose records the returned Recorder
// keeps.
func New() (*slog.Logger, *Recorder) {
	r := &Recorder{}
	return slog.New(slog.NewJSONHandler(r, &slog.HandlerOptions{Level: slog.LevelDebug})), r
}

// Write implements io.Writer for the JSON handler (one record per call).
func (r *Recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.written.Fire()
	return r.buf.Write(p)
}

// Records returns the records captured so far, in order.
func (r *Recorder) Records() []Record {
	r.mu.Lock()
	text := r.buf.String()
	r.mu.Unlock()
	var out []Record
	for line := range strings.Lines(text) {
		var rec Record
		if json.Unmarshal([]byte(line), &rec) == nil {
			out = append(out, rec)
		}
	}
	return out
}

// Await returns the first record whose message contains substr, waiting
// for it until ctx is done.
func (r *Recorder) Await(ctx context.Context, substr string) (Record, bool) {
	var rec Record
	err := r.written.Wait(ctx, func() bool {
		var ok bool
		rec, ok = r.Find(substr)
		return ok
	})
	return rec, err == nil
}

// Find returns the first captured record whose message contains substr.
func (r *Recorder) Find(substr string) (Record, bool) {
	for _, rec := range r.Records() {
		if strings.Contains(rec.Message(), substr) {
			return rec, true
		}
	}
	return nil, false
}
