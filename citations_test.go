package agentprotocols

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// reviewCitation matches a reference to an earlier review or to a tracker
// item standing in place of the rule it enforces: a finding id (a letter
// C, D, F, G or R and a number up to 19), a "MUST" or "Spec" label on
// one, the word issue with a number, or a review named as the source. A
// comment, test name or message names the rule instead and cites the spec
// section or the upstream issue (owner/repo#N): review ids mean nothing to
// a reader of the code and go stale with the review that coined them. The
// pattern is spelled so that this file does not match it.
var reviewCitation = regexp.MustCompile(`\b[CDFGR](?:1[0-9]|[1-9])\b|\bMUST[ ]D\b|\bSpec[ ][AB]\b|(?i:\bissues?[ ]?#?[0-9]+|issue[0-9]+|adversarial[ ]review|review's[ ][A-Z]\b|review[ ]round|\bfinding[ ][A-Z][0-9])`)

// notACitation are the phrases reviewCitation matches that cite nothing:
// the names of the C1 control characters (ECMA-48).
var notACitation = regexp.MustCompile(`\bC0/C[1]\b|\bC[1][ ](?:control|CSI)`)

// mayCite is a quick filter in front of reviewCitation, whose word
// boundaries make the regexp package scan a line slowly: a line can cite
// only if it holds one of the letters of an id followed by a digit, or
// one of the words.
func mayCite(line []byte) bool {
	for i := 0; i+1 < len(line); i++ {
		switch line[i] {
		case 'C', 'D', 'F', 'G', 'R':
			if c := line[i+1]; '1' <= c && c <= '9' {
				return true
			}
		}
	}
	l := bytes.ToLower(line)
	for _, w := range []string{"issue", "review", "spec ", "must ", "finding"} {
		if bytes.Contains(l, []byte(w)) {
			return true
		}
	}
	return false
}

// reviewCitations returns each line of the Go files under root, and each
// Go file name, that cites a review finding or a tracker item.
func reviewCitations(t *testing.T, root string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if reviewCitation.MatchString(d.Name()) {
			hits = append(hits, rel+": the file's name")
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range bytes.Split(src, []byte("\n")) {
			if mayCite(line) && reviewCitation.Match(notACitation.ReplaceAll(line, nil)) {
				hits = append(hits, rel+":"+strconv.Itoa(i+1)+": "+strings.TrimSpace(string(line)))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// TestCommentsCiteRules: no Go file of the module (comments, test names,
// messages, file names) cites a review finding or a tracker item; each
// names the rule it enforces and its spec section or upstream issue.
func TestCommentsCiteRules(t *testing.T) {
	for _, h := range reviewCitations(t, ".") {
		t.Error(h)
	}
}

// TestReviewCitationsCaught: the check finds each form of citation, in a
// comment, a test name and a file name, and passes the rules' own words.
func TestReviewCitationsCaught(t *testing.T) {
	dir := t.TempDir()
	id := func(letter string, n int) string { return letter + strconv.Itoa(n) }
	files := map[string]string{
		"a.go":                 "package a\n\n// The lease (" + id("R", 1) + ") lapses.\nfunc A() {}\n",
		"b_test.go":            "package a\n\nfunc TestIssue" + "20(t *testing.T) {}\n",
		"c.go":                 "package a\n\n// The text is the truth (MUST " + id("D", 8) + ").\n",
		"d.go":                 "package a\n\n// See iss" + "ue 9 item 3.\n",
		"e.go":                 "package a\n\n// Escaped: C0/" + id("C", 1) + " controls, a " + id("C", 1) + " CSI; " + id("G", 14) + " is not.\n",
		"f.go":                 "package a\n\n// Cut off, as the advers" + "arial review asked.\n",
		"g.go":                 "package a\n\n// Upstream: modelcontextprotocol/go-sdk#976, §17.2, ECMA-48 " + id("C", 1) + " controls.\n",
		"iss" + "ue20_test.go": "package a\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hits := reviewCitations(t, dir)
	want := []string{"a.go:3:", "b_test.go:3:", "c.go:3:", "d.go:3:", "e.go:3:", "f.go:3:", "iss" + "ue20_test.go: the file's name"}
	if len(hits) != len(want) {
		t.Fatalf("found %d citations, want %d: %q", len(hits), len(want), hits)
	}
	for i, w := range want {
		if !strings.HasPrefix(hits[i], w) {
			t.Errorf("hit %d is %q, want %s…", i, hits[i], w)
		}
	}
}
