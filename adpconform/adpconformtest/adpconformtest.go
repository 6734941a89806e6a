// Package adpconformtest runs the ADP conformance suite ([adpconform]) inside
// go test, so that a Go host team checks its host with every test run.
//
//	func TestConformance(t *testing.T) {
//		srv := httptest.NewServer(myHost) // the host's origin is srv.URL
//		adpconformtest.Run(t, srv.URL, &adpconformtest.Options{
//			Options: adpconform.Options{AllowLoopbackHTTP: true, HTTPClient: srv.Client()},
//		})
//	}
//
// Each check becomes a subtest named by its ID: a failed MUST check fails the
// test, a failed SHOULD check and every reading are logged, a skipped check
// is skipped. It lives apart from adpconform so that the kit and its command
// do not link package testing.
package adpconformtest

import (
	"context"
	"strings"
	"testing"

	"github.com/agentprotocols/go-sdk/adpconform"
)

// Options configures Run. A nil *Options means defaults.
type Options struct {
	adpconform.Options
	// Known names checks the host is known to fail, each with the reason
	// (an issue, a bug). A known failure is logged instead of failing the
	// test, and a known failure that passes fails the test, so that the
	// expectation is removed as soon as the host is fixed.
	Known map[string]string
}

// Run runs the suite against target and reports every check as a subtest.
// It returns the report for further assertions.
func Run(t *testing.T, target string, opts *Options) *adpconform.Report {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	rep, err := adpconform.Run(context.Background(), target, &o.Options)
	if err != nil {
		t.Fatalf("adpconform: %v", err)
	}
	for _, res := range rep.Results {
		t.Run(res.ID, func(t *testing.T) {
			for _, in := range res.Info {
				t.Logf("info: %s", in)
			}
			why, known := o.Known[res.ID]
			switch {
			case res.Verdict == adpconform.Skip:
				t.Skipf("skipped: %s", res.Evidence)
			case res.Verdict == adpconform.Fail && known:
				t.Logf("KNOWN FAILURE (%s): %s", why, res.Evidence)
			case known:
				t.Errorf("%s passes now; remove it from Known (%s)", res.ID, why)
			case res.Verdict == adpconform.Fail && res.Level == adpconform.MUST:
				t.Errorf("%s %s (%s): %s\n  evidence: %s", res.Level, res.ID, res.Section, res.Title, res.Evidence)
			case res.Verdict == adpconform.Fail:
				t.Logf("SHOULD failed (%s): %s", res.Section, res.Evidence)
			}
		})
	}
	if t.Failed() || testing.Verbose() {
		var b strings.Builder
		rep.WriteTable(&b, false)
		t.Logf("\n%s", b.String())
	}
	return rep
}
