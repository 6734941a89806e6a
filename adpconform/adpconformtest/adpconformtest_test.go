package adpconformtest_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentprotocols/go-sdk/adpconform"
	"github.com/agentprotocols/go-sdk/adpconform/adpconformtest"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/identity"
)

// envMode selects what TestRunHelper expects to be known.
const envMode = "ADPCONFORMTEST_MODE"

// TestRunHelper runs two checks against a host without Max-Seen-Nonce,
// with the Known map its parent chose; on its own it does nothing.
func TestRunHelper(t *testing.T) {
	mode := os.Getenv(envMode)
	if mode == "" {
		t.Skip("run by TestRun")
	}
	h, srv, err := adphosttest.NewUnstarted(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			if k != identity.MaxSeenNonceHeader {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
	srv.Start()
	defer srv.Close()
	defer h.Close()
	known := map[string]string{}
	switch mode {
	case "known":
		known["envelope.nonce"] = "a test"
	case "stale":
		known["envelope.nonce"] = "a test"
		known["envelope.hash"] = "fixed long ago"
	}
	adpconformtest.Run(t, srv.URL, &adpconformtest.Options{
		Options: adpconform.Options{AllowLoopbackHTTP: true, Only: []string{"envelope.nonce", "envelope.hash"}},
		Known:   known,
	})
}

// TestRun: a failed MUST check fails the test, a known failure does not,
// and a known failure that passes does.
func TestRun(t *testing.T) {
	for _, c := range []struct {
		mode string
		ok   bool
		want string
	}{
		{"none", false, "MUST envelope.nonce"},
		{"known", true, "KNOWN FAILURE (a test)"},
		{"stale", false, "envelope.hash passes now; remove it from Known"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestRunHelper$", "-test.v")
			cmd.Env = append(os.Environ(), envMode+"="+c.mode)
			out, err := cmd.CombinedOutput()
			if (err == nil) != c.ok || !strings.Contains(string(out), c.want) {
				t.Fatalf("mode %s: err %v, want ok=%v and %q in:\n%s", c.mode, err, c.ok, c.want, out)
			}
		})
	}
}

// TestConformanceExample runs the test that ExampleRun and README.md show.
func TestConformanceExample(t *testing.T) { conformance(t) }
