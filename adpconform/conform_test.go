package adpconform_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adpconform"
	"github.com/agentprotocols/go-sdk/adpconform/adpconformtest"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// known are the checks the SDK's own host fails today, each with the
// issue fixing it. adpconformtest fails the test as soon as one of them
// passes, so that the entry is removed with the fix.
var known = map[string]string{}

func conform(t *testing.T, srv *httptest.Server) *adpconform.Report {
	return adpconformtest.Run(t, srv.URL, &adpconformtest.Options{
		Options: adpconform.Options{AllowLoopbackHTTP: true, HTTPClient: srv.Client()},
		Known:   known,
	})
}

// TestMemoryStore runs the suite against adphost on its memory store. The
// bbolt store is run by cmd/adphost's tests (the command with --data, as
// a process), since the layering keeps adpconform beside adphost's stores.
func TestMemoryStore(t *testing.T) {
	t.Parallel()
	_, srv := adphosttest.NewServer(t, nil)
	conform(t, srv)
}

// wrapped starts adphost behind wrap: a deliberately broken host.
func wrapped(t *testing.T, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	h, srv, err := adphosttest.NewUnstarted(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = wrap(h)
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	return srv
}

// record runs next into a recorder and returns it.
func record(next http.Handler, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, r)
	return rec
}

// replay writes rec to w with body instead of its own.
func replay(w http.ResponseWriter, rec *httptest.ResponseRecorder, body []byte) {
	for k, v := range rec.Header() {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(rec.Code)
	w.Write(body)
}

// bodyOf reads and restores a request body.
func bodyOf(r *http.Request) []byte {
	var b bytes.Buffer
	b.ReadFrom(r.Body)
	r.Body = http.NoBody
	if b.Len() > 0 {
		r.Body = readCloser{bytes.NewReader(b.Bytes())}
	}
	return b.Bytes()
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// acceptsForgedSignature answers success to any envelope whose signature
// does not verify, as a host that skips the check would.
func acceptsForgedSignature(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/rooms") && !strings.HasSuffix(r.URL.Path, "/join-requests") {
			b := bodyOf(r)
			if _, err := envelope.Verify(b); err != nil && strings.Contains(err.Error(), string(identity.CodeInvalidSignature)) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"id":"forgedforgedforgedfo","status":"active","seq":1}`))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// dropsMaxSeenNonce strips the Max-Seen-Nonce header from every answer.
func dropsMaxSeenNonce(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		rec := record(next, r)
		rec.Header().Del(identity.MaxSeenNonceHeader)
		replay(w, rec, rec.Body.Bytes())
	})
}

// replaysHistory sends the room's whole history at the start of every
// live stream.
func replaysHistory(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		room, ok := strings.CutSuffix(r.URL.Path, "/events/live")
		if !ok || r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		hr := r.Clone(r.Context())
		hr.URL.Path, hr.URL.RawQuery = room+"/events", "after_seq=0"
		hr.Header.Del("Accept")
		var list struct {
			Result []jsontext.Value `json:"result"`
		}
		rec := record(next, hr)
		json.Unmarshal(rec.Body.Bytes(), &list)
		var frames []byte
		for _, v := range list.Result {
			frames = append(frames, "event: room.event\ndata: "...)
			frames = append(append(frames, v...), "\n\n"...)
		}
		next.ServeHTTP(&prefixWriter{ResponseWriter: w, prefix: frames}, r)
	})
}

// prefixWriter writes prefix right after a 200 status line.
type prefixWriter struct {
	http.ResponseWriter
	prefix []byte
	wrote  bool
}

func (p *prefixWriter) WriteHeader(code int) {
	if p.wrote {
		return
	}
	p.wrote = true
	p.ResponseWriter.WriteHeader(code)
	if code == http.StatusOK {
		p.ResponseWriter.Write(p.prefix)
		http.NewResponseController(p.ResponseWriter).Flush()
	}
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return p.ResponseWriter.Write(b)
}

func (p *prefixWriter) Flush() {
	p.WriteHeader(http.StatusOK)
	http.NewResponseController(p.ResponseWriter).Flush()
}

func (p *prefixWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// rooms remembers rooms by what their room.create said.
type rooms struct {
	mu   sync.Mutex
	list []created
}

type created struct {
	id, topic string
	creator   identity.AgentID
	p         adp.RoomCreate
}

// sniff records the rooms created through next.
func (rs *rooms) sniff(next http.Handler, w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/rooms" {
		return false
	}
	b := bodyOf(r)
	rec := record(next, r)
	replay(w, rec, rec.Body.Bytes())
	env, err := envelope.Parse(b)
	var ans struct {
		ID string `json:"id"`
	}
	if err != nil || rec.Code != http.StatusOK && rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &ans, json.RejectUnknownMembers(false)) != nil {
		return true
	}
	var p adp.RoomCreate
	if json.Unmarshal(env.Event().Payload, &p) == nil {
		rs.mu.Lock()
		rs.list = append(rs.list, created{id: ans.ID, topic: p.Topic, creator: env.Actor(), p: p})
		rs.mu.Unlock()
	}
	return true
}

func (rs *rooms) find(f func(created) bool) []created {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []created
	for _, c := range rs.list {
		if f(c) {
			out = append(out, c)
		}
	}
	return out
}

// leaksPrivateRooms lists private rooms in an unfiltered GET
// /v1/rooms/public, as a host that forgets the visibility filter would.
func leaksPrivateRooms(next http.Handler) http.Handler {
	var rs rooms
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rs.sniff(next, w, r) {
			return
		}
		if r.URL.Path != "/v1/rooms/public" || r.URL.Query().Get("cursor") != "" || r.URL.Query().Get("status") != "" {
			next.ServeHTTP(w, r)
			return
		}
		rec := record(next, r)
		var list map[string]jsontext.Value
		var result []jsontext.Value
		if json.Unmarshal(rec.Body.Bytes(), &list) != nil || json.Unmarshal(list["result"], &result) != nil {
			replay(w, rec, rec.Body.Bytes())
			return
		}
		for _, c := range rs.find(func(c created) bool { return c.p.Visibility == adp.VisibilityPrivate }) {
			s, _ := json.Marshal(adp.RoomSummary{ID: c.id, Status: adp.StatusActive, URL: "http://" + r.Host + "/v1/rooms/" + c.id,
				Creator: c.creator, Topic: c.topic, Visibility: adp.VisibilityPrivate, StartTime: c.p.StartTime, EndTime: c.p.EndTime, Seq: 1, Members: 1})
			result = append(result, s)
		}
		list["result"], _ = json.Marshal(result)
		b, _ := json.Marshal(list, json.Deterministic(true))
		replay(w, rec, b)
	})
}

// breaksTheChain serves one room's history with a record whose pre_hash
// does not link (its record hash recomputed, so only the chain is wrong).
func breaksTheChain(next http.Handler) http.Handler {
	var rs rooms
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rs.sniff(next, w, r) {
			return
		}
		room, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/v1/rooms/"), "/events")
		if !ok || r.Method != http.MethodGet || len(rs.find(func(c created) bool { return c.id == room && strings.HasSuffix(c.topic, " chain") })) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		rec := record(next, r)
		var list map[string]jsontext.Value
		var result []jsontext.Value
		if json.Unmarshal(rec.Body.Bytes(), &list) != nil || json.Unmarshal(list["result"], &result) != nil {
			replay(w, rec, rec.Body.Bytes())
			return
		}
		for i, v := range result {
			if rec, err := adp.ParseRecord(v); err == nil && rec.Seq == 4 {
				c := *rec
				c.PreHash = envelope.Sum([]byte("broken"))
				c.Hash = c.ComputeHash()
				result[i] = c.AppendJSON(nil)
			}
		}
		list["result"], _ = json.Marshal(result)
		b, _ := json.Marshal(list, json.Deterministic(true))
		replay(w, rec, b)
	})
}

// scriptsInMarkdown appends raw HTML to every Markdown archive, as a host
// that renders payloads verbatim would.
func scriptsInMarkdown(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/archive.md") {
			next.ServeHTTP(w, r)
			return
		}
		rec := record(next, r)
		replay(w, rec, append(rec.Body.Bytes(), "\n<script>alert('adpconform')</script>\n"...))
	})
}

// TestBrokenHosts: each deliberately broken host fails exactly the check
// named for its defect (besides the known failures of the SDK's host).
func TestBrokenHosts(t *testing.T) {
	cases := []struct {
		name string
		wrap func(http.Handler) http.Handler
		want string
	}{
		{"renders payload scripts in Markdown", scriptsInMarkdown, "archive.markdown"},
		{"accepts a forged signature", acceptsForgedSignature, "envelope.signature"},
		{"drops Max-Seen-Nonce", dropsMaxSeenNonce, "envelope.nonce"},
		{"replays history on the live stream", replaysHistory, "live.no-replay"},
		{"leaks a private room", leaksPrivateRooms, "privacy.private"},
		{"breaks the chain", breaksTheChain, "chain"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := wrapped(t, c.wrap)
			// Six full runs in parallel (under -race in CI): a check's
			// time bound is not what these hosts break, so it is generous.
			rep, err := adpconform.Run(context.Background(), srv.URL, &adpconform.Options{AllowLoopbackHTTP: true, HTTPClient: srv.Client(), Timeout: 2 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, id := range rep.Failed() {
				if _, ok := known[id]; !ok {
					got = append(got, id)
				}
			}
			if !slices.Equal(got, []string{c.want}) {
				var b strings.Builder
				rep.WriteTable(&b, false)
				t.Fatalf("failed %v, want exactly [%s]\n%s", got, c.want, b.String())
			}
			if res := rep.Result(c.want); res.Level == adpconform.MUST && rep.OK {
				t.Fatalf("the report says the host conforms with a failed MUST check")
			}
			t.Logf("%s: %s", c.want, rep.Result(c.want).Evidence)
		})
	}
}

// TestHangingHost: a host that never answers costs each check its
// timeout, and the suite still ends with a verdict.
func TestHangingHost(t *testing.T) {
	t.Parallel()
	srv := wrapped(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == adp.DiscoveryPath {
				w.WriteHeader(http.StatusOK)
				w.Write([]byte(`{"protocol":`))
				http.NewResponseController(w).Flush()
				<-r.Context().Done()
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	start := time.Now()
	rep, err := adpconform.Run(context.Background(), srv.URL, &adpconform.Options{AllowLoopbackHTTP: true, HTTPClient: srv.Client(),
		Only: []string{"discovery"}, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the suite took %s against a hanging host", d)
	}
	if res := rep.Result("discovery"); res.Verdict != adpconform.Fail || !strings.Contains(res.Evidence, "deadline") && !strings.Contains(res.Evidence, "timeout") {
		t.Fatalf("discovery: %s %q", res.Verdict, res.Evidence)
	}
}

// TestReportOK: a failed SHOULD check is reported but leaves the suite
// passing; a failed MUST check does not.
func TestReportOK(t *testing.T) {
	t.Parallel()
	run := func(wrap func(http.Handler) http.Handler, only ...string) *adpconform.Report {
		srv := wrapped(t, wrap)
		rep, err := adpconform.Run(context.Background(), srv.URL, &adpconform.Options{AllowLoopbackHTTP: true, HTTPClient: srv.Client(), Only: only})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := run(scriptsInMarkdown, "archive.markdown", "envelope.hash"); !rep.OK || !slices.Equal(rep.Failed(), []string{"archive.markdown"}) {
		t.Fatalf("OK %v, failed %v", rep.OK, rep.Failed())
	}
	if rep := run(dropsMaxSeenNonce, "envelope.nonce", "archive.markdown"); rep.OK {
		t.Fatalf("OK with a failed MUST check (%v)", rep.Failed())
	}
}

// TestModerator: with Options.Moderator every room is the moderator's,
// and the suite still judges the host the same way (here a host without
// quotas, since one agent then makes every room).
func TestModerator(t *testing.T) {
	t.Parallel()
	_, srv := adphosttest.NewServer(t, &adphost.Options{RateLimits: adphost.Unlimited()})
	mod, err := identity.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := adpconform.Run(context.Background(), srv.URL, &adpconform.Options{AllowLoopbackHTTP: true, HTTPClient: srv.Client(), Moderator: mod})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, id := range rep.Failed() {
		if _, ok := known[id]; !ok {
			got = append(got, id)
		}
	}
	if !slices.Equal(got, []string{"quota"}) {
		var b strings.Builder
		rep.WriteTable(&b, false)
		t.Fatalf("failed %v, want only quota (the host has none)\n%s", got, b.String())
	}
}

// TestEndTime: on a host without a minimum room duration the automatic
// end at end_time is checked (the default host's 10-minute minimum skips
// it).
func TestEndTime(t *testing.T) {
	t.Parallel()
	_, srv := adphosttest.NewServer(t, &adphost.Options{MinRoomDuration: -1})
	rep, err := adpconform.Run(context.Background(), srv.URL, &adpconform.Options{AllowLoopbackHTTP: true, HTTPClient: srv.Client(), Only: []string{"state.end-time"}})
	if err != nil {
		t.Fatal(err)
	}
	if res := rep.Result("state.end-time"); res.Verdict != adpconform.Pass {
		t.Fatalf("state.end-time: %s %s", res.Verdict, res.Evidence)
	}
}

// TestRedirectsElsewhere: a host that redirects the suite's own requests
// (raw envelopes, live streams) to another origin gets nothing sent
// there — no signed body, no request JWT — and fails the checks that met
// the redirects.
func TestRedirectsElsewhere(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	victim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer victim.Close()
	srv := wrapped(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Method == http.MethodPost && r.Header.Get("Accept") == "": // the suite's raw envelopes
				http.Redirect(w, r, victim.URL+"/internal/admin", http.StatusTemporaryRedirect)
			case strings.HasSuffix(r.URL.Path, "/events/live"):
				http.Redirect(w, r, victim.URL+r.URL.Path, http.StatusFound)
			default:
				next.ServeHTTP(w, r)
			}
		})
	})
	rep, err := adpconform.Run(context.Background(), srv.URL, &adpconform.Options{AllowLoopbackHTTP: true, HTTPClient: srv.Client(),
		Only: []string{"envelope.hash", "live.auth", "live.follow"}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) > 0 {
		t.Fatalf("the suite sent %d requests to another origin: %v", len(got), got)
	}
	for _, id := range []string{"envelope.hash", "live.auth", "live.follow"} {
		if res := rep.Result(id); res.Verdict != adpconform.Fail {
			t.Errorf("%s: %s %q", id, res.Verdict, res.Evidence)
		}
	}
}

// TestFatListPages: a host that answers the suite's join-request listings
// with 30 MiB pages and fresh cursors (each within the 32 MiB response
// bound) is stopped at the suite's listing budget, 8 MiB: every listing
// reads one page, and the checks that list fail.
func TestFatListPages(t *testing.T) {
	t.Parallel()
	reason := strings.Repeat("r", 30<<20)
	applicant, err := identity.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	var pages atomic.Int64
	srv := wrapped(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			room, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/v1/rooms/"), "/join-requests")
			if r.Method != http.MethodGet || !ok {
				next.ServeHTTP(w, r)
				return
			}
			n := pages.Add(1)
			w.Header().Set("Content-Type", "application/json")
			for _, s := range []string{`{"result":[{"request":{"id":"jr_1","room_id":"`, room, `","applicant":"`,
				applicant.AgentID().String(), `","role":"speaker","reason":"`, reason,
				`","created_at":1,"expires_at":2},"status":"pending","reviewed_by":null}],"next_cursor":"c`, strconv.FormatInt(n, 10), `"}`} {
				io.WriteString(w, s)
			}
		})
	})
	checks := []string{"join.restricted", "join.private"}
	rep, err := adpconform.Run(context.Background(), srv.URL, &adpconform.Options{AllowLoopbackHTTP: true, HTTPClient: srv.Client(),
		Only: checks, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// Two listings a check: the applicant's and the creator's.
	if n := pages.Load(); n > 4 {
		t.Fatalf("the suite read %d pages of 30 MiB, want one a listing (4)", n)
	}
	for _, id := range checks {
		if res := rep.Result(id); res.Verdict != adpconform.Fail || !strings.Contains(res.Evidence, "bytes") {
			t.Errorf("%s: %s %q", id, res.Verdict, res.Evidence)
		}
	}
}

// TestLaterDraftHost: the SDK's host serving the 2026-09-24 draft passes
// that draft's suite, the draft taken from its discovery document.
func TestLaterDraftHost(t *testing.T) {
	_, srv := adphosttest.NewServer(t, &adphost.Options{Draft: adp.Draft20260924})
	rep, err := adpconform.Run(t.Context(), srv.URL, &adpconform.Options{AllowLoopbackHTTP: true, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Draft != adpconform.DraftLater {
		t.Fatalf("the report checks %q", rep.Draft)
	}
	for _, r := range rep.Results {
		if r.Verdict != adpconform.Pass {
			t.Errorf("%s %s: %s: %s", r.Label(), r.ID, r.Verdict, r.Evidence)
		}
	}
	if !rep.OK || len(rep.Results) != len(adpconform.ChecksFor(adp.Draft20260924)) {
		t.Fatalf("ok %v, %d results", rep.OK, len(rep.Results))
	}
}
