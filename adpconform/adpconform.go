package adpconform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/untrusted"
)

// Draft is the ADP text the suite checks by default: the 2026-07-04 draft
// of Agent Discourse 1.0.
const Draft = "agent-discourse/1.0 draft 2026-07-04"

// DraftLater is the 2026-09-24 draft of Agent Discourse 1.0, which the
// suite checks against a host that serves it (Options.Draft, or the
// host's discovery document).
const DraftLater = "agent-discourse/1.0 draft 2026-09-24"

// draftName is the Report.Draft of d.
func draftName(d adp.Draft) string {
	if d.OrDefault() == adp.Draft20260924 {
		return DraftLater
	}
	return Draft
}

// Level says how a check's verdict counts.
type Level string

// The levels of a check.
const (
	// MUST checks test what the text requires; the suite passes only when
	// none of them failed (a skip says why it could not run).
	MUST Level = "MUST"
	// SHOULD checks test a recommendation (the §24 "推荐实现" list and the
	// SHOULDs of the sections); a failure is reported but does not fail
	// the suite.
	SHOULD Level = "SHOULD"
)

// Verdict is the outcome of one check.
type Verdict string

// The verdicts of a check.
const (
	Pass Verdict = "pass"
	Fail Verdict = "fail"
	// Skip means the check could not run: the host does not offer the
	// feature (a MAY), or the check was not selected. Reason says which.
	Skip Verdict = "skip"
)

// Check is one conformance check: what it tests and where the text says so.
type Check struct {
	// ID names the check, "area.rule" (for example
	// "envelope.signature"); it is stable across versions of the kit.
	ID string `json:"id"`
	// Item is the §24 checklist item (1–11) the check belongs to, 0 for
	// a recommendation outside the MUST list.
	Item int `json:"item"`
	// Section is where the rule is written, for example "§6, §20".
	Section string `json:"section"`
	// Level is MUST or SHOULD.
	Level Level `json:"level"`
	// Title says in one line what a conforming host does.
	Title string `json:"title"`

	run func(context.Context, *T)
	// later marks a check of the 2026-09-24 draft, whose checklist is §22.
	later bool
}

// Label names the check's place in the conformance checklist (§24 of the
// seed, §22 of the 2026-09-24 draft): "§24.N" or "§22.N" for checklist
// item N, "rec." for one of the recommendations, "—" for a MUST of its
// section that the list does not name (privacy, a MUST of an optional
// feature).
func (c Check) Label() string {
	switch {
	case c.Item > 0 && c.later:
		return fmt.Sprintf("§22.%d", c.Item)
	case c.Item > 0:
		return fmt.Sprintf("§24.%d", c.Item)
	case c.Level == MUST:
		return "—"
	}
	return "rec."
}

// Result is the verdict of one check.
type Result struct {
	Check   `json:",inline"`
	Verdict Verdict `json:"verdict"`
	// Evidence is what the host did wrong (Fail) or why the check did not
	// run (Skip).
	Evidence string `json:"evidence,omitzero"`
	// Info holds readings: what the host answered where the text fixes
	// nothing (HTTP statuses, room_not_found where §20 also allows
	// membership_required, the limits it chose). They never fail a check.
	Info []string `json:"info,omitzero"`
	// Millis is how long the check ran.
	Millis int64 `json:"millis"`
}

// Report is the outcome of a run.
type Report struct {
	// Draft is the text checked (the constant Draft or DraftLater).
	Draft string `json:"draft"`
	// Target is the host API origin the suite ran against.
	Target string `json:"target"`
	// Started is when the run began (Unix milliseconds).
	Started int64 `json:"started"`
	// Millis is the run's duration.
	Millis int64 `json:"millis"`
	// Results holds one result per check, in the order of Checks.
	Results []Result `json:"results"`
	// OK is true when no MUST check failed. A skipped check (a feature
	// the host does not offer, a limit that makes it untestable, or not
	// selected) says why in its evidence and does not count.
	OK bool `json:"ok"`
}

// Failed returns the IDs of the checks that failed, MUST and SHOULD.
func (r *Report) Failed() []string {
	var ids []string
	for _, res := range r.Results {
		if res.Verdict == Fail {
			ids = append(ids, res.ID)
		}
	}
	return ids
}

// Result returns the result of the check named id, or nil.
func (r *Report) Result(id string) *Result {
	for i := range r.Results {
		if r.Results[i].ID == id {
			return &r.Results[i]
		}
	}
	return nil
}

// WriteTable writes the report as a table a person reads: the §24 item
// ("rec." for a recommendation, "—" for a MUST of its section that the §24
// list does not name, such as privacy or a MUST of an optional feature), section,
// level, check, verdict and, on failure or skip, the evidence; with info
// set, the readings follow on "info" lines. Host-provided text is quoted,
// so control characters in it cannot reach the terminal.
func (r *Report) WriteTable(w io.Writer, info bool) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "ITEM\tSECTION\tLEVEL\tCHECK\tVERDICT\tEVIDENCE\n")
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", res.Label(), res.Section, res.Level, res.ID, res.Verdict, safe(res.Evidence))
		for _, in := range res.Info {
			if !info {
				break
			}
			fmt.Fprintf(tw, "\t\t\t\tinfo\t%s\n", safe(in))
		}
	}
	must, passed, fails, skips := 0, 0, 0, 0
	for _, res := range r.Results {
		if res.Level == MUST {
			must++
			if res.Verdict == Pass {
				passed++
			}
		}
		switch res.Verdict {
		case Fail:
			fails++
		case Skip:
			skips++
		}
	}
	verdict := "CONFORMS"
	if !r.OK {
		verdict = "DOES NOT CONFORM"
	}
	fmt.Fprintf(tw, "\n%s: %d/%d MUST checks passed, %d failed, %d skipped (%d checks, %.1f s) against %s (%s)\n",
		verdict, passed, must, fails, skips, len(r.Results), float64(r.Millis)/1000, safe(r.Target), r.Draft)
	return tw.Flush()
}

// safe makes host-provided text one bounded, escaped terminal line.
func safe(s string) string { return untrusted.Line(s, 400) }

// Options configures a run. A nil *Options means defaults.
type Options struct {
	// HTTPClient sends every request; nil means a client with the default
	// transport. The suite uses a copy that follows redirects only within
	// the target's origin (a redirect elsewhere fails the check that met
	// it); the caller's value is not modified.
	HTTPClient *http.Client
	// AllowLoopbackHTTP accepts an http://127.0.0.1, [::1] or localhost
	// target, for development hosts and tests.
	AllowLoopbackHTTP bool
	// Moderator, when set, is an agent the host trusts: every room the
	// suite makes is created by it, for hosts that let only some agents
	// create rooms. The suite makes about 40 rooms, and the creator writes
	// in each, so the host's quotas for this agent must allow that many
	// per minute. The checks then run one at a time (Parallel is 1): an
	// agent's concurrent writes could reach the host out of nonce order,
	// and the later nonce would refuse the earlier one. nil means every
	// room has a fresh creator, which keeps the suite inside the §21
	// default quotas of any host.
	Moderator identity.Signer
	// Only selects the checks to run: a check runs when its ID equals an
	// entry or starts with an entry followed by "."; empty runs all.
	Only []string
	// Parallel is how many checks run at once; 0 means 8.
	Parallel int
	// Timeout bounds one check; 0 means 40 s.
	Timeout time.Duration
	// ActivationSlack is how long past a room's start_time the suite waits
	// for the host's scheduler to activate it (§8 "受本地时钟和调度器保证约束");
	// 0 means 5 s.
	ActivationSlack time.Duration
	// Now is the clock for created_at, nonces and tokens; nil means
	// time.Now. The host's clock must agree with it within the live-write
	// window.
	Now func() time.Time
	// Draft is the ADP draft the host is checked against; the zero Draft
	// takes it from the host's discovery document: the 2026-09-24 draft
	// for an Agent Identity document (a service member and no host
	// member), the seed's otherwise, and the seed's when there is none.
	Draft adp.Draft
}

// Checks returns every check of the seed draft's suite, in the order Run
// reports them: by §24 item, then the recommendations.
func Checks() []Check { return slices.Clone(checks) }

// ChecksFor returns every check of draft d's suite, in report order: the
// 2026-09-24 draft's by §22 item (a few checks per item, for items 1–3
// and 5–11, message.create's acceptance for item 4, and the discovery
// recommendations), the seed's as Checks.
func ChecksFor(d adp.Draft) []Check {
	if d.OrDefault() == adp.Draft20260924 {
		return slices.Clone(laterSuite())
	}
	return Checks()
}

// suiteFor is the checks of d in report order.
func suiteFor(d adp.Draft) []Check {
	if d.OrDefault() == adp.Draft20260924 {
		return laterSuite()
	}
	return checks
}

// laterSuite is the 2026-09-24 draft's checks (laterChecks, in report
// order), marked as that draft's.
var laterSuite = sync.OnceValue(func() []Check {
	s := slices.Clone(laterChecks)
	for i := range s {
		s[i].later = true
	}
	return s
})

// Run runs the suite against the ADP host whose API origin is target
// (https://host.example, or a loopback http origin with
// Options.AllowLoopbackHTTP). It talks to the host over HTTP only, as fresh
// agents it makes itself, in rooms it creates. The error is non-nil only
// when the suite could not run at all (a malformed target); a host that
// fails is a Report with OK false.
func Run(ctx context.Context, target string, opts *Options) (*Report, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case o.Moderator != nil:
		o.Parallel = 1
	case o.Parallel <= 0:
		o.Parallel = 8
	}
	if o.Timeout <= 0 {
		o.Timeout = 40 * time.Second
	}
	if o.ActivationSlack <= 0 {
		o.ActivationSlack = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	k, err := newKit(target, &o)
	if err != nil {
		return nil, err
	}
	if o.Draft == 0 {
		o.Draft = k.discoverDraft(ctx)
	}
	start := o.Now()
	checks := suiteFor(o.Draft)
	rep := &Report{Draft: draftName(o.Draft), Target: k.origin.String(), Started: start.UnixMilli(), Results: make([]Result, len(checks))}
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for i, c := range checks {
		rep.Results[i].Check = c
		if !selected(c.ID, o.Only) {
			rep.Results[i].Verdict, rep.Results[i].Evidence = Skip, "not selected"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rep.Results[i] = k.run(ctx, c)
		}()
	}
	wg.Wait()
	rep.Millis = time.Since(start).Milliseconds()
	rep.OK = true
	for _, res := range rep.Results {
		if res.Level == MUST && res.Verdict == Fail {
			rep.OK = false
		}
	}
	return rep, nil
}

func selected(id string, only []string) bool {
	if len(only) == 0 {
		return true
	}
	for _, s := range only {
		if id == s || strings.HasPrefix(id, s+".") {
			return true
		}
	}
	return false
}

// T is the state of one running check. Its methods record the verdict:
// Fatalf fails the check and Skipf skips it, both ending the check's
// goroutine like testing.T's methods.
type T struct {
	k *kit
	// draft is the draft of the check's suite: the checks both suites
	// share sign that draft's events.
	draft    adp.Draft
	verdict  Verdict
	evidence string
	info     []string
	mu       sync.Mutex
}

// run runs one check in its own goroutine with a timeout.
func (k *kit) run(ctx context.Context, c Check) Result {
	ctx, cancel := context.WithTimeout(ctx, k.opts.Timeout)
	defer cancel()
	t := &T{k: k, verdict: Pass, draft: adp.DefaultDraft}
	if c.later {
		t.draft = later
	}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				t.verdict, t.evidence = Fail, fmt.Sprintf("the check panicked: %v", p)
			}
		}()
		c.run(ctx, t)
	}()
	<-done
	if t.verdict == Pass && ctx.Err() != nil {
		t.verdict, t.evidence = Fail, "the check did not finish within its timeout"
	}
	return Result{Check: c, Verdict: t.verdict, Evidence: t.evidence, Info: t.info, Millis: time.Since(start).Milliseconds()}
}

// attempt runs f as a part of the check that may be retried: f's Fatalf
// ends f, not the check, and its verdict and evidence are returned; its
// readings join the check's.
func (t *T) attempt(f func(*T)) (Verdict, string) {
	sub := &T{k: t.k, verdict: Pass, draft: t.draft}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				sub.verdict, sub.evidence = Fail, fmt.Sprintf("the check panicked: %v", p)
			}
		}()
		f(sub)
	}()
	<-done
	sub.mu.Lock()
	defer sub.mu.Unlock()
	t.mu.Lock()
	t.info = append(t.info, sub.info...)
	t.mu.Unlock()
	return sub.verdict, sub.evidence
}

// Fatalf fails the check with evidence and ends it.
func (t *T) Fatalf(format string, args ...any) {
	t.mu.Lock()
	t.verdict, t.evidence = Fail, fmt.Sprintf(format, args...)
	t.mu.Unlock()
	runtime.Goexit()
}

// Skipf skips the check with a reason and ends it.
func (t *T) Skipf(format string, args ...any) {
	t.mu.Lock()
	t.verdict, t.evidence = Skip, fmt.Sprintf(format, args...)
	t.mu.Unlock()
	runtime.Goexit()
}

// Infof records a reading: information, never a failure.
func (t *T) Infof(format string, args ...any) {
	t.mu.Lock()
	t.info = append(t.info, fmt.Sprintf(format, args...))
	t.mu.Unlock()
}

// ok fails the check when err is not nil: a step the check needs did not
// work.
func (t *T) ok(err error, what string) {
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// refused requires that the host refused a write or read (what) with the
// error code want; the HTTP status is a reading.
func (t *T) refused(err error, want identity.Code, what string) {
	e := t.refusal(err, what)
	if e.Code != want {
		t.Fatalf("%s: refused with %s, want %s", what, e.Code, want)
	}
}

// refusedAny requires a refusal whatever its code; the code and status are
// readings (the text fixes no code for it).
func (t *T) refusedAny(err error, what string) {
	t.refusal(err, what)
}

func (t *T) refusal(err error, what string) *identity.Error {
	if err == nil {
		t.Fatalf("%s: the host accepted it", what)
	}
	var e *identity.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: no protocol error from the host: %v", what, err)
	}
	if e.Status != 0 {
		t.Infof("%s: HTTP %d %s", what, e.Status, e.Code)
	} else {
		t.Infof("%s: %s", what, e.Code)
	}
	return e
}
