package adphosttest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/identity"
)

// BigMessageSize is the content length FillBigRoom writes: a text message
// whose payload stays just within the 64 KiB default payload bound (§21).
const BigMessageSize = 65536 - 64

// FillBigRoom posts n text messages of BigMessageSize bytes with
// adp.MaxMentions mentions each through c, which must be a speaker of the
// room: the largest records a room accepts without a payload hint, about
// 68 KB each, so 500 of them exceed a default client's 32 MiB response
// bound, so a client must read the room in smaller pages. The host must
// not rate-limit c.
func FillBigRoom(ctx context.Context, c *adp.Client, room string, n int) error {
	mentions := make([]identity.AgentID, adp.MaxMentions)
	for i := range mentions {
		seed := sha256.Sum256([]byte("adphosttest mention " + strconv.Itoa(i)))
		k, err := identity.NewKeyFromSeed(seed[:])
		if err != nil {
			return err
		}
		mentions[i] = k.AgentID()
	}
	body := strings.Repeat("q", BigMessageSize-4)
	if _, err := c.Sync(ctx, room); err != nil {
		return err
	}
	base, err := c.Verified(room).BaseFor(adp.TypeMessageCreate)
	if err != nil {
		return err
	}
	for i := range n {
		// Each message is based on the previous one's record: no sync
		// between writes.
		msg := adp.Message{ContentType: "text/plain", Content: adp.TextContent(fmt.Sprintf("%04d", i%10000) + body)}
		env, err := adp.NewMessage(ctx, c.Author(), base, msg, mentions...)
		if err != nil {
			return err
		}
		rec, err := c.Submit(ctx, room, env)
		if err != nil {
			return fmt.Errorf("adphosttest: big message %d: %w", i, err)
		}
		base.Seq, base.Hash = rec.Seq, rec.Hash
	}
	return nil
}

// Unbudgeted wraps a host's handler so that every history page (GET
// /v1/rooms/{room_id}/events) holds as many records as the request's
// limit asks for, however many bytes they take — a host that budgets its
// pages by count only, which every client must cope with. It pages the
// wrapped handler as often as needed to fill the page. Other requests
// pass through unchanged.
func Unbudgeted(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/events") || q.Has("cursor") {
			h.ServeHTTP(w, r)
			return
		}
		limit, err := strconv.Atoi(q.Get("limit"))
		if err != nil || limit <= 0 {
			h.ServeHTTP(w, r)
			return
		}
		after, _ := strconv.ParseInt(q.Get("after_seq"), 10, 64)
		var recs []jsontext.Value
		var cursor string
		for len(recs) < limit {
			sub := r.Clone(r.Context())
			sq := sub.URL.Query()
			sq.Set("after_seq", strconv.FormatInt(after, 10))
			sq.Set("limit", strconv.Itoa(limit-len(recs)))
			sub.URL.RawQuery = sq.Encode()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, sub)
			if rec.Code != http.StatusOK {
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				w.Write(rec.Body.Bytes())
				return
			}
			var page struct {
				Result     []jsontext.Value `json:"result"`
				NextCursor string           `json:"next_cursor"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			for _, v := range page.Result {
				var seq struct {
					Seq int64 `json:"seq"`
				}
				if err := json.Unmarshal(v, &seq); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				after = seq.Seq
			}
			recs = append(recs, page.Result...)
			cursor = page.NextCursor
			if cursor == "" || len(page.Result) == 0 {
				break
			}
		}
		var b bytes.Buffer
		b.WriteString(`{"result":[`)
		for i, v := range recs {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(v)
		}
		b.WriteByte(']')
		if cursor != "" {
			b.WriteString(`,"next_cursor":`)
			q, _ := jsontext.AppendQuote(nil, cursor)
			b.Write(q)
		}
		b.WriteString("}\n")
		w.Header().Set("Content-Type", "application/json")
		w.Write(b.Bytes())
	})
}

// NewUnbudgetedServer is NewServer with the host behind Unbudgeted.
func NewUnbudgetedServer(t testing.TB, opts *adphost.Options) (*adphost.Host, *httptest.Server) {
	t.Helper()
	h, srv, err := NewUnstarted(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = Unbudgeted(h)
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	return h, srv
}
