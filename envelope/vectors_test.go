package envelope_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

type identityVectors struct {
	Events []struct {
		Name      string         `json:"name"`
		Event     jsontext.Value `json:"event"`
		JCS       string         `json:"jcs"`
		Hash      string         `json:"hash"`
		Signature string         `json:"signature"`
		Seed      string         `json:"seed"`
	} `json:"events"`
	JSON struct {
		Valid   []namedText `json:"valid"`
		Invalid []namedText `json:"invalid"`
	} `json:"json"`
	ClosedShape struct {
		Invalid []struct {
			Name  string         `json:"name"`
			Event jsontext.Value `json:"event"`
		} `json:"invalid"`
	} `json:"events_closed_shape"`
	Submissions struct {
		WindowMS  int64                     `json:"window_ms"`
		Envelopes map[string]jsontext.Value `json:"envelopes"`
		Steps     []struct {
			Name     string   `json:"name"`
			Envelope string   `json:"envelope"`
			NowMS    int64    `json:"now_ms"`
			Accepted []string `json:"accepted"`
			Expected string   `json:"expected"`
		} `json:"steps"`
	} `json:"submissions"`
}

func loadJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func envelopeJSON(hash string, event []byte, sig string) []byte {
	return []byte(`{"hash":"` + hash + `","event":` + string(event) + `,"signature":"` + sig + `"}`)
}

// TestIdentityVectors runs the envelope-level sections of the Agent Identity
// 1.0 vectors: events, json, events_closed_shape and submissions.
func TestIdentityVectors(t *testing.T) {
	var v identityVectors
	loadJSON(t, "../identity/testdata/identity-1.0.vectors.json", &v)

	t.Run("events", func(t *testing.T) {
		for _, tc := range v.Events {
			t.Run(tc.Name, func(t *testing.T) {
				env, err := envelope.Verify(envelopeJSON(tc.Hash, tc.Event, tc.Signature))
				if err != nil {
					t.Fatal(err)
				}
				if got := string(env.Canonical()); got != tc.JCS {
					t.Errorf("JCS mismatch\n got %s\nwant %s", got, tc.JCS)
				}
				if env.Hash().String() != tc.Hash {
					t.Errorf("hash %s, want %s", env.Hash(), tc.Hash)
				}
				// Re-sign from the seed: Ed25519 is deterministic, so the
				// signature must be reproduced exactly.
				seed, _ := hex.DecodeString(tc.Seed)
				key, err := identity.NewKeyFromSeed(seed)
				if err != nil {
					t.Fatal(err)
				}
				resigned, err := envelope.Sign(context.Background(), key, env.Event())
				if err != nil {
					t.Fatal(err)
				}
				if sig := resigned.Signature(); envelopeSig(resigned) != tc.Signature {
					t.Errorf("signature %x, want %s", sig, tc.Signature)
				}
				// Re-marshalling a parsed envelope yields the canonical event.
				again, err := envelope.Verify(env.AppendJSON(nil))
				if err != nil || !bytes.Equal(again.Canonical(), env.Canonical()) {
					t.Errorf("re-marshalled envelope differs: %v", err)
				}
			})
		}
	})

	t.Run("json", func(t *testing.T) {
		// A JSON text is judged inside an event payload, the place untrusted
		// text reaches the parser.
		key, _ := identity.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
		wrap := func(payload string) []byte {
			return []byte(`{"hash":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","event":{"protocol":"agent-profile/1.0","type":"profile.update","actor":"` +
				key.AgentID().String() + `","created_at":1,"nonce":1,"payload":` + payload + `},"signature":"` +
				string(bytes.Repeat([]byte("A"), 86)) + `"}`)
		}
		for _, tc := range v.JSON.Valid {
			t.Run(tc.Name, func(t *testing.T) {
				if _, err := envelope.Parse(wrap(tc.Text)); err != nil {
					t.Fatal(err)
				}
			})
		}
		for _, tc := range v.JSON.Invalid {
			t.Run(tc.Name, func(t *testing.T) {
				_, err := envelope.Parse(wrap(tc.Text))
				if !errors.Is(err, identity.ErrInvalidEvent) {
					t.Fatalf("got %v, want invalid_event", err)
				}
				// The text is also rejected as a whole envelope.
				if _, err := envelope.Parse([]byte(tc.Text)); !errors.Is(err, identity.ErrInvalidEvent) {
					t.Fatalf("whole text: got %v, want invalid_event", err)
				}
			})
		}
	})

	t.Run("events_closed_shape", func(t *testing.T) {
		for _, tc := range v.ClosedShape.Invalid {
			t.Run(tc.Name, func(t *testing.T) {
				_, err := envelope.Parse(envelopeJSON("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", tc.Event, string(bytes.Repeat([]byte("A"), 86))))
				if !errors.Is(err, identity.ErrInvalidEvent) {
					t.Fatalf("got %v, want invalid_event", err)
				}
			})
		}
	})

	t.Run("submissions", func(t *testing.T) {
		s := v.Submissions
		var now time.Time
		var history memHistory
		ver := envelope.NewVerifier(&envelope.VerifierOptions{
			Window:  time.Duration(s.WindowMS) * time.Millisecond,
			History: &history,
			Now:     func() time.Time { return now },
		})
		hashes := map[string]envelope.Hash{}
		for name, raw := range s.Envelopes {
			env, err := envelope.Verify(raw)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			hashes[name] = env.Hash()
		}
		for _, step := range s.Steps {
			t.Run(step.Name, func(t *testing.T) {
				now = time.UnixMilli(step.NowMS)
				history = memHistory{}
				for _, name := range step.Accepted {
					history[hashes[name]] = true
				}
				_, out, err := ver.Accept(context.Background(), s.Envelopes[step.Envelope], nil)
				var got string
				switch {
				case err != nil:
					var e *identity.Error
					if !errors.As(err, &e) {
						t.Fatalf("untyped error %v", err)
					}
					got = string(e.Code)
					if e.Code == identity.CodeNonceNotGreater && e.MaxSeenNonce == 0 {
						t.Error("nonce_not_greater without Max-Seen-Nonce")
					}
				case out == envelope.Fresh:
					got = "accepted"
				case out == envelope.Resubmission:
					got = "resubmission"
				}
				if got != step.Expected {
					t.Fatalf("got %s, want %s", got, step.Expected)
				}
			})
		}
	})
}

// TestADPEnvelopeVectors checks the envelope-level parts of the (later
// draft) ADP vectors: each record's envelope hash and signature.
func TestADPEnvelopeVectors(t *testing.T) {
	var v struct {
		Records []struct {
			Seq      int64          `json:"seq"`
			Envelope jsontext.Value `json:"envelope"`
		} `json:"records"`
	}
	loadJSON(t, "testdata/adp-later-draft-1.0.vectors.json", &v)
	if len(v.Records) == 0 {
		t.Fatal("no records")
	}
	for _, r := range v.Records {
		var claimed struct {
			Hash string `json:"hash"`
		}
		if err := json.Unmarshal(r.Envelope, &claimed, json.RejectUnknownMembers(false)); err != nil {
			t.Fatal(err)
		}
		t.Run(claimed.Hash, func(t *testing.T) {
			env, err := envelope.Verify(r.Envelope)
			if err != nil {
				t.Fatalf("seq %d: %v", r.Seq, err)
			}
			if env.Hash().String() != claimed.Hash {
				t.Fatalf("seq %d: hash %s", r.Seq, env.Hash())
			}
		})
	}
}

type namedText struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

type memHistory map[envelope.Hash]bool

func (h *memHistory) Accepted(_ context.Context, hash envelope.Hash) (bool, error) {
	return (*h)[hash], nil
}

func envelopeSig(e *envelope.Envelope) string {
	var out struct {
		Signature string `json:"signature"`
	}
	_ = json.Unmarshal(e.AppendJSON(nil), &out, json.RejectUnknownMembers(false))
	return out.Signature
}
