package packs

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/internal/fixtures"
)

var triagePack = string(fixtures.TriagePack)

// brokenPack is well-formed JSON whose type name is reserved.
const brokenPack = `{"protocol":"agent-discourse/1.0","packs":[{"id":"x","title":"x","types":[{"type":"room.bad","kind":"signal","title":"t","schema":{}}]}]}`

// packServer serves the triage pack at /triage.json plus misbehaving routes.
func packServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/triage.json", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(triagePack))
	})
	mux.HandleFunc("/missing.json", http.NotFound)
	mux.HandleFunc("/to-http", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+r.Host+"/triage.json", http.StatusFound)
	})
	mux.HandleFunc("/to-https", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/triage.json", http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/huge.json", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat(" ", DefaultMaxPackBytes) + triagePack)) // no Content-Length: chunked
	})
	mux.HandleFunc("/slow.json", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("/broken.json", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(brokenPack))
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted-certificate case logs a handshake error
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, &hits
}

func importDecl(t *testing.T, uri, digest string) Declaration {
	return mustDecl(t, `{"pack":"`+uri+`","digest":"`+digest+`"}`)
}

func TestExternalPack(t *testing.T) {
	srv, hits := packServer(t)
	ctx := context.Background()
	f := &HTTPSFetcher{Client: srv.Client()}
	uri := srv.URL + "/triage.json"
	digest := Digest([]byte(triagePack))

	r := NewRegistry(&Options{Fetcher: f})
	if err := r.Declare(ctx, 1, mustDecl(t, `{"pack":"`+uri+`","digest":"`+digest+`","types":["triage.label"],"overrides":{"triage.label":{"roles":["observer"]}}}`)); err != nil {
		t.Fatal(err)
	}
	if d := r.Lookup("triage.label"); d == nil || d.Kind != KindSignal || !d.Allows(RoleObserver) || d.Allows(RoleSpeaker) || r.Lookup("triage.assign") != nil {
		t.Fatalf("materialized %+v", r.Definitions())
	}
	if err := r.Validate("triage.label", []byte(`{"label":"bug"}`)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, r.Validate("triage.label", []byte(`{"label":"feature"}`)), CodePayloadSchemaViolation)
	docs := r.Documents()
	if len(docs) != 1 || docs[0].Pack != uri || docs[0].Digest != digest || string(docs[0].Raw) != triagePack {
		t.Fatalf("documents %+v", docs)
	}
	// A second import of the same digest reuses the kept document.
	if err := r.Declare(ctx, 2, importDecl(t, uri, digest)); err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 1 || len(r.Documents()) != 1 || r.Lookup("triage.assign") == nil {
		t.Fatalf("hits %d, documents %d", hits.Load(), len(r.Documents()))
	}

	// Offline: the archived documents replay the room without the network.
	offline := NewRegistry(&Options{Fetcher: StaticFetcher(r.Documents())})
	if err := offline.Declare(ctx, 1, importDecl(t, uri, digest)); err != nil {
		t.Fatal(err)
	}
	if offline.Lookup("triage.assign") == nil || hits.Load() != 1 {
		t.Fatal("static fetcher")
	}
	// The digest pins the content: an import naming another URI for the
	// same document is served, a wrong digest is not.
	mirror := NewRegistry(&Options{Fetcher: StaticFetcher(r.Documents())})
	if err := mirror.Declare(ctx, 1, importDecl(t, "https://mirror.example/t.json", digest)); err != nil {
		t.Fatalf("same digest under another URI: %v", err)
	}
	wantCode(t, mirror.Declare(ctx, 2, importDecl(t, uri, Digest([]byte(triagePack+" ")))), CodePackUnavailable)
	if _, err := (StaticFetcher{{Pack: uri, Digest: digest, Raw: []byte("tampered")}}).Fetch(ctx, uri, digest); !errors.Is(err, ErrPackUnavailable) {
		t.Fatalf("tampered static document: %v", err)
	}
	// Snapshots carry the documents, base64url-encoded so the bytes survive.
	b := snapshotJSON(t, r)
	var s Snapshot
	if err := json.Unmarshal([]byte(b), &s); err != nil {
		t.Fatal(err)
	}
	r2, err := Restore(s, nil)
	if err != nil || string(r2.Documents()[0].Raw) != triagePack || snapshotJSON(t, r2) != b {
		t.Fatalf("restore: %v", err)
	}
	// …and a restored registry resolves the same import with no fetcher.
	if err := r2.Declare(ctx, 3, importDecl(t, uri, digest)); err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(b, `"document":"`, `"document":"IA`, 1)
	if err := json.Unmarshal([]byte(tampered), &s); err == nil {
		t.Fatal("tampered document accepted")
	}
}

func TestExternalPackUnavailable(t *testing.T) {
	srv, _ := packServer(t)
	digest := Digest([]byte(triagePack))
	other := Digest([]byte("something else"))
	fetcher := &HTTPSFetcher{Client: srv.Client()}
	cases := []struct {
		name, path, digest string
		fetcher            Fetcher
	}{
		{"digest mismatch", "/triage.json", other, fetcher},
		{"HTTP 404", "/missing.json", digest, fetcher},
		{"redirect to http", "/to-http", digest, fetcher},
		{"redirect loop", "/loop", digest, fetcher},
		{"oversized", "/huge.json", digest, fetcher},
		{"small MaxBytes", "/triage.json", digest, &HTTPSFetcher{Client: srv.Client(), MaxBytes: 100}},
		{"timeout", "/slow.json", digest, &HTTPSFetcher{Client: srv.Client(), Timeout: 50 * time.Millisecond}},
		{"untrusted certificate", "/triage.json", digest, &HTTPSFetcher{}},
		{"no fetcher", "/triage.json", digest, nil},
		{"static fetcher without it", "/triage.json", digest, StaticFetcher{}},
		{"unsupported digest algorithm", "/triage.json", "sha3-256:" + strings.TrimPrefix(digest, "sha256:"), fetcher},
		{"malformed digest", "/triage.json", "sha256:abc", fetcher},
		{"invalid pack document", "/broken.json", Digest([]byte(brokenPack)), fetcher},
		{"lying fetcher", "/triage.json", digest, fetcherFunc(func(context.Context, string, string) ([]byte, error) { return []byte("{}"), nil })},
		{"failing fetcher", "/triage.json", digest, fetcherFunc(func(context.Context, string, string) ([]byte, error) { return nil, errors.New("boom") })},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewRegistry(&Options{Fetcher: c.fetcher})
			err := r.Declare(context.Background(), 1, importDecl(t, srv.URL+c.path, c.digest))
			wantCode(t, err, CodePackUnavailable)
			if r.Len() != 0 || len(r.Documents()) != 0 {
				t.Fatal("applied anyway")
			}
		})
	}
	// The fetcher itself refuses non-https URLs before any request.
	for _, u := range []string{"http://p.example/x.json", "file:///etc/passwd", "https://user:pw@p.example/x.json", "https:///x.json"} {
		_, err := fetcher.Fetch(context.Background(), u, digest)
		wantCode(t, err, CodePackUnavailable)
	}
	// A redirect that stays https is followed.
	if _, err := fetcher.Fetch(context.Background(), srv.URL+"/to-https", digest); err != nil {
		t.Fatal(err)
	}
	// A cancelled context stops the fetch.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := fetcher.Fetch(ctx, srv.URL+"/triage.json", digest)
	wantCode(t, err, CodePackUnavailable)
}

type fetcherFunc func(ctx context.Context, uri, digest string) ([]byte, error)

func (f fetcherFunc) Fetch(ctx context.Context, uri, digest string) ([]byte, error) {
	return f(ctx, uri, digest)
}

func TestDigest(t *testing.T) {
	// RFC 6234 test: SHA-256("abc").
	if got := Digest([]byte("abc")); got != "sha256:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0" {
		t.Fatal(got)
	}
	if err := VerifyDigest([]byte("abc"), Digest([]byte("abc"))); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"", "sha256:", "SHA256:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0",
		"sha256:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0=", "sha256:ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0",
		"sha256:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa1"} {
		wantCode(t, VerifyDigest([]byte("abc"), d), CodePackUnavailable)
	}
}
